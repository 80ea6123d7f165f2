"""Fetch: records back exactly at every version, offsets out of range, unknown topics and
ids, leader epochs, size limits, isolation levels with aborted and open transactions, fetch
sessions (full, incremental, unknown, wrong epoch, closed) and ACLs."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kafka_protocol_codec.records import Compression

from tests.conformance.cases.data_support import (
    DELETE_RECORDS,
    DESCRIBE,
    FETCH,
    READ,
    READ_COMMITTED,
    READ_UNCOMMITTED,
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

VERSIONS = range(4, 18)
TOPIC_IDS_FROM = 13


def partition_entry(partition: int = 0, offset: int = 0, *, epoch: int = -1,
                    partition_max_bytes: int = 1 << 20,
                    last_fetched_epoch: int = -1) -> dict[str, Any]:
    return {"partition": partition, "current_leader_epoch": epoch, "fetch_offset": offset,
            "last_fetched_epoch": last_fetched_epoch, "log_start_offset": -1,
            "partition_max_bytes": partition_max_bytes}


def fetch_body(topics: list[tuple[str, uuid.UUID | None, list[dict[str, Any]]]], *,
               isolation: int = READ_UNCOMMITTED, max_bytes: int = 1 << 20,
               session_id: int = 0, session_epoch: int = -1, min_bytes: int = 0,
               max_wait_ms: int = 0, forgotten: list[tuple[str, uuid.UUID | None, list[int]]]
               | None = None, replica_id: int = -1) -> dict[str, Any]:
    return {"replica_id": replica_id, "replica_state": {"replica_id": replica_id,
                                                        "replica_epoch": -1},
            "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": max_bytes, "isolation_level": isolation, "session_id": session_id,
            "session_epoch": session_epoch,
            "topics": [{"topic": name, "topic_id": topic_id or uuid.UUID(int=0),
                        "partitions": partitions} for name, topic_id, partitions in topics],
            "forgotten_topics_data": [
                {"topic": name, "topic_id": topic_id or uuid.UUID(int=0), "partitions": parts}
                for name, topic_id, parts in forgotten or []],
            "rack_id": ""}


async def fetch(s: Session, topic: str, offset: int = 0, *, version: int = 12,
                label: str | None = None, user: str | None = None, **options: Any) -> Any:
    """Fetch one partition of `topic` (by id from v13), recorded."""
    topic_id = await s.topic_id(topic) if version >= TOPIC_IDS_FROM else None
    entry_options = {k: options.pop(k) for k in ("epoch", "partition_max_bytes",
                                                 "last_fetched_epoch", "partition")
                     if k in options}
    body = fetch_body([(topic, topic_id, [partition_entry(offset=offset, **entry_options)])],
                      **options)
    return await s.call(FETCH, version, body, label=label, user=user)


async def topic_with_records(s: Session, partitions: int = 1) -> str:
    topic = s.name()
    await create_topic(s, topic, partitions)
    await produce_batch(s, topic, batch([b"v0", None], keys=[b"k0", b"k1"],
                                        headers=[[("h", b"1")], []]), record=False)
    await produce_batch(s, topic, batch([b"v2"], compression=Compression.GZIP), record=False)
    return topic


@cases("fetch/records", VERSIONS, api=FETCH)
async def records(s: Session, version: int) -> None:
    topic = await topic_with_records(s)
    await fetch(s, topic, version=version)
    await fetch(s, topic, 2, version=version, label="from offset 2")


@case("fetch/middle-of-batch", api=FETCH)
async def middle_of_batch(s: Session) -> None:
    """An offset inside a batch: the whole batch comes back."""
    topic = await topic_with_records(s)
    await fetch(s, topic, 1)


@cases("fetch/offset", ["end", "past-end", "negative"], api=FETCH)
async def offset_bounds(s: Session, where: str) -> None:
    """At the high watermark: nothing; past it or below the log start: OFFSET_OUT_OF_RANGE."""
    topic = await topic_with_records(s)
    await fetch(s, topic, {"end": 3, "past-end": 10, "negative": -5}[where])


@case("fetch/below-log-start", api=FETCH)
async def below_log_start(s: Session) -> None:
    """After DeleteRecords moved the log start to 2, offset 0 is out of range."""
    topic = await topic_with_records(s)
    answer = await s.call(DELETE_RECORDS, 2, {"topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "offset": 2}]}], "timeout_ms": 10000}, record=False)
    assert answer is not None
    await fetch(s, topic, 0)
    await fetch(s, topic, 2, label="at the log start")


@cases("fetch/unknown-topic", [4, 12], api=FETCH)
async def unknown_topic(s: Session, version: int) -> None:
    body = fetch_body([(s.name("missing"), None, [partition_entry()])])
    await s.call(FETCH, version, body)


@cases("fetch/unknown-topic-id", [13, 17], api=FETCH)
async def unknown_topic_id(s: Session, version: int) -> None:
    """v13+: UNKNOWN_TOPIC_ID (100) for an id no topic has."""
    body = fetch_body([("", uuid.UUID(int=0xC0FFEE), [partition_entry()])])
    await s.call(FETCH, version, body)


@case("fetch/zero-topic-id", api=FETCH)
async def zero_topic_id(s: Session) -> None:
    """v13 with the zero topic id (a name-only client's mistake)."""
    body = fetch_body([(s.name("missing"), None, [partition_entry()])])
    await s.call(FETCH, 13, body)


@cases("fetch/unknown-partition", [12, 17], api=FETCH)
async def unknown_partition(s: Session, version: int) -> None:
    topic = await topic_with_records(s)
    await fetch(s, topic, version=version, partition=9)


@cases("fetch/leader-epoch", ["current", "ahead", "behind"], api=FETCH)
async def leader_epoch(s: Session, where: str) -> None:
    """current_leader_epoch: the leader's (0) reads, a newer one is UNKNOWN_LEADER_EPOCH
    (75), an older one FENCED_LEADER_EPOCH (74)."""
    topic = await topic_with_records(s)
    await fetch(s, topic, epoch={"current": 0, "ahead": 7, "behind": -2}[where])


@cases("fetch/last-fetched-epoch", [0, 3], api=FETCH)
async def last_fetched_epoch(s: Session, epoch: int) -> None:
    """A consumer's last fetched epoch (v12+): diverging epochs are the leader's to say."""
    topic = await topic_with_records(s)
    await fetch(s, topic, 2, last_fetched_epoch=epoch)


@case("fetch/partition-max-bytes", api=FETCH)
async def partition_max_bytes(s: Session) -> None:
    """A partition limit smaller than the first batch still returns that batch whole."""
    topic = await topic_with_records(s)
    await fetch(s, topic, partition_max_bytes=10)


@case("fetch/max-bytes", api=FETCH)
async def max_bytes(s: Session) -> None:
    """The response limit: the first partition gets its first batch, the next nothing."""
    topic = await topic_with_records(s, 2)
    await produce_batch(s, topic, batch([b"p1"]), partition=1, record=False)
    body = fetch_body([(topic, None, [partition_entry(0), partition_entry(1)])], max_bytes=10)
    await s.call(FETCH, 12, body)


@case("fetch/min-bytes-wait", api=FETCH)
async def min_bytes_wait(s: Session) -> None:
    """min_bytes above what there is: the answer after max_wait_ms holds what there is."""
    topic = await topic_with_records(s)
    await fetch(s, topic, 0, min_bytes=1 << 20, max_wait_ms=200)


async def aborted_then_committed(s: Session, topic: str) -> None:
    """Offsets 0-1 an aborted transaction, 2 its marker, 3 a plain record, 4 a committed
    transaction's record and 5 its marker."""
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    await transactional_produce(s, producer, topic, [b"a0", b"a1"], 0)
    await end_transaction(s, producer, commit=False)
    await wait_stable(s, topic, 3)
    await produce_batch(s, topic, batch([b"plain"]), record=False)
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    await transactional_produce(s, producer, topic, [b"c0"], 0)
    await end_transaction(s, producer, commit=True)
    await wait_stable(s, topic, 6)


@cases("fetch/aborted-transaction", ["read_committed", "read_uncommitted"], api=FETCH)
async def aborted_transaction(s: Session, isolation: str) -> None:
    """read_committed lists the aborted transaction (the client drops its records);
    read_uncommitted does not."""
    topic = s.name()
    await create_topic(s, topic)
    await aborted_then_committed(s, topic)
    level = READ_COMMITTED if isolation == "read_committed" else READ_UNCOMMITTED
    await fetch(s, topic, isolation=level)
    await fetch(s, topic, 3, isolation=level, label="after the abort")


@cases("fetch/open-transaction", ["read_committed", "read_uncommitted"], api=FETCH)
async def open_transaction(s: Session, isolation: str) -> None:
    """An open transaction: read_committed stops at the last stable offset."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"before"]), record=False)
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    await transactional_produce(s, producer, topic, [b"open"], 0)
    await produce_batch(s, topic, batch([b"after"]), record=False)
    level = READ_COMMITTED if isolation == "read_committed" else READ_UNCOMMITTED
    await fetch(s, topic, isolation=level)


# -- fetch sessions ---------------------------------------------------------------------------

async def open_session(s: Session, topic: str) -> int:
    """A full fetch that creates a session (recorded); returns its id."""
    body = fetch_body([(topic, None, [partition_entry()])], session_id=0, session_epoch=0)
    answer = await s.call(FETCH, 12, body, label="full fetch, new session")
    assert answer is not None
    return int(answer.session_id)


@case("fetch/session-incremental", api=FETCH)
async def session_incremental(s: Session) -> None:
    """A session: unchanged partitions are left out of incremental answers, new records
    bring them back."""
    topic = await topic_with_records(s)
    session = await open_session(s, topic)
    body = fetch_body([], session_id=session, session_epoch=1)
    await s.call(FETCH, 12, body, label="incremental, nothing new")
    await produce_batch(s, topic, batch([b"new"]), record=False)
    body = fetch_body([(topic, None, [partition_entry(offset=3)])], session_id=session,
                      session_epoch=2)
    await s.call(FETCH, 12, body, label="incremental, new records")
    body = fetch_body([], session_id=session, session_epoch=3)
    await s.call(FETCH, 12, body, label="incremental, caught up")


@case("fetch/session-forget", api=FETCH)
async def session_forget(s: Session) -> None:
    """Forgotten partitions leave the session."""
    topic = await topic_with_records(s, 2)
    body = fetch_body([(topic, None, [partition_entry(0), partition_entry(1)])],
                      session_id=0, session_epoch=0)
    answer = await s.call(FETCH, 12, body, label="full, two partitions")
    assert answer is not None
    session = int(answer.session_id)
    await produce_batch(s, topic, batch([b"x"]), partition=1, record=False)
    await produce_batch(s, topic, batch([b"y"]), partition=0, record=False)
    body = fetch_body([], session_id=session, session_epoch=1, forgotten=[(topic, None, [1])])
    await s.call(FETCH, 12, body, label="forget partition 1")


@case("fetch/session-unknown-id", api=FETCH)
async def session_unknown_id(s: Session) -> None:
    """An incremental fetch on a session that does not exist: FETCH_SESSION_ID_NOT_FOUND
    (70)."""
    topic = await topic_with_records(s)
    body = fetch_body([(topic, None, [partition_entry()])], session_id=123456789,
                      session_epoch=1)
    await s.call(FETCH, 12, body)


@cases("fetch/session-wrong-epoch", [0, 5], api=FETCH)
async def session_wrong_epoch(s: Session, epoch: int) -> None:
    """The next epoch is 1: anything else is INVALID_FETCH_SESSION_EPOCH (71)."""
    topic = await topic_with_records(s)
    session = await open_session(s, topic)
    body = fetch_body([], session_id=session, session_epoch=epoch)
    await s.call(FETCH, 12, body, label=f"epoch {epoch}")


@case("fetch/sessionless-with-epoch", api=FETCH)
async def sessionless_with_epoch(s: Session) -> None:
    """No session id but an epoch other than 0 / -1."""
    topic = await topic_with_records(s)
    body = fetch_body([(topic, None, [partition_entry()])], session_id=0, session_epoch=4)
    await s.call(FETCH, 12, body)


@case("fetch/session-close", api=FETCH)
async def session_close(s: Session) -> None:
    """Epoch -1 on a session closes it (a sessionless answer); it is then unknown."""
    topic = await topic_with_records(s)
    session = await open_session(s, topic)
    body = fetch_body([(topic, None, [partition_entry()])], session_id=session,
                      session_epoch=-1)
    await s.call(FETCH, 12, body, label="close")
    body = fetch_body([], session_id=session, session_epoch=1)
    await s.call(FETCH, 12, body, label="after close")


@case("fetch/sessionless", api=FETCH)
async def sessionless(s: Session) -> None:
    topic = await topic_with_records(s)
    body = fetch_body([(topic, None, [partition_entry()])], session_id=0, session_epoch=-1)
    await s.call(FETCH, 12, body)


# -- authorization ----------------------------------------------------------------------------

@cases("fetch/acl-denied", [12, 13], api=FETCH)
async def acl_denied(s: Session, version: int) -> None:
    """alice without READ: TOPIC_AUTHORIZATION_FAILED (29)."""
    topic = await topic_with_records(s)
    await fetch(s, topic, version=version, user="alice")


@case("fetch/acl-unknown-topic-id", api=FETCH)
async def acl_unknown_topic_id(s: Session) -> None:
    """An unknown topic id as alice: UNKNOWN_TOPIC_ID, as for anyone."""
    body = fetch_body([("", uuid.UUID(int=0xBEEF), [partition_entry()])])
    await s.call(FETCH, 13, body, user="alice")


@case("fetch/acl-read-granted", api=FETCH)
@revoking
async def acl_read_granted(s: Session) -> None:
    topic = await topic_with_records(s)
    await grant(s, TOPIC, topic, READ)
    await fetch(s, topic, user="alice")


@case("fetch/follower-replica-id", api=FETCH)
async def follower_replica_id(s: Session) -> None:
    """A replica id that is no replica of the partition (v12, ReplicaId field)."""
    topic = await topic_with_records(s)
    await fetch(s, topic, replica_id=5)


@case("fetch/session-topic-id-switch", api=FETCH)
async def session_topic_id_switch(s: Session) -> None:
    """A session opened by names (v12) continued by ids (v13): FETCH_SESSION_TOPIC_ID_ERROR
    (106)."""
    topic = await topic_with_records(s)
    session = await open_session(s, topic)
    body = fetch_body([], session_id=session, session_epoch=1)
    await s.call(FETCH, 13, body, label="v13 on a v12 session")


@case("fetch/session-reopen", api=FETCH)
async def session_reopen(s: Session) -> None:
    """Epoch 0 on an existing session id: a new full session replaces it."""
    topic = await topic_with_records(s)
    session = await open_session(s, topic)
    body = fetch_body([(topic, None, [partition_entry(offset=2)])], session_id=session,
                      session_epoch=0)
    answer = await s.call(FETCH, 12, body, label="reopen")
    assert answer is not None
    body = fetch_body([], session_id=session, session_epoch=1)
    await s.call(FETCH, 12, body, label="the old session")


@cases("fetch/zero-limits", ["partition", "response"], api=FETCH)
async def zero_limits(s: Session, which: str) -> None:
    """A limit of 0 bytes (the partition's or the response's)."""
    topic = await topic_with_records(s)
    if which == "partition":
        await fetch(s, topic, partition_max_bytes=0)
    else:
        await fetch(s, topic, max_bytes=0)


@case("fetch/acl-describe-only", api=FETCH)
@revoking
async def acl_describe_only(s: Session) -> None:
    """DESCRIBE does not imply READ: still TOPIC_AUTHORIZATION_FAILED."""
    topic = await topic_with_records(s)
    await grant(s, TOPIC, topic, DESCRIBE)
    await fetch(s, topic, user="alice")


@case("fetch/long-poll-wakes-on-produce", api=FETCH)
async def long_poll_wakes_on_produce(s: Session) -> None:
    """A fetch waiting for min_bytes (max_wait 10 s) answers as soon as a produce on another
    connection brings records."""
    topic = s.name()
    await create_topic(s, topic)

    async def produce_later() -> None:
        await asyncio.sleep(0.2)
        await produce_batch(s, topic, batch([b"late"]), record=False, user="admin")
    waiting = fetch(s, topic, 0, min_bytes=1, max_wait_ms=10_000)
    await asyncio.gather(waiting, produce_later())


@case("fetch/aborted-from-middle", api=FETCH)
async def aborted_from_middle(s: Session) -> None:
    """read_committed from inside the aborted transaction and from its marker."""
    topic = s.name()
    await create_topic(s, topic)
    await aborted_then_committed(s, topic)
    await fetch(s, topic, 1, isolation=READ_COMMITTED, label="inside")
    await fetch(s, topic, 2, isolation=READ_COMMITTED, label="at the marker")


@case("fetch/session-log-start-change", api=FETCH)
async def session_log_start_change(s: Session) -> None:
    """An incremental fetch brings back a partition whose log start moved."""
    topic = await topic_with_records(s)
    body = fetch_body([(topic, None, [partition_entry(offset=3)])], session_id=0,
                      session_epoch=0)
    answer = await s.call(FETCH, 12, body, label="full, at the end")
    assert answer is not None
    session = int(answer.session_id)
    deleted = await s.call(DELETE_RECORDS, 2, {"topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "offset": 2}]}], "timeout_ms": 10000}, record=False)
    assert deleted is not None
    body = fetch_body([], session_id=session, session_epoch=1)
    await s.call(FETCH, 12, body, label="incremental after DeleteRecords")


@case("fetch/session-add-partition", api=FETCH)
async def session_add_partition(s: Session) -> None:
    """An incremental fetch naming a partition the session lacks adds it."""
    topic = await topic_with_records(s, 2)
    session = await open_session(s, topic)
    await produce_batch(s, topic, batch([b"p1"]), partition=1, record=False)
    body = fetch_body([(topic, None, [partition_entry(1)])], session_id=session,
                      session_epoch=1)
    await s.call(FETCH, 12, body, label="add partition 1")
    body = fetch_body([], session_id=session, session_epoch=2)
    await s.call(FETCH, 12, body, label="nothing new")


@case("fetch/invalid-isolation-level", api=FETCH)
async def invalid_isolation_level(s: Session) -> None:
    """Isolation level 2 does not exist."""
    topic = await topic_with_records(s)
    await fetch(s, topic, isolation=2)


@cases("fetch/zstd-records", [9, 10], api=FETCH)
async def zstd_records(s: Session, version: int) -> None:
    """zstd batches to a consumer fetching below v10 (KIP-110)."""
    topic = s.name()
    await create_topic(s, topic)
    await produce_batch(s, topic, batch([b"z"], compression=Compression.ZSTD), record=False)
    await fetch(s, topic, version=version)


@case("fetch/duplicate-partition", api=FETCH)
async def duplicate_partition(s: Session) -> None:
    """One partition twice in a request, at two offsets."""
    topic = await topic_with_records(s)
    body = fetch_body([(topic, None, [partition_entry(offset=0), partition_entry(offset=2)])])
    await s.call(FETCH, 12, body)


@case("fetch/version-3", api=FETCH)
async def version_3(s: Session) -> None:
    """Fetch v3 is below Kafka 4's minimum (KIP-896): the connection closes."""
    topic = await topic_with_records(s)
    body = fetch_body([(topic, None, [partition_entry()])])
    await s.call(FETCH, 3, body)
