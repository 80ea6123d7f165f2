"""Produce: what Kafka's request validation and LogValidator accept and refuse, acks,
compression and LogAppendTime (producers with ids and ACLs: data_producers.py); accepted
batches are fetched back so the stored records are compared too."""

from __future__ import annotations

import struct
import zlib

from kafka_protocol_codec import Struct
from kafka_protocol_codec.records import Compression, RecordSpec, TimestampType, build_batch

from tests.conformance.cases.data_support import (
    FETCH,
    LIST_OFFSETS,
    PRODUCE,
    batch,
    create_topic,
    list_offsets_body,
    produce_batch,
)
from tests.conformance.harness import Session, now_ms, produce_body
from tests.conformance.registry import case, cases

VERSIONS = range(3, 13)
HOUR_MS = 3_600_000


async def fetch_all(s: Session, topic: str, label: str = "fetch back",
                    partition: int = 0) -> None:
    """Fetch v12 from offset 0 (recorded): the records as stored."""
    await s.call(FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [
            {"partition": partition, "current_leader_epoch": -1, "fetch_offset": 0,
             "last_fetched_epoch": -1, "log_start_offset": -1,
             "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""}, label=label)


async def end_offset(s: Session, topic: str, label: str = "end offset") -> None:
    await s.call(LIST_OFFSETS, 7, list_offsets_body(topic, -1), label=label)


def observe_sorted(s: Session, label: str, answer: Struct | None) -> None:
    """A Produce answer's partitions in (topic, partition) order: Kafka lists them in the
    order of a hash map, which clients do not rely on."""
    assert answer is not None
    s.observe(label, sorted(
        (t.name, p.index, p.error_code, p.base_offset, p.log_start_offset, p.error_message)
        for t in answer.responses for p in t.partition_responses))


# -- happy paths ------------------------------------------------------------------------------

@cases("produce/records", VERSIONS, api=PRODUCE)
async def records(s: Session, version: int) -> None:
    """Two batches with keys, values and headers at each version, then fetched back."""
    topic = s.name()
    await create_topic(s, topic)
    first = batch([b"v0", None, b""], keys=[b"k0", b"k1", None],
                  headers=[[("h", b"x")], [], [("n", None), ("h2", b"")]])
    await produce_batch(s, topic, first, version=version)
    await produce_batch(s, topic, batch([b"v3"]), version=version, label="second")
    await fetch_all(s, topic)


@cases("produce/acks", [1, -1], api=PRODUCE)
async def acks(s: Session, acks_value: int) -> None:
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"a", b"b"]), acks=acks_value)
    await end_offset(s, topic)


@case("produce/acks-zero", api=PRODUCE)
async def acks_zero(s: Session) -> None:
    """acks=0: no response at all; the next request on the connection is answered and the
    records are there."""
    topic = s.name()
    await create_topic(s, topic)
    raw = await s.connection()
    await raw.send(PRODUCE, 9, produce_body(topic, 0, batch([b"a", b"b", b"c"]), acks=0))
    await end_offset(s, topic, "after acks=0")
    await fetch_all(s, topic)


@case("produce/acks-zero-error", api=PRODUCE)
async def acks_zero_error(s: Session) -> None:
    """acks=0 to an unknown topic: Kafka closes the connection so the producer notices."""
    raw = await s.connection()
    await raw.send(PRODUCE, 9, produce_body(s.name("missing"), 0, batch([b"a"]), acks=0))
    s.observe("closed", await raw.is_closed(timeout=5.0))
    await s.reconnect()


@case("produce/acks-zero-denied", api=PRODUCE)
async def acks_zero_denied(s: Session) -> None:
    """acks=0 from alice without WRITE: the refusal closes the connection too."""
    topic = s.name()
    await create_topic(s, topic)
    raw = await s.connection("alice")
    await raw.send(PRODUCE, 9, produce_body(topic, 0, batch([b"a"]), acks=0))
    s.observe("closed", await raw.is_closed(timeout=5.0))
    await s.reconnect("alice")
    await end_offset(s, topic)


@case("produce/invalid-required-acks", api=PRODUCE)
async def invalid_acks(s: Session) -> None:
    """acks=2: INVALID_REQUIRED_ACKS (21) for every partition."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"a"]), acks=2)
    await end_offset(s, topic)


@case("produce/multiple-partitions", api=PRODUCE)
async def multiple_partitions(s: Session) -> None:
    """One request, three partitions of one topic and one of an unknown topic."""
    topic = s.name()
    await create_topic(s, topic, 3)
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [
            {"index": p, "records": batch([bytes([65 + p])] * (p + 1))} for p in (2, 0, 1)]},
        {"name": s.name("missing"), "partition_data": [{"index": 0, "records": batch([b"x"])}]},
    ]}
    observe_sorted(s, "produce", await s.call(PRODUCE, 9, body, record=False))


@case("produce/unknown-topic", api=PRODUCE)
async def unknown_topic(s: Session) -> None:
    await produce_batch(s, s.name("missing"), batch([b"a"]))


@case("produce/unknown-partition", api=PRODUCE)
async def unknown_partition(s: Session) -> None:
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"a"]), partition=7)


@case("produce/internal-topic", api=PRODUCE)
async def internal_topic(s: Session) -> None:
    """A client writing to __consumer_offsets: INVALID_TOPIC_EXCEPTION (17) (once the topic
    exists: FindCoordinator for a group creates it)."""
    await s.call(10, 4, {"key_type": 0, "coordinator_keys": [s.name("group")]}, record=False)
    await s.wait_leaders("__consumer_offsets", 5)
    await produce_batch(s, "__consumer_offsets", batch([b"a"]))


# -- LogValidator and request validation -------------------------------------------------------

def with_bad_crc(data: bytes) -> bytes:
    out = bytearray(data)
    out[-1] ^= 0xFF
    return bytes(out)


@case("produce/corrupt-crc", api=PRODUCE)
async def corrupt_crc(s: Session) -> None:
    """A record byte changed after the CRC was computed: CORRUPT_MESSAGE (2)."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, with_bad_crc(batch([b"hello", b"world"])))
    await end_offset(s, topic)


@cases("produce/truncated", ["header", "body"], api=PRODUCE)
async def truncated(s: Session, where: str) -> None:
    """A batch cut short, inside its header or its records."""
    topic = s.name()
    await create_topic(s, topic)
    data = batch([b"hello", b"world"])
    await produce_batch(s, topic, data[:40] if where == "header" else data[:-3])
    await end_offset(s, topic)


@case("produce/two-batches", api=PRODUCE)
async def two_batches(s: Session) -> None:
    """Two batches in one partition's records: Produce v3+ wants exactly one."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"a"]) + batch([b"b"]))
    await end_offset(s, topic)


@case("produce/no-records", api=PRODUCE)
async def no_records(s: Session) -> None:
    """Empty records: INVALID_RECORD. (Null records make Kafka 4.4 throw a
    NullPointerException while logging the request, and it never answers.)"""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, b"")


@case("produce/record-count-mismatch", api=PRODUCE)
async def record_count_mismatch(s: Session) -> None:
    """The header's record count says 3, the body holds 2: INVALID_RECORD (87)."""
    topic = s.name()
    await create_topic(s, topic)
    data = bytearray(batch([b"a", b"b"]))
    struct.pack_into(">i", data, 57, 3)
    await produce_batch(s, topic, restamp(bytes(data)))
    await end_offset(s, topic)


@case("produce/last-offset-delta-mismatch", api=PRODUCE)
async def last_offset_delta_mismatch(s: Session) -> None:
    """lastOffsetDelta + 1 != recordCount: INVALID_RECORD."""
    topic = s.name()
    await create_topic(s, topic)
    data = bytearray(batch([b"a", b"b"]))
    struct.pack_into(">i", data, 23, 5)
    await produce_batch(s, topic, restamp(bytes(data)))
    await end_offset(s, topic)


@case("produce/record-length-lie", api=PRODUCE)
async def record_length_lie(s: Session) -> None:
    """The first record's length varint says more than it holds (CRC recomputed):
    INVALID_RECORD from the record walk."""
    topic = s.name()
    await create_topic(s, topic)
    data = bytearray(batch([b"hello", b"world"]))
    data[61] += 2  # the first record's length (zigzag varint, one byte here)
    await produce_batch(s, topic, restamp(bytes(data)))
    await end_offset(s, topic)


@case("produce/corrupt-compressed-body", api=PRODUCE)
async def corrupt_compressed_body(s: Session) -> None:
    """The gzip flag over an uncompressed body: the body does not inflate."""
    topic = s.name()
    await create_topic(s, topic)
    data = bytearray(batch([b"plain", b"text"]))
    struct.pack_into(">h", data, 21, Compression.GZIP)
    await produce_batch(s, topic, restamp(bytes(data)))
    await end_offset(s, topic)


@case("produce/transactional-without-producer-id", api=PRODUCE)
async def transactional_without_producer_id(s: Session) -> None:
    """A transactional batch with producer id -1, in a request with a transactional id."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"a"], transactional=True),
                        transactional_id=s.name("txn"))
    await end_offset(s, topic)


@case("produce/empty-batch", api=PRODUCE)
async def empty_batch(s: Session) -> None:
    """A batch header claiming no records (count 0, last offset delta -1)."""
    topic = s.name()
    await create_topic(s, topic)
    data = bytearray(batch([b"a"]))
    struct.pack_into(">i", data, 23, -1)
    struct.pack_into(">i", data, 57, 0)
    await produce_batch(s, topic, restamp(bytes(data[:61])))
    await end_offset(s, topic)


@case("produce/max-timestamp-lie", api=PRODUCE)
async def max_timestamp_lie(s: Session) -> None:
    """A header maxTimestamp far above the records': the broker trusts the records."""
    topic = s.name()
    await create_topic(s, topic)
    base = now_ms() - 60_000
    specs = [RecordSpec(value=b"a", timestamp=base), RecordSpec(value=b"b", timestamp=base + 5)]
    data = bytearray(build_batch(specs, base_timestamp=base))
    struct.pack_into(">q", data, 35, base + 10**9)
    await produce_batch(s, topic, restamp(bytes(data)))
    await s.call(LIST_OFFSETS, 7, list_offsets_body(topic, -3), label="max timestamp")
    await s.call(LIST_OFFSETS, 7, list_offsets_body(topic, base + 10**8),
                 label="past the records")


@case("produce/non-zero-base-offset", api=PRODUCE)
async def non_zero_base_offset(s: Session) -> None:
    """A client batch must start at base offset 0."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"a"], base_offset=42))
    await end_offset(s, topic)


@case("produce/control-batch", api=PRODUCE)
async def control_batch(s: Session) -> None:
    """A client may not write a control batch: INVALID_RECORD."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"x"], control=True))
    await end_offset(s, topic)


def restamp(data: bytes) -> bytes:
    """Recompute the CRC-32C after editing a batch's header."""
    from kafka_protocol_codec.records import crc32c
    out = bytearray(data)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def legacy_message_set(magic: int, values: list[bytes]) -> bytes:
    """A message set of magic 0 or 1 messages (the pre-0.11 format)."""
    out = b""
    for offset, value in enumerate(values):
        body = struct.pack(">bb", magic, 0)
        if magic == 1:
            body += struct.pack(">q", now_ms())
        body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
        message = struct.pack(">I", zlib.crc32(body)) + body
        out += struct.pack(">qi", offset, len(message)) + message
    return out


@cases("produce/legacy-magic", [0, 1], api=PRODUCE)
async def legacy_magic(s: Session, magic: int) -> None:
    """Message format v0/v1 in Produce v3+: INVALID_RECORD."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, legacy_message_set(magic, [b"old", b"older"]))
    await end_offset(s, topic)


@case("produce/compacted-null-key", api=PRODUCE)
async def compacted_null_key(s: Session) -> None:
    """A compacted topic refuses records without a key: INVALID_RECORD with record errors
    naming each such record."""
    topic = s.name()
    await create_topic(s, topic, configs={"cleanup.policy": "compact"})
    await produce_batch(s, topic, batch([b"a", b"b", b"c"], keys=[None, b"k", None]))
    await produce_batch(s, topic, batch([b"d"], keys=[b"k"]), label="keyed")
    await fetch_all(s, topic)


@case("produce/message-too-large", api=PRODUCE)
async def message_too_large(s: Session) -> None:
    """A batch above the topic's max.message.bytes: MESSAGE_TOO_LARGE (10)."""
    topic = s.name()
    await create_topic(s, topic, configs={"max.message.bytes": "200"})
    await produce_batch(s, topic, batch([b"x" * 300]))
    await produce_batch(s, topic, batch([b"y" * 20]), label="small")
    await end_offset(s, topic)


@case("produce/record-list-too-large", api=PRODUCE)
async def record_list_too_large(s: Session) -> None:
    """A batch larger than the topic's segment.bytes (but within max.message.bytes):
    RECORD_LIST_TOO_LARGE (18), it could never fit a segment."""
    topic = s.name()
    await create_topic(s, topic, configs={"segment.bytes": str(1 << 20),
                                          "max.message.bytes": str(2 << 20)})
    await produce_batch(s, topic, batch([b"x" * (600 << 10), b"y" * (600 << 10)]))
    await end_offset(s, topic)


@case("produce/timestamp-before-max", api=PRODUCE)
async def timestamp_before_max(s: Session) -> None:
    """message.timestamp.before.max.ms of an hour: a record two hours old is
    INVALID_TIMESTAMP (32) with its batch index; a fresh one passes."""
    topic = s.name()
    await create_topic(s, topic, configs={"message.timestamp.before.max.ms": str(HOUR_MS)})
    old = now_ms() - 2 * HOUR_MS
    await produce_batch(s, topic, batch([b"old", b"older"], base_timestamp=old))
    await produce_batch(s, topic, batch([b"new"]), label="fresh")
    await end_offset(s, topic)


@case("produce/timestamps-some-too-old", api=PRODUCE)
async def timestamps_some_too_old(s: Session) -> None:
    """Only some records outside message.timestamp.before.max.ms: each is a record error,
    the whole batch is refused."""
    topic = s.name()
    await create_topic(s, topic, configs={"message.timestamp.before.max.ms": str(HOUR_MS)})
    fresh, old = now_ms(), now_ms() - 3 * HOUR_MS
    specs = [RecordSpec(value=b"%d" % i, timestamp=ts)
             for i, ts in enumerate((fresh, old, fresh, old))]
    await produce_batch(s, topic, build_batch(specs, base_timestamp=fresh))
    await end_offset(s, topic)


@cases("produce/negative-timestamp", [-1, -5], api=PRODUCE)
async def negative_timestamp(s: Session, timestamp: int) -> None:
    """A record timestamp of -1 (none) or -5 under message.timestamp.before.max.ms."""
    topic = s.name()
    await create_topic(s, topic, configs={"message.timestamp.before.max.ms": str(HOUR_MS)})
    await produce_batch(s, topic, batch([b"a"], base_timestamp=timestamp))
    await end_offset(s, topic)


@case("produce/producer-log-append-time", api=PRODUCE)
async def producer_log_append_time(s: Session) -> None:
    """A producer batch claiming LogAppendTime on a CreateTime topic."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"a"], timestamp_type=TimestampType.LOG_APPEND_TIME))
    await end_offset(s, topic)


@case("produce/log-append-time-topic", api=PRODUCE)
async def log_append_time_topic(s: Session) -> None:
    """message.timestamp.type=LogAppendTime: the response carries the append time."""
    topic = s.name()
    await create_topic(s, topic, configs={"message.timestamp.type": "LogAppendTime"})
    await produce_batch(s, topic, batch([b"a", b"b"], base_timestamp=12345))
    await fetch_all(s, topic)


@cases("produce/min-isr-above-replicas", [-1, 1], api=PRODUCE)
async def min_isr_above_replicas(s: Session, acks_value: int) -> None:
    """min.insync.replicas 2 with one replica: Kafka caps it at the replica count
    (Partition.effectiveMinIsr), so acks=all is written too."""
    topic = s.name()
    await create_topic(s, topic, configs={"min.insync.replicas": "2"})
    await produce_batch(s, topic, batch([b"a"]), acks=acks_value)
    await end_offset(s, topic)


# -- compression ------------------------------------------------------------------------------

CODECS = {"gzip": Compression.GZIP, "snappy": Compression.SNAPPY, "lz4": Compression.LZ4,
          "zstd": Compression.ZSTD}


@cases("produce/compression", sorted(CODECS), api=PRODUCE)
async def compression(s: Session, codec: str) -> None:
    topic = s.name()
    await create_topic(s, topic)
    values = [b"compressible " * 20, b"second", b""]
    await produce_batch(s, topic, batch(values, keys=[b"k", None, b"k3"],
                                        compression=CODECS[codec]))
    await fetch_all(s, topic)


@case("produce/zstd-before-v7", api=PRODUCE)
async def zstd_before_v7(s: Session) -> None:
    """zstd needs Produce v7: UNSUPPORTED_COMPRESSION_TYPE (76) at v6."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"a"], compression=Compression.ZSTD), version=6)
    await end_offset(s, topic)


@case("produce/unknown-compression-id", api=PRODUCE)
async def unknown_compression_id(s: Session) -> None:
    """Compression id 5 in the attributes."""
    topic = s.name()
    await create_topic(s, topic)
    data = bytearray(batch([b"a"]))
    struct.pack_into(">h", data, 21, 5)
    await produce_batch(s, topic, restamp(bytes(data)))
    await end_offset(s, topic)


@cases("produce/zstd-topic", [6, 7], api=PRODUCE)
async def zstd_topic(s: Session, version: int) -> None:
    """An uncompressed batch to a topic whose compression.type is zstd, below and at v7."""
    topic = s.name()
    await create_topic(s, topic, configs={"compression.type": "zstd"})
    await produce_batch(s, topic, batch([b"a"]), version=version)
    await fetch_all(s, topic)


@cases("produce/topic-compression", ["gzip", "producer", "uncompressed"], api=PRODUCE)
async def topic_compression(s: Session, policy: str) -> None:
    """The topic's compression.type recompresses (or keeps) the producer's batch; the
    records read back the same."""
    topic = s.name()
    await create_topic(s, topic, configs={"compression.type": policy})
    await produce_batch(s, topic, batch([b"one", b"two"], compression=Compression.LZ4))
    await fetch_all(s, topic)


@cases("produce/old-versions", [0, 2], api=PRODUCE)
async def old_versions(s: Session, version: int) -> None:
    """Produce v0-2 (message format v0/v1 only): still in Kafka 4's version table for old
    librdkafka (KAFKA-18659), refused when used."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, legacy_message_set(0 if version < 2 else 1, [b"old"]),
                        version=version)
    await end_offset(s, topic)
