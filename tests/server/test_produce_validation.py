"""Corrupt batches are refused over the wire, with Kafka's error codes, and never stored.

Black-box probes once found batches with a valid CRC but broken insides acknowledged with
error 0; a later ListOffsets by timestamp then closed the connection and consumers spun on
bad compression. Each batch here has its CRC-32C recomputed after the damage, so only the
broker's record validation (Kafka's LogValidator checks) can catch it. After every refusal
the partition still holds exactly the one good batch: ListOffsets by timestamp and Fetch
read it, and the connection stays open.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode as E
from kafka_protocol_codec.record_batches import compute_crc
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.embedded import MockCluster
from tests.support.admin import (
    LIST_OFFSETS,
    PRODUCE,
    create_topic,
    leader_client,
)
from tests.support.rawclient import RawClient, connect_broker

TOPIC = "validated"
FETCH = 1
GOOD_TIMESTAMP = 5_000
HEADER_SIZE = 61
ATTRIBUTES_AT, LENGTH_AT, COUNT_AT, CRC_AT = 21, 8, 57, 17


def good_batch(values: tuple[bytes, ...] = (b"one", b"two", b"three"),
               keys: tuple[bytes | None, ...] | None = None) -> bytearray:
    specs = [RecordSpec(key=None if keys is None else keys[i], value=v,
                        timestamp=GOOD_TIMESTAMP + i) for i, v in enumerate(values)]
    return bytearray(build_batch(specs))


def seal(batch: bytearray) -> bytes:
    """Fix the batch length and CRC-32C after an edit, as a careful attacker would."""
    struct.pack_into(">i", batch, LENGTH_AT, len(batch) - 12)
    struct.pack_into(">I", batch, CRC_AT, compute_crc(batch))
    return bytes(batch)


def trailing_bytes_inside(batch: bytearray) -> bytes:
    return seal(batch + b"\x00\x00\x00")


def record_length_lie(batch: bytearray) -> bytes:
    batch[HEADER_SIZE] += 2  # zigzag varint: the first record claims one byte more
    return seal(batch)


def gzip_flag_over_plain_data(batch: bytearray) -> bytes:
    batch[ATTRIBUTES_AT + 1] |= 1
    return seal(batch)


def compression_codec_7(batch: bytearray) -> bytes:
    batch[ATTRIBUTES_AT + 1] |= 7
    return seal(batch)


def record_count_lie(batch: bytearray) -> bytes:
    count = struct.unpack_from(">i", batch, COUNT_AT)[0]
    struct.pack_into(">i", batch, COUNT_AT, count + 1)
    return seal(batch)


def bytes_after_the_batch(batch: bytearray) -> bytes:
    return bytes(batch) + b"\x01\x02\x03"


CASES: dict[str, tuple[Callable[[bytearray], bytes], E]] = {
    "trailing-bytes-inside": (trailing_bytes_inside, E.INVALID_RECORD),
    "record-length-lie": (record_length_lie, E.INVALID_RECORD),
    "record-count-lie": (record_count_lie, E.INVALID_RECORD),
    "bytes-after-the-batch": (bytes_after_the_batch, E.INVALID_RECORD),
    # Kafka's broker answers these two with UNKNOWN_SERVER_ERROR: CompressionType.forId throws
    # for an unknown id, and a failing decompressor is wrapped in a plain KafkaException
    "gzip-flag-over-plain-data": (gzip_flag_over_plain_data, E.UNKNOWN_SERVER_ERROR),
    "compression-codec-7": (compression_codec_7, E.UNKNOWN_SERVER_ERROR),
}


async def produce_records(client: RawClient, records: bytes, topic: str = TOPIC,
                          version: int = 9) -> Struct:
    response = await client.request(PRODUCE, version, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]})
    return response.responses[0].partition_responses[0]


async def offset_for_timestamp(client: RawClient, timestamp: int) -> tuple[int, int]:
    response = await client.request(LIST_OFFSETS, 7, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}]}]})
    part = response.topics[0].partitions[0]
    assert part.error_code == E.NONE
    return part.offset, part.timestamp


async def fetch_values(client: RawClient) -> list[bytes | None]:
    response = await client.request(FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": TOPIC, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
             "last_fetched_epoch": -1, "log_start_offset": -1,
             "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    part = response.responses[0].partitions[0]
    assert part.error_code == E.NONE
    return [r.value for r in decode_batch(bytes(part.records)).records]


@pytest.mark.parametrize("case", list(CASES))
async def test_a_corrupt_batch_is_refused_and_not_stored(mc: MockCluster, case: str) -> None:
    damage, error = CASES[case]
    async with await connect_broker(mc, 0) as admin:
        await create_topic(admin, TOPIC, 1, 3)
    async with await leader_client(mc, TOPIC, 0) as client:
        good = await produce_records(client, bytes(good_batch()))
        assert (good.error_code, good.base_offset) == (E.NONE, 0)
        bad = await produce_records(client, damage(good_batch((b"bad", b"worse"))))
        assert bad.error_code == error, bad
        # Kafka words only per-record errors (record_errors) in error_message
        assert bad.base_offset == -1
        assert bool(bad.error_message) == bool(bad.record_errors)
        # nothing was stored: the log still holds the good batch only, and every reader
        # can parse it (ListOffsets by timestamp walks the records)
        assert await offset_for_timestamp(client, GOOD_TIMESTAMP + 1) == (1, GOOD_TIMESTAMP + 1)
        assert await fetch_values(client) == [b"one", b"two", b"three"]
        again = await produce_records(client, bytes(good_batch((b"four",))))
        assert (again.error_code, again.base_offset) == (E.NONE, 3)
        assert not await client.is_closed(timeout=0.1)


async def test_null_keys_on_a_compacted_topic_are_record_errors(mc: MockCluster) -> None:
    async with await connect_broker(mc, 0) as admin:
        await create_topic(admin, TOPIC, 1, 3, configs={"cleanup.policy": "compact"})
    async with await leader_client(mc, TOPIC, 0) as client:
        batch = bytes(good_batch((b"a", b"b", b"c"), keys=(b"k", None, None)))
        refused = await produce_records(client, batch)
        assert refused.error_code == E.INVALID_RECORD
        assert [(e.batch_index, "key" in e.batch_index_error_message.lower())
                for e in refused.record_errors] == [(1, True), (2, True)]
        assert refused.error_message
        keyed = bytes(good_batch((b"a", b"b"), keys=(b"k1", b"k2")))
        ok = await produce_records(client, keyed)
        assert (ok.error_code, ok.base_offset) == (E.NONE, 0)


async def test_zstd_needs_produce_v7(mc: MockCluster) -> None:
    async with await connect_broker(mc, 0) as admin:
        await create_topic(admin, TOPIC, 1, 3)
    batch = build_batch([RecordSpec(value=b"z" * 100)], compression=4)
    async with await leader_client(mc, TOPIC, 0) as client:
        old = await produce_records(client, batch, version=6)
        assert old.error_code == E.UNSUPPORTED_COMPRESSION_TYPE
        new = await produce_records(client, batch, version=7)
        assert (new.error_code, new.base_offset) == (E.NONE, 0)


@pytest.mark.parametrize("version", [0, 2])
async def test_produce_below_v3_closes_the_connection(mc: MockCluster, version: int) -> None:
    """Kafka 4 advertises Produce v0-2 for old librdkafka (KAFKA-18659) but cannot read
    them: the connection closes, nothing is written."""
    async with await connect_broker(mc, 0) as admin:
        await create_topic(admin, TOPIC, 1, 1)
    async with await leader_client(mc, TOPIC, 0) as client:
        await client.send(PRODUCE, version, {
            "acks": -1, "timeout_ms": 5000, "topic_data": [{"name": TOPIC, "partition_data": [
                {"index": 0, "records": bytes(good_batch())}]}]})
        assert await client.is_closed(timeout=5.0)
    async with await leader_client(mc, TOPIC, 0) as client:
        assert await offset_for_timestamp(client, 0) == (-1, -1)
