"""The error-code table: spot checks, consistency, and agreement with kafka-python."""

from __future__ import annotations

import importlib
import inspect

import pytest
from kafka_protocol_codec.error_codes import ERRORS, ErrorCode, ErrorInfo, error_info

# Where kafka-python 3.0 still uses pre-2.x names, or (code 2) the pre-2.0 retriable flag.
# Our table follows the Kafka 4.0 protocol guide; any new disagreement fails the test below.
KAFKA_PYTHON_NAME_DIFFERENCES = {
    -1: "UNKNOWN",
    0: "NO_ERROR",
    6: "NOT_LEADER_FOR_PARTITION",
    10: "MESSAGE_SIZE_TOO_LARGE",
    17: "INVALID_TOPIC",
    39: "INVALID_REPLICATION_ASSIGNMENT",
}
KAFKA_PYTHON_RETRIABLE_DIFFERENCES = {2}  # CORRUPT_MESSAGE: retriable since Kafka 2.x


@pytest.mark.parametrize(
    ("code", "name", "retriable"),
    [
        (-1, "UNKNOWN_SERVER_ERROR", False),
        (0, "NONE", False),
        (1, "OFFSET_OUT_OF_RANGE", False),
        (2, "CORRUPT_MESSAGE", True),
        (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
        (6, "NOT_LEADER_OR_FOLLOWER", True),
        (7, "REQUEST_TIMED_OUT", True),
        (10, "MESSAGE_TOO_LARGE", False),
        (16, "NOT_COORDINATOR", True),
        (22, "ILLEGAL_GENERATION", False),
        (25, "UNKNOWN_MEMBER_ID", False),
        (27, "REBALANCE_IN_PROGRESS", False),
        (35, "UNSUPPORTED_VERSION", False),
        (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False),
        (47, "INVALID_PRODUCER_EPOCH", False),
        (51, "CONCURRENT_TRANSACTIONS", True),
        (74, "FENCED_LEADER_EPOCH", True),
        (75, "UNKNOWN_LEADER_EPOCH", True),
        (79, "MEMBER_ID_REQUIRED", False),
        (90, "PRODUCER_FENCED", False),
        (100, "UNKNOWN_TOPIC_ID", True),
        (129, "REBOOTSTRAP_REQUIRED", False),
        (133, "SHARE_SESSION_LIMIT_REACHED", True),
    ],
)
def test_known_codes(code: int, name: str, retriable: bool) -> None:
    assert ErrorCode[name] == code
    assert ERRORS[code] == ErrorInfo(name, code, retriable)
    assert error_info(code) is ERRORS[code]


def test_table_is_complete_and_consistent() -> None:
    codes = [member.value for member in ErrorCode]
    assert codes == list(range(-1, 134))  # no gaps from -1 to the highest known code
    names = [member.name for member in ErrorCode]
    assert len(set(names)) == len(names)
    assert set(ErrorCode.__members__) == set(names)  # no aliases
    assert set(ERRORS) == set(codes)
    for code, info in ERRORS.items():
        assert info.code == code
        assert info.name == ErrorCode(code).name
    assert ErrorCode.NONE == 0 and not ERRORS[0].retriable


def test_unknown_code() -> None:
    assert error_info(4242) == ErrorInfo("UNKNOWN_4242", 4242, False)
    assert error_info(-7) == ErrorInfo("UNKNOWN_-7", -7, False)


def test_agrees_with_kafka_python() -> None:
    errors = importlib.import_module("kafka.errors")
    theirs: dict[int, set[tuple[str, bool]]] = {}
    for _, cls in inspect.getmembers(errors, inspect.isclass):
        errno = getattr(cls, "errno", None)
        if issubclass(cls, errors.BrokerResponseError) and errno is not None:
            entry = (getattr(cls, "message", ""), bool(getattr(cls, "retriable", False)))
            theirs.setdefault(errno, set()).add(entry)
    compared = name_diffs = retriable_diffs = 0
    for code, variants in theirs.items():
        if code not in ERRORS:
            continue
        compared += 1
        ours = ERRORS[code]
        for name, retriable in variants:
            if name != ours.name:
                assert KAFKA_PYTHON_NAME_DIFFERENCES.get(code) == name, (code, name, ours)
                name_diffs += 1
            if retriable != ours.retriable:
                assert code in KAFKA_PYTHON_RETRIABLE_DIFFERENCES, (code, retriable, ours)
                retriable_diffs += 1
    assert compared >= 128  # kafka-python 3.0 knows -1..127
    assert name_diffs == len(KAFKA_PYTHON_NAME_DIFFERENCES)  # the exceptions are all still real
    assert retriable_diffs == len(KAFKA_PYTHON_RETRIABLE_DIFFERENCES)
