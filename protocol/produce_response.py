"""A ProduceResponse frame in a few struct packs, for the shape a broker answers most.

Why: a broker answers every Produce with the same small shape (one entry per partition, no
record errors, no leader hints), and the generic encode (a builder call per struct, a
dict lookup per field, a SpliceBuffer, the header codec) costs several times what the bytes
need. `produce_response_frame` writes that shape directly and answers None for anything
else (a version outside 3-12, record errors, a KIP-951 CurrentLeader or NodeEndpoints, an
extension registered on the response, a key strict mode refuses, any value the generic
builder might refuse), so the generic codec stays the one judge of everything unusual. The
fields and their defaults are the generated builder's (ProduceResponse.json): a test holds
the two byte-identical over every version and shape this accepts.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from kafka_protocol_codec import extensions, strict
from kafka_protocol_codec.api import api
from kafka_protocol_codec.schema import Message

PRODUCE = 0
FIRST_VERSION, LAST_VERSION = 3, 12  # 3: magic-2 batches; 12: the newest schema version
FLEXIBLE_FROM = 9  # compact strings and arrays, tagged fields, response header v1
LOG_START_FROM = 5  # log_start_offset
ERRORS_FROM = 8  # record_errors, error_message
LEADER_HINTS_FROM = 10  # KIP-951 tagged fields: CurrentLeader, NodeEndpoints

_SIZE_AND_CORRELATION = struct.Struct(">ii")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms
_PARTITION_WITH_START = struct.Struct(">ihqqq")  # ... and log_start_offset
_MAX_STRING = 0x7FFF  # Kafka's cap on every string (the generic builder refuses longer)
_NULL_COMPACT, _NULL_CLASSIC = b"\x00", b"\xff\xff"  # a null string
_EMPTY_COMPACT, _EMPTY_CLASSIC = b"\x01", b"\x00\x00\x00\x00"  # an empty array


def _uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def response_message(version: int) -> Message:
    """The ProduceResponse definition strict mode checks a body against."""
    return api(PRODUCE).response_codec(version).message


def produce_response_frame(version: int, correlation_id: int,
                           body: Mapping[str, Any]) -> bytearray | None:
    """The whole frame (size prefix, response header, body) of a ProduceResponse, or None
    when `body` is not the common shape (then encode it with `encode_response_into`)."""
    if not FIRST_VERSION <= version <= LAST_VERSION or extensions.any_registered(
            PRODUCE, "response"):
        return None
    try:
        if strict.enabled:  # its unknown keys are the generic encode's CodecError to raise
            strict.check(response_message(version), version, body)
        return _frame(version, correlation_id, body)
    except Exception:  # a value the generic builder judges (and words its CodecError)
        return None


def _frame(version: int, correlation_id: int, body: Mapping[str, Any]) -> bytearray | None:
    flexible = version >= FLEXIBLE_FROM
    hints = version >= LEADER_HINTS_FROM
    if hints and body.get("node_endpoints", []) != []:  # the builder's test for the tag
        return None
    errors = version >= ERRORS_FROM
    partition_struct = _PARTITION_WITH_START if version >= LOG_START_FROM else _PARTITION
    out = bytearray(_SIZE_AND_CORRELATION.pack(0, correlation_id))
    if flexible:
        out.append(0)  # response header v1: no tagged fields
    topics = body.get("responses", [])
    if flexible:
        _uvarint(out, len(topics) + 1)
    else:
        out += _I32.pack(len(topics))
    for topic in topics:
        name = topic.get("name", "").encode()
        if len(name) > _MAX_STRING:
            return None
        if flexible:
            _uvarint(out, len(name) + 1)
        else:
            out += _I16.pack(len(name))
        out += name
        partitions = topic.get("partition_responses", [])
        if flexible:
            _uvarint(out, len(partitions) + 1)
        else:
            out += _I32.pack(len(partitions))
        for p in partitions:
            get = p.get
            if partition_struct is _PARTITION:
                out += _PARTITION.pack(get("index", 0), get("error_code", 0),
                                       get("base_offset", 0), get("log_append_time_ms", -1))
            else:
                out += _PARTITION_WITH_START.pack(
                    get("index", 0), get("error_code", 0), get("base_offset", 0),
                    get("log_append_time_ms", -1), get("log_start_offset", -1))
            if not errors:
                continue
            record_errors = get("record_errors", [])
            if record_errors is None or len(record_errors):
                return None
            out += _EMPTY_COMPACT if flexible else _EMPTY_CLASSIC  # no record errors
            message = get("error_message", None)
            if message is None:
                out += _NULL_COMPACT if flexible else _NULL_CLASSIC
            else:
                data = message.encode()
                if len(data) > _MAX_STRING:
                    return None
                if flexible:
                    _uvarint(out, len(data) + 1)
                else:
                    out += _I16.pack(len(data))
                out += data
            if flexible:
                if hints and "current_leader" in p:
                    return None
                out.append(0)  # no tagged fields
        if flexible:
            out.append(0)
    out += _I32.pack(body.get("throttle_time_ms", 0))
    if flexible:
        out.append(0)
    _I32.pack_into(out, 0, len(out) - 4)
    return out
