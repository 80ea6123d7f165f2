"""ListOffsets: earliest and latest at every version, offsets by timestamp, MAX_TIMESTAMP,
EARLIEST_LOCAL and LATEST_TIERED where the version has them, isolation levels with an open
transaction, the log start after DeleteRecords, unknown topics, leader epochs and ACLs."""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec.records import Compression, RecordSpec, build_batch

from tests.conformance.cases.data_support import (
    DELETE,
    DELETE_RECORDS,
    DESCRIBE,
    EARLIEST,
    EARLIEST_LOCAL,
    LATEST,
    LATEST_TIERED,
    LIST_OFFSETS,
    MAX_TIMESTAMP,
    READ,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    TOPIC,
    WRITE,
    add_partitions,
    batch,
    create_topic,
    grant,
    init_producer,
    list_offsets_body,
    produce_batch,
    revoking,
    transactional_produce,
)
from tests.conformance.harness import Session, now_ms
from tests.conformance.registry import case, cases

VERSIONS = range(1, 11)
MINUTE_MS = 60_000


async def list_offsets(s: Session, topic: str, timestamp: int, *, version: int = 7,
                       label: str | None = None, user: str | None = None,
                       **options: Any) -> None:
    await s.call(LIST_OFFSETS, version, list_offsets_body(topic, timestamp, **options),
                 label=label, user=user)


async def topic_with_timestamps(s: Session) -> tuple[str, int]:
    """Three batches ten minutes old, a second apart; the second batch's records out of
    timestamp order. Returns the topic and the first timestamp."""
    topic = s.name()
    await create_topic(s, topic)
    base = now_ms() - 10 * MINUTE_MS
    await produce_batch(s, topic, batch([b"a"], base_timestamp=base), record=False)
    mixed = build_batch([RecordSpec(value=b"b", timestamp=base + 1000),
                         RecordSpec(value=b"c", timestamp=base + 5000),
                         RecordSpec(value=b"d", timestamp=base + 1500)],
                        base_timestamp=base + 1000)
    await produce_batch(s, topic, mixed, record=False)
    await produce_batch(s, topic, batch([b"e"], base_timestamp=base + 2000), record=False)
    return topic, base


@cases("list-offsets/earliest-latest", VERSIONS, api=LIST_OFFSETS)
async def earliest_latest(s: Session, version: int) -> None:
    topic, _ = await topic_with_timestamps(s)
    await list_offsets(s, topic, EARLIEST, version=version, label="earliest")
    await list_offsets(s, topic, LATEST, version=version, label="latest")


@cases("list-offsets/empty-topic", [1, 7, 10], api=LIST_OFFSETS)
async def empty_topic(s: Session, version: int) -> None:
    topic = s.name()
    await create_topic(s, topic)
    await list_offsets(s, topic, EARLIEST, version=version, label="earliest")
    await list_offsets(s, topic, LATEST, version=version, label="latest")
    await list_offsets(s, topic, 0, version=version, label="timestamp 0")


@cases("list-offsets/by-timestamp", [1, 5, 10], api=LIST_OFFSETS)
async def by_timestamp(s: Session, version: int) -> None:
    """The first offset whose timestamp is at or after the one asked for (-1 past all)."""
    topic, base = await topic_with_timestamps(s)
    for label, timestamp in (("first", base), ("between", base + 200),
                             ("inside the out-of-order batch", base + 1200),
                             ("after the out-of-order maximum", base + 4000),
                             ("past everything", base + 60_000), ("zero", 0)):
        await list_offsets(s, topic, timestamp, version=version, label=label)


@cases("list-offsets/max-timestamp", [6, 7, 10], api=LIST_OFFSETS)
async def max_timestamp(s: Session, version: int) -> None:
    """MAX_TIMESTAMP (-3, KIP-734, v7+): the record with the largest timestamp."""
    topic, _ = await topic_with_timestamps(s)
    await list_offsets(s, topic, MAX_TIMESTAMP, version=version)


@case("list-offsets/max-timestamp-empty", api=LIST_OFFSETS)
async def max_timestamp_empty(s: Session) -> None:
    topic = s.name()
    await create_topic(s, topic)
    await list_offsets(s, topic, MAX_TIMESTAMP)


@cases("list-offsets/earliest-local", [7, 8, 10], api=LIST_OFFSETS)
async def earliest_local(s: Session, version: int) -> None:
    """EARLIEST_LOCAL (-4, KIP-405, v8+): without tiered storage, the log start."""
    topic, _ = await topic_with_timestamps(s)
    await list_offsets(s, topic, EARLIEST_LOCAL, version=version)


@cases("list-offsets/latest-tiered", [8, 9, 10], api=LIST_OFFSETS)
async def latest_tiered(s: Session, version: int) -> None:
    """LATEST_TIERED (-5, KIP-1005, v9+): nothing is tiered here."""
    topic, _ = await topic_with_timestamps(s)
    await list_offsets(s, topic, LATEST_TIERED, version=version)


@case("list-offsets/unknown-negative-timestamp", api=LIST_OFFSETS)
async def unknown_negative_timestamp(s: Session) -> None:
    topic, _ = await topic_with_timestamps(s)
    await list_offsets(s, topic, -7)


@cases("list-offsets/open-transaction", ["read_committed", "read_uncommitted"],
       api=LIST_OFFSETS)
async def open_transaction(s: Session, isolation: str) -> None:
    """Latest under read_committed is the last stable offset (the open transaction's
    first offset), under read_uncommitted the high watermark."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"before"]), record=False)
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    await transactional_produce(s, producer, topic, [b"open", b"still"], 0)
    level = READ_COMMITTED if isolation == "read_committed" else READ_UNCOMMITTED
    await list_offsets(s, topic, LATEST, isolation=level, label="latest")
    await list_offsets(s, topic, MAX_TIMESTAMP, isolation=level, label="max timestamp")
    await list_offsets(s, topic, 0, isolation=level, label="timestamp 0")


@case("list-offsets/after-delete-records", api=LIST_OFFSETS)
async def after_delete_records(s: Session) -> None:
    topic, base = await topic_with_timestamps(s)
    answer = await s.call(DELETE_RECORDS, 2, {"topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "offset": 2}]}], "timeout_ms": 10000}, record=False)
    assert answer is not None
    await list_offsets(s, topic, EARLIEST, label="earliest")
    await list_offsets(s, topic, base, label="a deleted record's timestamp")


@cases("list-offsets/unknown-topic", [1, 10], api=LIST_OFFSETS)
async def unknown_topic(s: Session, version: int) -> None:
    await list_offsets(s, s.name("missing"), LATEST, version=version)


@case("list-offsets/unknown-partition", api=LIST_OFFSETS)
async def unknown_partition(s: Session) -> None:
    topic = s.name()
    await create_topic(s, topic)
    await list_offsets(s, topic, LATEST, partition=4)


@case("list-offsets/duplicate-partition", api=LIST_OFFSETS)
async def duplicate_partition(s: Session) -> None:
    """The same partition twice: INVALID_REQUEST (42) for both."""
    topic = s.name()
    await create_topic(s, topic)
    body = list_offsets_body(topic, LATEST)
    body["topics"][0]["partitions"] *= 2
    await s.call(LIST_OFFSETS, 7, body)


@cases("list-offsets/leader-epoch", ["current", "ahead", "behind"], api=LIST_OFFSETS)
async def leader_epoch(s: Session, where: str) -> None:
    topic = s.name()
    await create_topic(s, topic)
    epoch = {"current": 0, "ahead": 3, "behind": -2}[where]
    await list_offsets(s, topic, LATEST, leader_epoch=epoch)


@case("list-offsets/acl-denied", api=LIST_OFFSETS)
async def acl_denied(s: Session) -> None:
    """alice without DESCRIBE: TOPIC_AUTHORIZATION_FAILED (29)."""
    topic = s.name()
    await create_topic(s, topic)
    await list_offsets(s, topic, LATEST, user="alice")


@case("list-offsets/acl-describe-granted", api=LIST_OFFSETS)
@revoking
async def acl_describe_granted(s: Session) -> None:
    topic = s.name()
    await create_topic(s, topic)
    await grant(s, TOPIC, topic, DESCRIBE)
    await list_offsets(s, topic, LATEST, user="alice")


@case("list-offsets/version-0", api=LIST_OFFSETS)
async def version_0(s: Session) -> None:
    """v0 is below both brokers' minimum (KIP-896): the connection closes."""
    topic = s.name()
    await create_topic(s, topic)
    await list_offsets(s, topic, LATEST, version=0)


@cases("list-offsets/log-append-time", ["by-timestamp", "max-timestamp"], api=LIST_OFFSETS)
async def log_append_time(s: Session, lookup: str) -> None:
    """A LogAppendTime topic indexes the append times, not the producer's."""
    topic = s.name()
    await create_topic(s, topic, configs={"message.timestamp.type": "LogAppendTime"})
    old = now_ms() - 60 * MINUTE_MS
    await produce_batch(s, topic, batch([b"a", b"b"], base_timestamp=old), record=False)
    await produce_batch(s, topic, batch([b"c", b"d"], base_timestamp=old), record=False)
    if lookup == "by-timestamp":
        await list_offsets(s, topic, old + MINUTE_MS, label="after the producer's time")
    else:
        await list_offsets(s, topic, MAX_TIMESTAMP)


@cases("list-offsets/acl-implied-describe", ["READ", "WRITE", "DELETE"], api=LIST_OFFSETS)
@revoking
async def acl_implied_describe(s: Session, operation: str) -> None:
    """READ, WRITE and DELETE each imply DESCRIBE (Kafka's ACL rules)."""
    topic = s.name()
    await create_topic(s, topic)
    await grant(s, TOPIC, topic, {"READ": READ, "WRITE": WRITE, "DELETE": DELETE}[operation])
    await list_offsets(s, topic, LATEST, user="alice")


@case("list-offsets/invalid-isolation-level", api=LIST_OFFSETS)
async def invalid_isolation_level(s: Session) -> None:
    topic, _ = await topic_with_timestamps(s)
    await list_offsets(s, topic, LATEST, isolation=2)


@cases("list-offsets/replica-id", [-2, 1], api=LIST_OFFSETS)
async def replica_id(s: Session, replica: int) -> None:
    """A debugging (-2) or follower (1) replica id with read_committed and a transaction
    open: what bounds latest."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"before"]), record=False)
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    await transactional_produce(s, producer, topic, [b"open"], 0)
    body = list_offsets_body(topic, LATEST, isolation=READ_COMMITTED)
    body["replica_id"] = replica
    await s.call(LIST_OFFSETS, 7, body)


@case("list-offsets/by-timestamp-compressed", api=LIST_OFFSETS)
async def by_timestamp_compressed(s: Session) -> None:
    """Inside a compressed batch: the record's own offset."""
    topic = s.name()
    await create_topic(s, topic)
    base = now_ms() - 10 * MINUTE_MS
    specs = [RecordSpec(value=b"%d" % i, timestamp=base + 100 * i) for i in range(4)]
    await produce_batch(s, topic, build_batch(specs, compression=Compression.LZ4),
                        record=False)
    await list_offsets(s, topic, base + 150)
    await list_offsets(s, topic, MAX_TIMESTAMP, label="max timestamp")
