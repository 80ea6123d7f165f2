"""The compiled plain-Produce reader and writer (protocol/plain_produce.py) against the general
codec: on every request it accepts it reads exactly what decode_request reads, it accepts
every plain request, refuses every other, and its answers are byte-for-byte the general
encoder's for the same success answer."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_protocol_codec import plain_produce
from kafka_protocol_codec.api import decode_request, encode_request, encode_response_frame
from kafka_protocol_codec.framing import SIZE_PREFIX

parse = plain_produce.parse_plain_produce
encode = plain_produce.encode_plain_produce_response
pytestmark = pytest.mark.skipif(parse is None or encode is None,
                                reason="compiled plain Produce codec not built")

VERSIONS = st.integers(3, 11)
NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=12)
RECORDS = st.binary(min_size=0, max_size=40)
PARTITIONS = st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), RECORDS), min_size=0,
                      max_size=3)
TOPICS = st.lists(st.tuples(NAMES, PARTITIONS), min_size=0, max_size=3)


def request_body(transactional_id: str | None, acks: int, timeout: int,
                 topics: list[tuple[str, list[tuple[int, bytes]]]]) -> dict[str, Any]:
    return {"transactional_id": transactional_id, "acks": acks, "timeout_ms": timeout,
            "topic_data": [{"name": name, "partition_data": [
                {"index": index, "records": records} for index, records in parts]}
                for name, parts in topics]}


def is_plain(transactional_id: str | None, acks: int,
             topics: list[tuple[str, list[tuple[int, bytes]]]]) -> bool:
    # the transactional id does not matter: it is read past (each batch says what it is)
    return (acks in (1, -1) and bool(topics)
            and all(parts and all(records for _, records in parts) for _, parts in topics))


@settings(max_examples=400, deadline=None)
@given(VERSIONS, st.one_of(st.none(), NAMES), st.one_of(st.none(), NAMES),
       st.sampled_from([-1, 0, 1, 2]), st.integers(-(2**31), 2**31 - 1), TOPICS,
       st.integers(-(2**31), 2**31 - 1))
def test_reads_what_the_general_decoder_reads(version: int, client_id: str | None,
                                              transactional_id: str | None, acks: int,
                                              timeout: int, topics: Any,
                                              correlation_id: int) -> None:
    frame = encode_request(0, version, request_body(transactional_id, acks, timeout, topics),
                           correlation_id=correlation_id, client_id=client_id)
    parsed = parse(frame)  # type: ignore[misc]
    if not is_plain(transactional_id, acks, topics):
        assert parsed is None
        return
    assert parsed is not None
    general = decode_request(frame)
    got_version, got_correlation, got_client, got_acks, got_timeout, got_topics = parsed
    assert (got_version, got_correlation, got_client, got_acks, got_timeout) == (
        general.api_version, general.correlation_id, general.client_id,
        general.body["acks"], general.body["timeout_ms"])
    assert [(name, [(index, bytes(view)) for index, view in parts])
            for name, parts in got_topics] == [
        (t["name"], [(p["index"], bytes(p["records"])) for p in t["partition_data"]])
        for t in general.body["topic_data"]]


def test_version_12_reads_as_11() -> None:
    body = request_body(None, -1, 30000, [("orders", [(0, b"batch")])])
    frame = bytearray(encode_request(0, 11, body, correlation_id=7, client_id="c"))
    frame[3] = 12  # v12 has v11's layout (KIP-890's alias)
    parsed = parse(frame)  # type: ignore[misc]
    assert parsed is not None and parsed[0] == 12
    assert [(n, [(i, bytes(v)) for i, v in ps]) for n, ps in parsed[5]] == [
        ("orders", [(0, b"batch")])]


@pytest.mark.parametrize("version", [3, 8, 9, 11])
def test_transactional_id_read_past_and_refused_unless_utf8(version: int) -> None:
    body = request_body("txn-é", -1, 1000, [("t", [(0, b"x")])])
    frame = encode_request(0, version, body, correlation_id=5, client_id="c")
    parsed = parse(frame)  # type: ignore[misc]
    assert parsed is not None
    assert parsed[:5] == (version, 5, "c", -1, 1000)
    assert [(n, [(i, bytes(v)) for i, v in ps]) for n, ps in parsed[5]] == [("t", [(0, b"x")])]
    where = bytes(frame).index("txn-é".encode())
    broken = bytearray(frame)
    broken[where + 4] = 0xFF  # the first byte of the two-byte é: no longer UTF-8
    assert parse(bytes(broken)) is None  # type: ignore[misc]
    for cut in range(where, where + len("txn-é".encode())):
        assert parse(frame[:cut]) is None  # type: ignore[misc]  # cut inside the id


def test_refuses_what_is_not_plain() -> None:
    body = request_body(None, 1, 1000, [("t", [(0, b"x")])])
    good = encode_request(0, 9, body, correlation_id=1, client_id="c")
    assert parse(good) is not None  # type: ignore[misc]
    assert parse(good + b"\0") is None  # type: ignore[misc]  # bytes left over
    for cut in range(len(good)):
        assert parse(good[:cut]) is None  # type: ignore[misc]  # truncated anywhere
    tagged = bytearray(good)
    tagged[-1] = 1  # a request-level tagged field
    assert parse(bytes(tagged)) is None  # type: ignore[misc]
    fetch = bytearray(good)
    fetch[1] = 1  # another API
    assert parse(bytes(fetch)) is None  # type: ignore[misc]
    for version in (0, 1, 2, 13):
        old = bytearray(good)
        old[3] = version
        assert parse(bytes(old)) is None  # type: ignore[misc]


def _same_as_general(frame: bytes, parsed: Any) -> None:
    general = decode_request(frame)
    got_version, got_correlation, got_client, got_acks, got_timeout, got_topics = parsed
    assert (got_version, got_correlation, got_client, got_acks, got_timeout) == (
        general.api_version, general.correlation_id, general.client_id,
        general.body["acks"], general.body["timeout_ms"])
    assert [(name, [(index, bytes(view)) for index, view in parts])
            for name, parts in got_topics] == [
        (t["name"], [(p["index"], bytes(p["records"])) for p in t["partition_data"]])
        for t in general.body["topic_data"]]


MUTATIONS = st.lists(st.tuples(st.sampled_from(["set", "insert", "delete", "cut"]),
                               st.integers(0, 10**6), st.integers(0, 255)),
                     min_size=1, max_size=4)


@settings(max_examples=500, deadline=None)
@given(st.integers(3, 12), TOPICS, st.sampled_from([-1, 1]), MUTATIONS)
def test_mutated_frames_are_refused_or_read_as_the_general_decoder_reads(
        version: int, topics: Any, acks: int, mutations: list[tuple[str, int, int]]) -> None:
    """What a fuzzer sends: a Produce with bytes changed, added, removed or cut off (down to
    nothing). The plain reader never raises, and whatever it accepts the general decoder
    decodes to the same fields (the lane never takes what the general path would refuse)."""
    frame = bytearray(encode_request(0, version, request_body(None, acks, 1000, topics),
                                     correlation_id=3, client_id="c"))
    for kind, where, value in mutations:
        at = where % (len(frame) + 1)
        if kind == "set" and at < len(frame):
            frame[at] = value
        elif kind == "insert":
            frame[at:at] = bytes([value])
        elif kind == "delete" and at < len(frame):
            del frame[at]
        elif kind == "cut":
            del frame[at:]
    parsed = parse(frame)  # type: ignore[misc]
    if parsed is not None:
        _same_as_general(bytes(frame), parsed)


ANSWERS = st.lists(st.tuples(NAMES, st.lists(st.tuples(
    st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**63), 2**63 - 1)), min_size=0, max_size=3)), min_size=0, max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.integers(3, 12), st.integers(-(2**31), 2**31 - 1), ANSWERS)
def test_answers_as_the_general_encoder(version: int, correlation_id: int,
                                        topics: list[tuple[str, list[tuple[int, int, int]]]]
                                        ) -> None:
    body: dict[str, Any] = {"throttle_time_ms": 0, "responses": [
        {"name": name, "partition_responses": [
            {"index": index, "error_code": 0, "base_offset": base, "log_append_time_ms": -1,
             "log_start_offset": start, "record_errors": [], "error_message": None}
            for index, base, start in parts]} for name, parts in topics]}
    if version >= 10:
        body["node_endpoints"] = []
    expected = bytes(encode_response_frame(0, version, correlation_id, body))
    got = encode(version, correlation_id, topics)  # type: ignore[misc]
    assert got == expected
    assert int.from_bytes(got[:SIZE_PREFIX], "big") == len(got) - SIZE_PREFIX
