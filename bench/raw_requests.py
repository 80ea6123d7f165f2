"""The raw requests of bench/throughput_broker.py, and reading their answers without the codec.

Requests are built once with the codec (kafka_protocol_codec) and then sent as bytes: a
Produce v7 request (acks=-1) of one record batch, whose records are the value size asked for,
batched up to BATCH_TARGET bytes as the Java producer's batch.size makes them; a Fetch v11
request split around its fetch offset, so a consumer patches in the next offset without
re-encoding; a DeleteRecords request that empties the topic between phases. Answers are read
with struct at the fixed positions of a one-topic, one-partition response (FrameSplitter
cuts them out of the socket's bytes), so the benchmark's clients cost little next to the
broker they measure. bench/produce_replay.py replays the same Produce request in-process.
"""

from __future__ import annotations

import os
import struct

BATCH_TARGET = 16384  # the Java producer's default batch.size
BATCH_OVERHEAD = 128  # a large record is this much smaller than its class: the batch fits
PARTITION_MAX_BYTES = 1 << 20
PRODUCE_VERSION = 7
FETCH_VERSION = 11
DELETE_RECORDS_VERSION = 1
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I64 = struct.Struct(">q")


# ------------------------------------------------------------------ requests


def records_per_batch(size: int) -> int:
    return max(1, BATCH_TARGET // size)


def build_record_batch(size: int) -> bytes:
    from kafka_protocol_codec.records import RecordSpec, build_batch

    value = os.urandom(size if size < BATCH_TARGET else size - BATCH_OVERHEAD)
    return build_batch([RecordSpec(value=value) for _ in range(records_per_batch(size))])


def framed(payload: bytes) -> bytes:
    return _I32.pack(len(payload)) + payload


def produce_request(topic: str, partition: int, batch: bytes) -> bytes:
    from kafka_protocol_codec import encode_request

    body = {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": batch}]}]}
    return framed(encode_request(0, PRODUCE_VERSION, body, correlation_id=1,
                                 client_id="bench-raw-producer"))


def fetch_request_parts(topic: str, partition: int) -> tuple[bytes, bytes]:
    """A Fetch v11 request as the bytes before and after its int64 fetch offset."""
    from kafka_protocol_codec import encode_request

    marker = 0x5A5A5A5A5A5A5A5A
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 50 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "current_leader_epoch": -1, "fetch_offset": marker,
                 "log_start_offset": -1, "partition_max_bytes": PARTITION_MAX_BYTES}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    payload = encode_request(1, FETCH_VERSION, body, correlation_id=2,
                             client_id="bench-raw-consumer")
    at = payload.index(_I64.pack(marker))
    head = payload[:at]
    return _I32.pack(len(payload)) + head, payload[at + 8:]


def delete_records_request(topic: str, partitions: int) -> bytes:
    from kafka_protocol_codec import encode_request

    body = {"topics": [{"name": topic, "partitions": [
        {"partition_index": p, "offset": -1} for p in range(partitions)]}],
        "timeout_ms": 10000}
    return framed(encode_request(21, DELETE_RECORDS_VERSION, body, correlation_id=3,
                                 client_id="bench-raw-admin"))


# ------------------------------------------------------------------ client side, sans codec


class FrameSplitter:
    """Whole response frames out of the bytes a socket delivers."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def frames(self) -> list[bytes]:
        out = []
        buf = self.buf
        pos = 0
        while len(buf) - pos >= 4:
            size = _I32.unpack_from(buf, pos)[0]
            if len(buf) - pos - 4 < size:
                break
            out.append(bytes(buf[pos + 4:pos + 4 + size]))
            pos += 4 + size
        if pos:
            del buf[:pos]
        return out


def produce_error(frame: bytes, topic_len: int) -> int:
    """The first partition's error code of a Produce v7 response (one topic, one partition):
    correlation id, topic count, topic name, partition count, partition index, error."""
    return int(_I16.unpack_from(frame, 4 + 4 + 2 + topic_len + 4 + 4)[0])


def parse_fetch(frame: bytes, topic_len: int) -> tuple[int, int, int, int, int]:
    """(error, high watermark, log start, records in whole batches, next offset or -1) of a
    Fetch v11 response with one topic and one partition."""
    pos = 4 + 4 + 2 + 4 + 4 + 2 + topic_len + 4 + 4  # to the partition's error code
    error = _I16.unpack_from(frame, pos)[0]
    hw = _I64.unpack_from(frame, pos + 2)[0]
    log_start = _I64.unpack_from(frame, pos + 18)[0]
    pos += 26
    aborted = _I32.unpack_from(frame, pos)[0]
    pos += 4 + max(aborted, 0) * 16 + 4  # aborted transactions, preferred read replica
    size = _I32.unpack_from(frame, pos)[0]
    pos += 4
    end = pos + max(size, 0)
    records = 0
    next_offset = -1
    while end - pos >= 61:
        base = _I64.unpack_from(frame, pos)[0]
        length = _I32.unpack_from(frame, pos + 8)[0]
        if pos + 12 + length > end:
            break  # a partial batch at the end of the answer
        records += _I32.unpack_from(frame, pos + 57)[0]
        next_offset = base + _I32.unpack_from(frame, pos + 23)[0] + 1
        pos += 12 + length
    return error, hw, log_start, records, next_offset
