"""OffsetForLeaderEpoch, DeleteRecords and DescribeProducers: the data path's admin side,
with unknown topics and partitions, epochs, offsets out of range, compacted topics, open
transactions and ACLs."""

from __future__ import annotations

from typing import Any

from tests.conformance.cases.data_support import (
    DELETE,
    DELETE_RECORDS,
    DESCRIBE,
    DESCRIBE_PRODUCERS,
    OFFSET_FOR_LEADER_EPOCH,
    READ,
    TOPIC,
    add_partitions,
    batch,
    create_topic,
    end_transaction,
    grant,
    init_producer,
    produce_batch,
    revoking,
    transactional_produce,
    wait_stable,
)
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases


async def topic_with_records(s: Session, configs: dict[str, str] | None = None,
                             keys: bool = False) -> str:
    """A topic whose partition 0 holds offsets 0-2."""
    topic = s.name()
    await create_topic(s, topic, configs=configs)
    values = [b"a", b"b", b"c"]
    await produce_batch(s, topic, batch(values, keys=values if keys else None), record=False)
    return topic


# -- OffsetForLeaderEpoch (23) ----------------------------------------------------------------

def epoch_body(topic: str, leader_epoch: int, *, current: int = -1, partition: int = 0,
               replica_id: int = -1) -> dict[str, Any]:
    return {"replica_id": replica_id, "topics": [{"topic": topic, "partitions": [
        {"partition": partition, "current_leader_epoch": current,
         "leader_epoch": leader_epoch}]}]}


@cases("offset-for-leader-epoch/end-offset", [2, 3, 4], api=OFFSET_FOR_LEADER_EPOCH)
async def end_offset(s: Session, version: int) -> None:
    """The current epoch ends at the log end offset."""
    topic = await topic_with_records(s)
    await s.call(OFFSET_FOR_LEADER_EPOCH, version, epoch_body(topic, 0))


@cases("offset-for-leader-epoch/epoch", ["newer", "undefined"], api=OFFSET_FOR_LEADER_EPOCH)
async def other_epochs(s: Session, which: str) -> None:
    """An epoch newer than the log's, and -1: no end offset (-1, -1)."""
    topic = await topic_with_records(s)
    await s.call(OFFSET_FOR_LEADER_EPOCH, 4,
                 epoch_body(topic, 6 if which == "newer" else -1))


@case("offset-for-leader-epoch/version-1", api=OFFSET_FOR_LEADER_EPOCH)
async def ofle_version_1(s: Session) -> None:
    """v0-1 are below Kafka 4's minimum (KIP-896): the connection closes."""
    topic = await topic_with_records(s)
    await s.call(OFFSET_FOR_LEADER_EPOCH, 1, epoch_body(topic, 0))


@case("offset-for-leader-epoch/empty-partition", api=OFFSET_FOR_LEADER_EPOCH)
async def empty_partition(s: Session) -> None:
    topic = s.name()
    await create_topic(s, topic)
    await s.call(OFFSET_FOR_LEADER_EPOCH, 4, epoch_body(topic, 0))


@cases("offset-for-leader-epoch/current-leader-epoch", ["current", "ahead", "behind"],
       api=OFFSET_FOR_LEADER_EPOCH)
async def current_leader_epoch(s: Session, where: str) -> None:
    topic = await topic_with_records(s)
    current = {"current": 0, "ahead": 4, "behind": -2}[where]
    await s.call(OFFSET_FOR_LEADER_EPOCH, 4, epoch_body(topic, 0, current=current))


@case("offset-for-leader-epoch/unknown-topic", api=OFFSET_FOR_LEADER_EPOCH)
async def ofle_unknown_topic(s: Session) -> None:
    await s.call(OFFSET_FOR_LEADER_EPOCH, 4, epoch_body(s.name("missing"), 0))


@case("offset-for-leader-epoch/unknown-partition", api=OFFSET_FOR_LEADER_EPOCH)
async def ofle_unknown_partition(s: Session) -> None:
    topic = await topic_with_records(s)
    await s.call(OFFSET_FOR_LEADER_EPOCH, 4, epoch_body(topic, 0, partition=3))


@case("offset-for-leader-epoch/acl-denied", api=OFFSET_FOR_LEADER_EPOCH)
@revoking
async def ofle_acl_denied(s: Session) -> None:
    """alice without DESCRIBE: TOPIC_AUTHORIZATION_FAILED; with it, the end offset."""
    topic = await topic_with_records(s)
    await s.call(OFFSET_FOR_LEADER_EPOCH, 4, epoch_body(topic, 0), user="alice")
    await grant(s, TOPIC, topic, DESCRIBE)
    await s.call(OFFSET_FOR_LEADER_EPOCH, 4, epoch_body(topic, 0), user="alice",
                 label="with DESCRIBE")


@case("offset-for-leader-epoch/mixed-partitions", api=OFFSET_FOR_LEADER_EPOCH)
async def ofle_mixed_partitions(s: Session) -> None:
    """Known and unknown partitions in one request, each answered in request order."""
    topic = await topic_with_records(s)
    body = epoch_body(topic, 0)
    body["topics"][0]["partitions"] += [
        {"partition": 4, "current_leader_epoch": -1, "leader_epoch": 0},
        {"partition": 0, "current_leader_epoch": 9, "leader_epoch": 0}]
    await s.call(OFFSET_FOR_LEADER_EPOCH, 4, body)


@case("offset-for-leader-epoch/duplicate-partition", api=OFFSET_FOR_LEADER_EPOCH)
async def ofle_duplicate_partition(s: Session) -> None:
    topic = await topic_with_records(s)
    body = epoch_body(topic, 0)
    body["topics"][0]["partitions"].append(
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 5})
    await s.call(OFFSET_FOR_LEADER_EPOCH, 4, body)


@case("offset-for-leader-epoch/replica-as-alice", api=OFFSET_FOR_LEADER_EPOCH)
@revoking
async def ofle_replica_as_alice(s: Session) -> None:
    """A follower's request (replica id 1, v3+) needs CLUSTER_ACTION:
    CLUSTER_AUTHORIZATION_FAILED (31) for alice."""
    topic = await topic_with_records(s)
    await grant(s, TOPIC, topic, DESCRIBE)
    await s.call(OFFSET_FOR_LEADER_EPOCH, 4, epoch_body(topic, 0, replica_id=1), user="alice")


# -- DeleteRecords (21) -----------------------------------------------------------------------

def delete_body(topic: str, offset: int, partition: int = 0) -> dict[str, Any]:
    return {"topics": [{"name": topic, "partitions": [
        {"partition_index": partition, "offset": offset}]}], "timeout_ms": 10000}


@cases("delete-records/to-offset", [0, 1, 2], api=DELETE_RECORDS)
async def to_offset(s: Session, version: int) -> None:
    """The log start moves to the offset (the low watermark); lower offsets later change
    nothing."""
    topic = await topic_with_records(s)
    await s.call(DELETE_RECORDS, version, delete_body(topic, 2))
    await s.call(DELETE_RECORDS, version, delete_body(topic, 1), label="lower")


@case("delete-records/to-high-watermark", api=DELETE_RECORDS)
async def to_high_watermark(s: Session) -> None:
    """Offset -1: everything up to the high watermark; then exactly the high watermark."""
    topic = await topic_with_records(s)
    await s.call(DELETE_RECORDS, 2, delete_body(topic, -1))
    await s.call(DELETE_RECORDS, 2, delete_body(topic, 3), label="at the high watermark")


@cases("delete-records/out-of-range", ["above-high-watermark", "negative"],
       api=DELETE_RECORDS)
async def out_of_range(s: Session, which: str) -> None:
    """Above the high watermark, or below -1: OFFSET_OUT_OF_RANGE (1)."""
    topic = await topic_with_records(s)
    await s.call(DELETE_RECORDS, 2, delete_body(topic, 4 if which != "negative" else -5))


@case("delete-records/compacted-topic", api=DELETE_RECORDS)
async def compacted_topic(s: Session) -> None:
    """A compact-only topic refuses: POLICY_VIOLATION (44)."""
    topic = await topic_with_records(s, {"cleanup.policy": "compact"}, keys=True)
    await s.call(DELETE_RECORDS, 2, delete_body(topic, 1))


@case("delete-records/open-transaction", api=DELETE_RECORDS)
async def delete_open_transaction(s: Session) -> None:
    """Up to the high watermark, past an open transaction's first offset."""
    topic = await topic_with_records(s)
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    await transactional_produce(s, producer, topic, [b"t0", b"t1"], 0)
    await s.call(DELETE_RECORDS, 2, delete_body(topic, 4))


@case("delete-records/unknown-topic", api=DELETE_RECORDS)
async def delete_unknown_topic(s: Session) -> None:
    await s.call(DELETE_RECORDS, 2, delete_body(s.name("missing"), 0))


@case("delete-records/unknown-partition", api=DELETE_RECORDS)
async def delete_unknown_partition(s: Session) -> None:
    topic = await topic_with_records(s)
    await s.call(DELETE_RECORDS, 2, delete_body(topic, 0, partition=2))


@case("delete-records/acl", api=DELETE_RECORDS)
@revoking
async def delete_acl(s: Session) -> None:
    """alice needs DELETE on the topic: TOPIC_AUTHORIZATION_FAILED without it."""
    topic = await topic_with_records(s)
    await s.call(DELETE_RECORDS, 2, delete_body(topic, 1), user="alice")
    await grant(s, TOPIC, topic, DELETE)
    await s.call(DELETE_RECORDS, 2, delete_body(topic, 1), user="alice", label="with DELETE")


# -- DescribeProducers (61) -------------------------------------------------------------------

def producers_body(topic: str, partitions: list[int] | None = None) -> dict[str, Any]:
    return {"topics": [{"name": topic, "partition_indexes": partitions or [0]}]}


@case("describe-producers/idempotent", api=DESCRIBE_PRODUCERS)
async def idempotent(s: Session) -> None:
    """An idempotent producer's state: epoch, last sequence, no transaction."""
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s)
    await produce_batch(s, topic, batch([b"a", b"b"], producer=producer, sequence=0),
                        record=False)
    await produce_batch(s, topic, batch([b"c"], producer=producer, sequence=2), record=False)
    await s.call(DESCRIBE_PRODUCERS, 0, producers_body(topic))


@case("describe-producers/open-transaction", api=DESCRIBE_PRODUCERS)
async def producers_open_transaction(s: Session) -> None:
    """A transactional producer with an open transaction: its first offset."""
    topic = await topic_with_records(s)
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    await transactional_produce(s, producer, topic, [b"t0"], 0)
    await s.call(DESCRIBE_PRODUCERS, 0, producers_body(topic))


@case("describe-producers/after-abort", api=DESCRIBE_PRODUCERS)
async def producers_after_abort(s: Session) -> None:
    """After the abort marker: no open transaction, the coordinator epoch known."""
    topic = await topic_with_records(s)
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    await transactional_produce(s, producer, topic, [b"t0"], 0)
    await end_transaction(s, producer, commit=False)
    await wait_stable(s, topic, 5)
    await s.call(DESCRIBE_PRODUCERS, 0, producers_body(topic))


@case("delete-records/duplicate-partition", api=DELETE_RECORDS)
async def delete_duplicate_partition(s: Session) -> None:
    topic = await topic_with_records(s)
    body = delete_body(topic, 1)
    body["topics"][0]["partitions"].append({"partition_index": 0, "offset": 2})
    await s.call(DELETE_RECORDS, 2, body)


@case("describe-producers/none", api=DESCRIBE_PRODUCERS)
async def no_producers(s: Session) -> None:
    """Plain records leave no producer state."""
    topic = await topic_with_records(s)
    await s.call(DESCRIBE_PRODUCERS, 0, producers_body(topic))


@case("describe-producers/mixed-partitions", api=DESCRIBE_PRODUCERS)
async def producers_mixed_partitions(s: Session) -> None:
    topic = await topic_with_records(s)
    await s.call(DESCRIBE_PRODUCERS, 0, producers_body(topic, [0, 7]))


@case("describe-producers/duplicate-partition", api=DESCRIBE_PRODUCERS)
async def producers_duplicate_partition(s: Session) -> None:
    topic = await topic_with_records(s)
    await s.call(DESCRIBE_PRODUCERS, 0, producers_body(topic, [0, 0]))


@case("describe-producers/unknown-topic", api=DESCRIBE_PRODUCERS)
async def producers_unknown_topic(s: Session) -> None:
    await s.call(DESCRIBE_PRODUCERS, 0, producers_body(s.name("missing")))


@case("describe-producers/unknown-partition", api=DESCRIBE_PRODUCERS)
async def producers_unknown_partition(s: Session) -> None:
    topic = await topic_with_records(s)
    await s.call(DESCRIBE_PRODUCERS, 0, producers_body(topic, [5]))


@case("describe-producers/acl", api=DESCRIBE_PRODUCERS)
@revoking
async def producers_acl(s: Session) -> None:
    """alice needs READ on the topic: TOPIC_AUTHORIZATION_FAILED without it."""
    topic = await topic_with_records(s)
    await s.call(DESCRIBE_PRODUCERS, 0, producers_body(topic), user="alice")
    await grant(s, TOPIC, topic, READ)
    await s.call(DESCRIBE_PRODUCERS, 0, producers_body(topic), user="alice",
                 label="with READ")
