"""Compiled decode plans (protocol/_decode_accel.pyx via accel.py) against the generated
Python readers: for every message at every version, both read the same objects, of the same
types, to the same position; on damaged input the plan either agrees or defers (None), and
defers whenever the Python reader fails.

Skipped when the extension is not built (``make accel``; ``make test`` builds it). The rest of
the suite (round trips, golden bytes, fuzzing) decodes through the plans whenever they exist.
"""

from __future__ import annotations

import random
import sys
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_protocol_codec import (
    accel,
    api,
    api_keys,
    codec_for,
    codec_runtime,
    metadata_record,
    structs,
)
from kafka_protocol_codec.codec_runtime import Struct
from kafka_protocol_codec.generated import headers
from kafka_protocol_codec.generated.metadata_records import METADATA_RECORDS
from kafka_protocol_codec.schema import Message

from .strategies import message_values, sample_value

pytestmark = pytest.mark.skipif(accel.native is None, reason="compiled decoder not built")

API_MESSAGES = [
    (message, version)
    for key in api_keys()
    for message in (api(key).request, api(key).response)
    for version in message.versions
]
OTHER_MESSAGES = [
    (message, version)
    for message in (headers.REQUEST_HEADER, headers.RESPONSE_HEADER)
    for version in message.versions
] + [(m, v) for m in map(metadata_record, sorted(METADATA_RECORDS)) for v in m.versions]


def _name(case: tuple[Message, int]) -> str:
    return f"{case[0].name}-v{case[1]}"


def same(a: Any, b: Any, path: str = "") -> None:
    """Equal values of identical types, all the way down (memoryviews by content)."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys in another order"
        for key in a:
            same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, memoryview):
        assert a.tobytes() == b.tobytes(), path
    else:
        assert a == b, path


def both(message: Message, version: int, data: bytes) -> Any:
    """Decode with the plan and with the generated reader; the plan must agree or defer."""
    codec = codec_for(message, version)
    assert codec._plan is not None
    planned = structs.read_plan(codec._plan, data, 0)
    try:
        value, pos = codec._read(data, 0)
        codec_runtime.rt_end_check(data, pos)
    except Exception:
        assert planned is None, "the plan accepted what the generated reader refuses"
        return None
    if planned is not None:
        same(planned[0], value)
        assert planned[1] == pos
        same(structs.decode_plan(codec._plan, data), value)  # Codec.decode's entry point
    else:
        assert structs.decode_plan(codec._plan, data) is None
    return planned


def encoded(message: Message, version: int, value: dict[str, Any]) -> bytes:
    return bytes(codec_for(message, version).encode(value))


def check_message(message: Message, version: int, value: dict[str, Any], seed: int) -> None:
    data = encoded(message, version, value)
    planned = both(message, version, data)
    assert planned is not None, "the plan deferred on the encoder's own output"
    assert isinstance(planned[0], Struct) and planned[1] == len(data)
    assert codec_for(message, version).decode(data) == value
    rnd = random.Random(seed)
    for _ in range(12):  # damaged copies: flips, cuts and insertions
        broken = bytearray(data)
        action = rnd.randrange(3)
        where = rnd.randrange(len(broken) + 1)
        if action == 0 and broken:
            broken[min(where, len(broken) - 1)] ^= 1 << rnd.randrange(8)
        elif action == 1:
            del broken[where:]
        else:
            broken[where:where] = rnd.randbytes(rnd.randrange(1, 4))
        both(message, version, bytes(broken))


@pytest.mark.parametrize("case", API_MESSAGES + OTHER_MESSAGES, ids=_name)
def test_every_message_reads_as_the_generated_reader_does(case: tuple[Message, int]) -> None:
    message, version = case
    check_message(message, version, sample_value(message, version), seed=version)
    check_message(message, version, sample_value(message, version, elements=0), seed=-version)


SOME = [case for i, case in enumerate(API_MESSAGES) if i % 7 == 0]


@pytest.mark.parametrize("case", SOME, ids=_name)
@settings(max_examples=5, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(data=st.data())
def test_generated_values(case: tuple[Message, int], data: st.DataObject) -> None:
    message, version = case
    value = data.draw(message_values(message, version))
    check_message(message, version, value, seed=data.draw(st.integers(0, 1 << 30)))


def test_edge_values_defer_or_agree() -> None:
    """Nulls, empty and long strings, multi-byte lengths, negative numbers, non-ASCII text."""
    metadata = api(3).response
    value = sample_value(metadata, 12)
    value["cluster_id"] = None
    value["brokers"][0]["host"] = "h\u00f6st-" + "x" * 300  # a two-byte compact length
    value["brokers"][0]["rack"] = None
    value["topics"][0]["partitions"] = [dict(value["topics"][0]["partitions"][0],
                                             leader_epoch=-1, replica_nodes=list(range(200)))]  # fmt: skip
    value["topics"][1]["topic_id"] = uuid.UUID(int=0)
    value["topics"][1]["name"] = None
    check_message(metadata, 12, value, seed=1)
    produce = api(0).request
    for version in (3, 8, 9, 12):
        if version in produce.versions:
            check_message(produce, version, sample_value(produce, version), seed=version)


def _plans(plan: Any) -> list[Any]:
    """A plan and every plan nested in it."""
    found = [plan]
    for op in [*plan.ops, *plan.tags.values()]:
        for inner in (op, op.element):
            if inner is not None and inner.plan is not None:
                found += _plans(inner.plan)
    return found


@pytest.mark.skipif(sys.version_info[:2] not in ((3, 11), (3, 12)),
                    reason="values go into dict entries directly on CPython 3.11 and 3.12 only")  # fmt: skip
def test_every_struct_with_members_fills_its_entries_directly() -> None:
    """On the CPython versions whose dict layout the plan knows, no struct falls back."""
    for message, version in API_MESSAGES + OTHER_MESSAGES:
        for plan in _plans(codec_for(message, version)._plan):
            assert plan.fills_entries == (len(plan.ops) > 0), f"{message.name} v{version}"


@pytest.mark.parametrize("case", SOME, ids=_name)
def test_structs_built_by_set_item_read_the_same(case: tuple[Message, int]) -> None:
    """The fallback that inserts each member (other CPython versions) reads the same."""
    message, version = case
    codec = codec_for(message, version)
    plan = accel.plan_for(codec.construct, fill_entries=False)
    assert not any(p.fills_entries for p in _plans(plan))
    for elements in (0, 2):
        data = encoded(message, version, sample_value(message, version, elements=elements))
        planned = structs.read_plan(plan, data, 0)
        assert planned is not None
        value, pos = codec._read(data, 0)
        same(planned[0], value)
        assert planned[1] == pos


def test_decoded_structs_give_back_every_reference() -> None:
    """Structs whose tables the plan fills itself hold their keys, values and the frame
    exactly once: decoding and dropping the result leaves every count as it was."""
    message = api(1).response  # Fetch: nested arrays, strings, records views of the frame
    codec = codec_for(message, 12)
    data = encoded(message, 12, sample_value(message, 12, elements=3))
    keys = sorted({op.key for plan in _plans(codec._plan) for op in plan.ops})
    codec.decode(data)  # anything made once (caches) is made before counting
    before = [sys.getrefcount(data)] + [sys.getrefcount(key) for key in keys]
    for _ in range(50):
        value = codec.decode(data)
        del value
    after = [sys.getrefcount(data)] + [sys.getrefcount(key) for key in keys]
    assert after == before


def test_records_views_are_slices_of_the_frame() -> None:
    """Records come back as views of the frame's bytes, like memoryview slicing gives."""
    message = api(0).request
    batches = [b"first batch", b"", b"third"]
    value = sample_value(message, 9)
    value["topic_data"] = [
        {"name": "t", "partition_data": [{"index": i, "records": batch}
                                         for i, batch in enumerate(batches)]}
    ]  # fmt: skip
    data = encoded(message, 9, value)
    decoded = codec_for(message, 9).decode(data)
    for i, batch in enumerate(batches):
        view = decoded["topic_data"][0]["partition_data"][i]["records"]
        start = data.index(batch, 1 if batch else 0) if batch else None
        assert type(view) is memoryview and view.obj is data and view.readonly
        assert (view.format, view.ndim, view.itemsize, view.c_contiguous) == ("B", 1, 1, True)
        assert view.tobytes() == batch and view.nbytes == len(batch) == view.shape[0]
        if start is not None:
            assert view == memoryview(data)[start : start + len(batch)]


def test_a_bytearray_frame_is_read_in_place() -> None:
    """A received frame is a bytearray (framing.FrameReader.get_buffer): the plan reads it
    without a copy, to the same values as its bytes, and its records are writable views of
    it, which the broker patches in place; the generated reader gets a bytes copy."""
    message = api(0).request
    value = sample_value(message, 9)
    value["topic_data"] = [{"name": "t", "partition_data": [
        {"index": 0, "records": b"batch bytes"}]}]
    data = bytearray(encoded(message, 9, value))
    codec = codec_for(message, 9)
    decoded = codec.decode(data)
    assert decoded == codec.decode(bytes(data))
    view = decoded["topic_data"][0]["partition_data"][0]["records"]
    assert view.obj is data and not view.readonly
    view[:5] = b"BATCH"
    assert b"BATCH bytes" in data
    reader = codec_runtime.Reader(data)
    found = structs.read_plan(codec._plan, reader.buf, 0)
    assert found is not None and found[1] == len(data)
    assert reader.buf is data  # kept, not copied, until a Python reader needs bytes
    assert type(reader.as_bytes()) is bytes and reader.buf == data


def test_invalid_utf8_and_long_varints_go_to_the_generated_reader() -> None:
    message = api(18).request  # ApiVersions: two compact strings in v3+
    good = encoded(message, 3, {"client_software_name": "ab", "client_software_version": "c"})
    bad_utf8 = good.replace(b"ab", b"\xff\xfe")
    assert both(message, 3, bad_utf8) is None
    long_varint = b"\x83\x80\x80\x80\x00ab" + good[3:]  # a 5-byte length: legal, deferred
    assert structs.read_plan(codec_for(message, 3)._plan, long_varint, 0) is None
    assert codec_for(message, 3).decode(long_varint) == codec_for(message, 3).decode(good)


def test_large_frames_are_received_into_unzeroed_buffers_of_their_size() -> None:
    """The extension makes the large frames' buffers (framing.new_frame_buffer): no zero fill,
    since the FrameReader receives every byte before handing a frame out."""
    from kafka_protocol_codec import framing

    assert framing.new_frame_buffer is accel.native.frame_buffer
    made = accel.native.frame_buffer(3 * framing.LARGE_FRAME)
    assert type(made) is bytearray and len(made) == 3 * framing.LARGE_FRAME
    assert accel.native.frame_buffer(0) == bytearray()
    with pytest.raises(ValueError):
        accel.native.frame_buffer(-1)
