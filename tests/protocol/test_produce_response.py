"""The ProduceResponse fast frame (protocol/produce_response.py) against the generic encode.

Every shape the fast frame accepts must give the generic codec's bytes exactly; every shape
it declines (None) is left to the generic encode, which stays the judge of errors.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from kafka_protocol_codec import (
    CodecError,
    api,
    encode_response_frame,
    extensions,
    metadata_record,
    register_extension,
    set_strict_encoding,
    strict_encoding,
)
from kafka_protocol_codec.produce_response import (
    FIRST_VERSION,
    LAST_VERSION,
    produce_response_frame,
)
from kafka_protocol_codec.schema import F

VERSIONS = range(FIRST_VERSION, LAST_VERSION + 1)


@pytest.fixture(params=[False, True], ids=["lenient", "strict"])
def strict_mode(request: pytest.FixtureRequest) -> Iterator[bool]:
    was = strict_encoding()
    set_strict_encoding(request.param)
    yield request.param
    set_strict_encoding(was)


def partition(index: int = 0, **fields: Any) -> dict[str, Any]:
    entry = {"index": index, "error_code": 0, "base_offset": 1234567890123,
             "log_append_time_ms": -1, "log_start_offset": 7, "record_errors": [],
             "error_message": None}
    entry.update(fields)
    return entry


def response(*topics: tuple[str, list[dict[str, Any]]], throttle: int = 0,
             **fields: Any) -> dict[str, Any]:
    body = {"responses": [{"name": n, "partition_responses": ps} for n, ps in topics],
            "throttle_time_ms": throttle}
    body.update(fields)
    return body


COMMON = [
    response(("t", [partition()])),
    response(("t", [partition()]), node_endpoints=[]),
    response(("t", [partition(3, error_code=6, base_offset=-1)]), throttle=250),
    response(("topic-é" * 20, [partition(i, base_offset=i * 1000) for i in range(140)])),
    response(*[(f"t{i}", [partition(i)]) for i in range(130)]),
    response(),
    response(("t", [])),
    response(("t", [partition(error_message="Broker 1 is shutting down")])),
    response(("t", [partition(error_message="x" * 300)])),
    response(("t", [{"index": 2}])),  # missing fields: the schema's defaults
    # one topic and one partition (one pack) around the 1-byte uvarint name length
    *[response(("n" * size, [partition(5)]), throttle=3) for size in (0, 126, 127, 200)],
    response(("t", [partition(record_errors=())])),
    response(("t", [partition(log_append_time_ms=1700000000000)])),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("body", COMMON)
def test_fast_frame_equals_generic(version: int, body: dict[str, Any],
                                   strict_mode: bool) -> None:
    fast = produce_response_frame(version, 42, body)
    assert fast is not None
    assert bytes(fast) == bytes(encode_response_frame(0, version, 42, body))


DECLINED = [
    response(("t", [partition(record_errors=[{"batch_index": 0,
                                              "batch_index_error_message": "bad"}])])),
    response(("t", [partition(record_errors=None)])),
    response(("t", [partition(current_leader={"leader_id": 2, "leader_epoch": 5})])),
    response(("t", [partition()]), node_endpoints=()),  # not [] : the builder writes the tag
    response(("t", [partition()]),
             node_endpoints=[{"node_id": 2, "host": "h", "port": 9092, "rack": None}]),
    response(("t", [partition(base_offset="1")])),
    response(("t", [partition(error_code=1 << 20)])),
    response((None, [partition()])),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("body", DECLINED)
def test_unusual_shapes_go_to_the_generic_encode(body: dict[str, Any]) -> None:
    """From the version that carries what makes them unusual (record errors from v8, leader
    hints from v10), these are left to the generic codec, which encodes or refuses them."""
    for version in range(10, LAST_VERSION + 1):
        assert produce_response_frame(version, 1, body) is None


def test_fields_a_version_lacks_do_not_matter() -> None:
    """Before v8 record errors are not on the wire, before v10 leader hints: as generic."""
    body = response(("t", [partition(record_errors=[{"batch_index": 0}],
                                     current_leader={"leader_id": 2, "leader_epoch": 5})]),
                    node_endpoints=[{"node_id": 2, "host": "h", "port": 1, "rack": None}])
    for version in range(FIRST_VERSION, 8):
        fast = produce_response_frame(version, 9, body)
        assert fast is not None
        assert bytes(fast) == bytes(encode_response_frame(0, version, 9, body))


def test_other_versions_are_declined() -> None:
    body = response(("t", [partition()]))
    assert produce_response_frame(2, 1, body) is None
    assert produce_response_frame(LAST_VERSION + 1, 1, body) is None


def test_a_key_strict_mode_refuses_is_left_to_the_generic_encode(strict_mode: bool) -> None:
    body = response(("t", [partition(base_offest=5)]))
    fast = produce_response_frame(7, 1, body)
    if strict_mode:
        assert fast is None
        with pytest.raises(CodecError):
            encode_response_frame(0, 7, 1, body)
    else:
        assert fast is not None and bytes(fast) == bytes(encode_response_frame(0, 7, 1, body))


def test_an_extension_on_the_response_is_left_to_the_generic_encode() -> None:
    """A registered tagged field is the generated builder's to write."""
    saved = {k: list(v) for k, v in extensions._REGISTRY.items()}
    body = response(("t", [partition()]))
    try:
        register_extension(0, "response", (), F("note", "string", (9, None), default="",
                                                tag=20000, tagged=(9, None)))
        assert produce_response_frame(9, 1, body) is None
        assert produce_response_frame(7, 1, body) is None
    finally:
        extensions._REGISTRY.clear()
        extensions._REGISTRY.update(saved)
        api.cache_clear()
        metadata_record.cache_clear()
    assert produce_response_frame(9, 1, body) is not None


def test_random_bodies_equal_generic() -> None:
    rng = random.Random(20251123)
    for _ in range(300):
        version = rng.choice(VERSIONS)
        topics = []
        for t in range(rng.randint(0, 3)):
            parts = [partition(rng.randint(0, 1 << 20), error_code=rng.choice((0, 6, 7, 19)),
                               base_offset=rng.randint(-1, 1 << 62),
                               log_append_time_ms=rng.choice((-1, rng.randint(0, 1 << 42))),
                               log_start_offset=rng.randint(-1, 1 << 40),
                               error_message=rng.choice((None, "", "why " * rng.randint(1, 50))))
                     for _ in range(rng.randint(0, 4))]
            topics.append((f"topic-{t}-" + "x" * rng.randint(0, 200), parts))
        body = response(*topics, throttle=rng.randint(0, 30000))
        fast = produce_response_frame(version, rng.randint(-(1 << 31), (1 << 31) - 1), body)
        assert fast is not None
        correlation_id = int.from_bytes(fast[4:8], "big", signed=True)
        assert bytes(fast) == bytes(encode_response_frame(0, version, correlation_id, body))
