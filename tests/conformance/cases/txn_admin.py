"""Transactions seen from the side: TxnOffsetCommit (and OffsetFetch's require_stable while
it is pending), WriteTxnMarkers sent by a client, DescribeTransactions and
ListTransactions (filters; only this case's transactional ids compared)."""

from __future__ import annotations

import time
from typing import Any

from tests.conformance.cases.group_support import (
    TRANSACTION,
    call_sorted,
    consumer_member,
    coordinator_ready,
    grant,
    stable_member,
    wait_acl,
)
from tests.conformance.cases.offsets import OFFSET_FETCH, fetch_body
from tests.conformance.cases.txn_support import (
    ADD_OFFSETS,
    DESCRIBE_TRANSACTIONS,
    END_TXN,
    LIST_TRANSACTIONS,
    TXN_OFFSET_COMMIT,
    WRITE_MARKERS,
    Producer,
    end_body,
    init_producer,
    ongoing,
    produce_txn,
    wait_complete,
)
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases

FETCH = 1


def txn_commit_body(producer: Producer, group: str, topic: str, offset: int = 5,
                    **member: Any) -> dict[str, Any]:
    return {**producer.ids(), "group_id": group,
            "generation_id": member.get("generation", -1),
            "member_id": member.get("member_id", ""),
            "group_instance_id": None,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": offset,
                 "committed_leader_epoch": -1, "committed_metadata": "txn"}]}]}


async def with_offsets(s: Session) -> tuple[Producer, str, str]:
    """An open transaction that added a group's offsets."""
    topic, group = s.name("t"), s.name("g")
    producer = await ongoing(s, topic)
    await coordinator_ready(s, group)
    added = await s.call(ADD_OFFSETS, 3, {**producer.ids(), "group_id": group},
                         record=False)
    assert added is not None and added.error_code == 0, added
    return producer, topic, group


@cases("txn/offset-commit", [0, 2, 3, 4, 5], api=TXN_OFFSET_COMMIT)
async def offset_commit(s: Session, version: int) -> None:
    """Offsets committed in a transaction are pending (require_stable: UNSTABLE_OFFSET_COMMIT,
    88) until the transaction commits."""
    producer, topic, group = await with_offsets(s)
    await s.call(TXN_OFFSET_COMMIT, version, txn_commit_body(producer, group, topic))
    await s.call(OFFSET_FETCH, 7, fetch_body(7, group, {topic: [0]}), label="pending")
    await s.call(OFFSET_FETCH, 7, fetch_body(7, group, {topic: [0]}, require_stable=True),
                 label="pending, stable")
    await s.call(END_TXN, 3, end_body(producer, True), record=False)

    async def visible() -> bool:
        answer = await s.call(OFFSET_FETCH, 7, fetch_body(7, group, {topic: [0]},
                                                          require_stable=True), record=False)
        return answer is not None and answer.topics[0].partitions[0].error_code == 0
    await s.until(visible, timeout=10.0, what="the committed offsets")
    await s.call(OFFSET_FETCH, 7, fetch_body(7, group, {topic: [0]}, require_stable=True),
                 label="committed")


@case("txn/offset-commit-aborted", api=TXN_OFFSET_COMMIT)
async def offset_commit_aborted(s: Session) -> None:
    """Aborted transactional offsets never show."""
    producer, topic, group = await with_offsets(s)
    await s.call(TXN_OFFSET_COMMIT, 3, txn_commit_body(producer, group, topic))
    await s.call(END_TXN, 3, end_body(producer, False), record=False)

    async def settled() -> bool:
        answer = await s.call(OFFSET_FETCH, 8, fetch_body(8, group, {topic: [0]},
                                                          require_stable=True), record=False)
        return answer is not None and answer.groups[0].topics[0].partitions[0] \
            .error_code == 0
    await s.until(settled, timeout=10.0, what="the abort")
    await s.call(OFFSET_FETCH, 8, fetch_body(8, group, {topic: [0]}, require_stable=True))


@case("txn/offset-commit-without-add-offsets", api=TXN_OFFSET_COMMIT)
async def offset_commit_unadded(s: Session) -> None:
    topic, group = s.name("t"), s.name("g")
    producer = await ongoing(s, topic)
    await coordinator_ready(s, group)
    await s.call(TXN_OFFSET_COMMIT, 3, txn_commit_body(producer, group, topic))


@cases("txn/offset-commit-errors", ["unknown-topic", "stale-epoch", "stale-epoch-v5",
                                    "unknown-member", "generation", "member", "denied"],
       api=TXN_OFFSET_COMMIT)
async def offset_commit_errors(s: Session, which: str) -> None:
    """An unknown topic (3); an epoch older than the producer's; a group member's fields
    (v3+) that are wrong (25, 22) or right; alice (53)."""
    producer, topic, group = await with_offsets(s)
    body = txn_commit_body(producer, group, topic)
    user = None
    version = 3
    if which == "unknown-topic":
        body["topics"][0]["name"] = s.name("missing")
    elif which in ("stale-epoch", "stale-epoch-v5"):
        body["producer_epoch"] = producer.epoch - 1
        version = 5 if which == "stale-epoch-v5" else 3
    elif which in ("unknown-member", "generation", "member"):
        member, generation = await stable_member(s, group, topic)
        body["member_id"] = member if which != "unknown-member" else "nobody"
        body["generation_id"] = generation + (3 if which == "generation" else 0)
    else:
        user = "alice"
    await s.call(TXN_OFFSET_COMMIT, version, body, user=user)


@case("txn/offset-commit-denied-group", api=TXN_OFFSET_COMMIT)
async def offset_commit_denied_group(s: Session) -> None:
    """alice with WRITE on the transactional id but no READ on the group: 30."""
    producer, topic, group = await with_offsets(s)
    await grant(s, 5, producer.transactional_id, 4)
    body = txn_commit_body(producer, group, topic)

    async def applied() -> bool:
        answer = await s.call(TXN_OFFSET_COMMIT, 3, body, user="alice", record=False)
        return answer is not None and all(
            p.error_code != 53 for t in answer.topics for p in t.partitions)
    await wait_acl(s, applied)
    await s.call(TXN_OFFSET_COMMIT, 3, body, user="alice")


@case("txn/fetch-require-stable-v9", api=OFFSET_FETCH)
async def require_stable_v9(s: Session) -> None:
    """OffsetFetch v9 (batched groups) with require_stable while transactional offsets are
    pending for one group, a settled group beside it."""
    producer, topic, group = await with_offsets(s)
    await s.call(TXN_OFFSET_COMMIT, 3, txn_commit_body(producer, group, topic),
                 record=False)
    settled = s.name("settled")
    await coordinator_ready(s, settled)
    await s.call(8, 9, {"group_id": settled, "generation_id_or_member_epoch": -1,
                        "member_id": "", "group_instance_id": None, "topics": [
                            {"name": topic, "partitions": [
                                {"partition_index": 0, "committed_offset": 2,
                                 "committed_leader_epoch": -1,
                                 "committed_metadata": ""}]}]}, record=False)
    body = {"groups": [
        {"group_id": group, "member_id": None, "member_epoch": -1, "topics": None},
        {"group_id": settled, "member_id": None, "member_epoch": -1, "topics": None}],
        "require_stable": True}
    await s.call(OFFSET_FETCH, 9, body)
    body["require_stable"] = False
    await s.call(OFFSET_FETCH, 9, body, label="not stable")


@case("txn/write-markers", api=WRITE_MARKERS)
async def write_markers(s: Session) -> None:
    """WriteTxnMarkers v1 from a client with CLUSTER_ACTION (a super user): a commit marker
    for an open transaction's partition ends it there; the records become readable at the
    read-committed level; an unknown topic: UNKNOWN_TOPIC_OR_PARTITION."""
    topic = s.name("t")
    producer = await ongoing(s, topic)
    body = {"markers": [{"producer_id": producer.producer_id,
                         "producer_epoch": producer.epoch, "transaction_result": True,
                         "topics": [{"name": topic, "partition_indexes": [0]},
                                    {"name": s.name("missing"), "partition_indexes": [0]}],
                         "coordinator_epoch": 0}]}
    # compared sorted: Kafka groups its answer in hash maps
    await call_sorted(s, WRITE_MARKERS, 1, body)
    await s.call(FETCH, 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1,
                             "max_bytes": 1 << 20, "isolation_level": 1, "session_id": 0,
                             "session_epoch": -1, "topics": [{
                                 "topic": topic, "partitions": [{
                                     "partition": 0, "current_leader_epoch": -1,
                                     "fetch_offset": 0, "last_fetched_epoch": -1,
                                     "log_start_offset": -1,
                                     "partition_max_bytes": 1 << 20}]}],
                             "forgotten_topics_data": [], "rack_id": ""},
                 label="read committed")


@case("txn/write-markers-denied", api=WRITE_MARKERS)
async def write_markers_denied(s: Session) -> None:
    topic = s.name("t")
    producer = await ongoing(s, topic)
    await s.call(WRITE_MARKERS, 1, {"markers": [{
        "producer_id": producer.producer_id, "producer_epoch": producer.epoch,
        "transaction_result": False, "topics": [{"name": topic, "partition_indexes": [0]}],
        "coordinator_epoch": 0}]}, user="alice")


@case("txn/describe", api=DESCRIBE_TRANSACTIONS)
async def describe(s: Session) -> None:
    """An ongoing transaction with a partition; one just initialised (Empty); one that does
    not exist: TRANSACTIONAL_ID_NOT_FOUND (105)."""
    topic = s.name("t")
    producer = await ongoing(s, topic)
    empty = await init_producer(s, s.name("empty"))
    await coordinator_ready(s, s.name("missing"), TRANSACTION)
    await s.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [
        producer.transactional_id, empty.transactional_id, s.name("missing")]})


@cases("txn/describe-after-end", [True, False], api=DESCRIBE_TRANSACTIONS)
async def describe_after_end(s: Session, committed: bool) -> None:
    """After EndTxn: CompleteCommit / CompleteAbort once the markers are written."""
    producer = await ongoing(s, s.name("t"))
    await s.call(END_TXN, 3, end_body(producer, committed), record=False)
    final = "CompleteCommit" if committed else "CompleteAbort"

    async def complete() -> bool:
        answer = await s.call(DESCRIBE_TRANSACTIONS, 0, {
            "transactional_ids": [producer.transactional_id]}, record=False)
        return answer is not None and answer.transaction_states[0].transaction_state == final
    await s.until(complete, timeout=10.0, what=final)
    await s.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [producer.transactional_id]})


@case("txn/describe-denied", api=DESCRIBE_TRANSACTIONS)
async def describe_denied(s: Session) -> None:
    """alice without DESCRIBE on the id: 53; with it, the transaction (partitions of topics
    she may not describe left out)."""
    producer = await ongoing(s, s.name("t"))
    body = {"transactional_ids": [producer.transactional_id]}
    await s.call(DESCRIBE_TRANSACTIONS, 0, body, user="alice")
    await grant(s, 5, producer.transactional_id, 8)

    async def applied() -> bool:
        answer = await s.call(DESCRIBE_TRANSACTIONS, 0, body, user="alice", record=False)
        return answer is not None and answer.transaction_states[0].error_code == 0
    await wait_acl(s, applied)
    await s.call(DESCRIBE_TRANSACTIONS, 0, body, user="alice", label="granted")


async def listed(s: Session, version: int, body: dict[str, Any], label: str,
                 user: str | None = None) -> None:
    """ListTransactions, recording only this case's transactional ids (sorted)."""
    answer = await s.call(LIST_TRANSACTIONS, version, body, record=False, user=user)
    assert answer is not None
    mine = sorted((dict(t) for t in answer.transaction_states
                   if t.transactional_id.startswith(s.name())),
                  key=lambda t: str(t["transactional_id"]))
    s.observe(label, {"error": answer.error_code, "unknown": list(answer.unknown_state_filters),
                      "transactions": mine})


@cases("txn/list", ["all", "Ongoing", "Empty", "ongoing", "Bogus", "producer-id"],
       api=LIST_TRANSACTIONS)
async def list_transactions(s: Session, which: str) -> None:
    """ListTransactions v0 with a state filter (unknown states are listed back), or a
    producer id filter."""
    producer = await ongoing(s, s.name("t"))
    await init_producer(s, s.name("empty"))
    body: dict[str, Any] = {"state_filters": [], "producer_id_filters": []}
    if which == "producer-id":
        body["producer_id_filters"] = [producer.producer_id]
    elif which != "all":
        body["state_filters"] = [which]
    await listed(s, 0, body, which)


@cases("txn/list-duration", [0, 3600000, -1], api=LIST_TRANSACTIONS)
async def list_duration(s: Session, duration_ms: int) -> None:
    """ListTransactions v1's duration filter: transactions open longer than it."""
    await ongoing(s, s.name("t"))
    await init_producer(s, s.name("empty"))
    await listed(s, 1, {"state_filters": [], "producer_id_filters": [],
                        "duration_filter": duration_ms}, str(duration_ms))


@case("txn/list-denied", api=LIST_TRANSACTIONS)
async def list_denied(s: Session) -> None:
    """alice sees only the transactional ids she may describe."""
    producer = await ongoing(s, s.name("t"))
    await listed(s, 1, {"state_filters": [], "producer_id_filters": [],
                        "duration_filter": -1}, "none", user="alice")
    await grant(s, 5, producer.transactional_id, 8)

    async def applied() -> bool:
        answer = await s.call(LIST_TRANSACTIONS, 1, {}, user="alice", record=False)
        return answer is not None and any(t.transactional_id == producer.transactional_id
                                          for t in answer.transaction_states)
    await wait_acl(s, applied)
    await listed(s, 1, {"state_filters": [], "producer_id_filters": [],
                        "duration_filter": -1}, "granted", user="alice")


@case("txn/offset-commit-v5-adds-group", api=TXN_OFFSET_COMMIT)
async def offset_commit_v5(s: Session) -> None:
    """Transactions v2: TxnOffsetCommit v5 adds the group to the transaction itself (no
    AddOffsetsToTxn); EndTxn v5 then commits the offsets."""
    topic, group = s.name("t"), s.name("g")
    await s.create_topic(topic, 1)
    producer = await init_producer(s, s.name("txn"), version=5)
    await coordinator_ready(s, group)
    await s.call(TXN_OFFSET_COMMIT, 5, txn_commit_body(producer, group, topic))
    await s.call(END_TXN, 5, end_body(producer, True))

    async def visible() -> bool:
        answer = await s.call(OFFSET_FETCH, 9, fetch_body(9, group, {topic: [0]},
                                                          require_stable=True), record=False)
        return answer is not None and answer.groups[0].topics[0].partitions[0] \
            .error_code == 0
    await s.until(visible, timeout=10.0, what="the committed offsets")
    await s.call(OFFSET_FETCH, 9, fetch_body(9, group, {topic: [0]}), label="committed")


@case("txn/produce-fenced-epoch", api=22)
async def produce_fenced(s: Session) -> None:
    """A transactional produce with the epoch a newer InitProducerId fenced (once that
    InitProducerId completed: the open transaction aborted, the epoch bumped)."""
    topic = s.name("t")
    producer = await ongoing(s, topic)
    await init_producer(s, producer.transactional_id)
    await produce_txn(s, producer, topic, [b"late"], sequence=1, record=True)


@cases("txn/read-committed-after-end", [True, False], api=END_TXN)
async def read_committed(s: Session, committed: bool) -> None:
    """After the markers: Fetch at read_committed (records, aborted transactions, last
    stable offset) and ListOffsets' latest offset at read_committed."""
    topic = s.name("t")
    producer = await ongoing(s, topic)
    await s.call(2, 7, {"replica_id": -1, "isolation_level": 1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                        "timestamp": -1}]}]}, label="open: latest")
    await s.call(END_TXN, 3, end_body(producer, committed), record=False)
    await wait_complete(s, producer)
    await s.call(FETCH, 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1,
                             "max_bytes": 1 << 20, "isolation_level": 1, "session_id": 0,
                             "session_epoch": -1, "topics": [{
                                 "topic": topic, "partitions": [{
                                     "partition": 0, "current_leader_epoch": -1,
                                     "fetch_offset": 0, "last_fetched_epoch": -1,
                                     "log_start_offset": -1,
                                     "partition_max_bytes": 1 << 20}]}],
                             "forgotten_topics_data": [], "rack_id": ""},
                 label="read committed")
    await s.call(2, 7, {"replica_id": -1, "isolation_level": 1, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                        "timestamp": -1}]}]}, label="ended: latest")


@case("txn/second-transaction", api=DESCRIBE_TRANSACTIONS)
async def second_transaction(s: Session) -> None:
    """After a committed transaction, adding a partition starts the next one: Ongoing again
    with the new partition only."""
    topic = s.name("t")
    producer = await ongoing(s, topic, partitions=2)
    await s.call(END_TXN, 3, end_body(producer, True), record=False)
    await wait_complete(s, producer)
    await s.call(24, 3, {"v3_and_below_transactional_id": producer.transactional_id,
                         "v3_and_below_producer_id": producer.producer_id,
                         "v3_and_below_producer_epoch": producer.epoch,
                         "v3_and_below_topics": [{"name": topic, "partitions": [1]}]})
    await s.call(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [producer.transactional_id]})


@case("txn/offset-commit-consumer-member", api=TXN_OFFSET_COMMIT)
async def offset_commit_consumer_member(s: Session) -> None:
    """TxnOffsetCommit v3 for a KIP-848 group: the member's epoch as the generation; a
    wrong epoch; an unknown member."""
    producer, topic, group = await with_offsets(s)
    await s.create_topic(s.name("sub"), 1)
    member, epoch = await consumer_member(s, group, [s.name("sub")])
    for label, member_id, generation in (("member", member, epoch),
                                         ("wrong epoch", member, epoch + 4),
                                         ("unknown", "nobody", epoch)):
        await s.call(TXN_OFFSET_COMMIT, 3, txn_commit_body(
            producer, group, topic, member_id=member_id, generation=generation), label=label)


@cases("txn/list-combined-filters", ["match", "no-match"], api=LIST_TRANSACTIONS)
async def list_combined(s: Session, which: str) -> None:
    """State and producer id filters together: both must match."""
    producer = await ongoing(s, s.name("t"))
    state = "Ongoing" if which == "match" else "Empty"
    await listed(s, 1, {"state_filters": [state], "producer_id_filters": [producer.producer_id],
                        "duration_filter": -1}, which)


@case("txn/fetch-of-nothing-answers-at-once", api=FETCH)
async def fetch_nothing(s: Session) -> None:
    """A sessionless Fetch naming no partition, min_bytes 1 and max_wait 3 s: answered at
    once, as Kafka's ReplicaManager answers a fetch that requires no data."""
    started = time.monotonic()
    await s.call(FETCH, 12, {"replica_id": -1, "max_wait_ms": 3000, "min_bytes": 1,
                             "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
                             "session_epoch": -1, "topics": [], "forgotten_topics_data": [],
                             "rack_id": ""})
    s.observe("answered within a second", time.monotonic() - started < 1.0)
