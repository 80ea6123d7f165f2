"""Shared steps of the data-path cases (produce_fetch, list_offsets, data_fetch, data_admin):
granting ACLs to alice, producer ids and transactions, and the common request bodies.

Every helper here is a setup step (unrecorded) unless it says otherwise; each waits, bounded,
until the cluster acts on what it set up (an ACL in force, a coordinator ready, a
transaction marker written), so the recorded steps of a case see the same state on both
targets.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.records import RecordSpec, build_batch

from tests.conformance.harness import Session, produce_body

PRODUCE, FETCH, LIST_OFFSETS = 0, 1, 2
INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, END_TXN = 22, 24, 26
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
# id(session) -> the ACL filters its case granted (revoke_grants deletes them)
GRANTED: dict[int, list[dict[str, Any]]] = {}
FIND_COORDINATOR = 10
TRANSACTION_LOG_PARTITIONS = 5  # both targets (tests/conformance/conftest.py)
DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_PRODUCERS = 21, 23, 61

# ACL enums (org.apache.kafka.common.acl / resource)
TOPIC, CLUSTER, TRANSACTIONAL_ID = 2, 4, 5
READ, WRITE, DELETE, DESCRIBE, IDEMPOTENT_WRITE = 3, 4, 6, 8, 12
LITERAL, PREFIXED, ALLOW, DENY = 3, 4, 3, 2

EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -2, -1, -3, -4, -5
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
RETRIABLE_COORDINATOR_ERRORS = frozenset({14, 15, 16})  # load in progress, not available/ours


async def create_topic(s: Session, name: str, partitions: int = 1,
                       configs: dict[str, str] | None = None) -> None:
    """Session.create_topic, then wait until every partition answers ListOffsets: Kafka's
    Metadata may name a leader a moment before that broker hosts the partition (meanwhile
    a Produce is NOT_LEADER_OR_FOLLOWER)."""
    await s.create_topic(name, partitions, configs)

    async def hosted() -> bool:
        body = list_offsets_body(name, LATEST)
        body["topics"][0]["partitions"] = [
            dict(body["topics"][0]["partitions"][0], partition_index=p)
            for p in range(partitions)]
        answer = await s.call(LIST_OFFSETS, 7, body, record=False)
        return answer is not None and all(p.error_code == 0
                                          for p in answer.topics[0].partitions)
    await s.until(hosted, what=f"{name}'s partitions hosted")


async def grant(s: Session, resource_type: int, name: str, operation: int,
                principal: str = "User:alice", *, pattern: int = LITERAL,
                permission: int = ALLOW) -> None:
    """CreateAcls (as admin) and wait until the ACL is in force (Kafka applies it through the
    metadata log)."""
    answer = await s.call(CREATE_ACLS, 3, {"creations": [{
        "resource_type": resource_type, "resource_name": name, "resource_pattern_type": pattern,
        "principal": principal, "host": "*", "operation": operation,
        "permission_type": permission}]}, user="admin", record=False)
    assert answer is not None and answer.results[0].error_code == 0, answer

    acl = {"resource_type_filter": resource_type, "resource_name_filter": name,
           "pattern_type_filter": pattern, "principal_filter": principal, "host_filter": None,
           "operation": operation, "permission_type": permission}
    GRANTED.setdefault(id(s), []).append(acl)
    await s.until(lambda: _listed(s, acl, True), what=f"the ACL on {name}")


async def _listed(s: Session, acl: dict[str, Any], present: bool) -> bool:
    """Whether DescribeAcls (as admin) lists `acl` (when `present`) or no longer does."""
    found = await s.call(DESCRIBE_ACLS, 3, acl, user="admin", record=False)
    return found is not None and found.error_code == 0 and bool(found.resources) == present


async def revoke_grants(s: Session) -> None:
    """DeleteAcls for every ACL this case granted, waiting until they are gone: the
    clusters are shared by every case of the session."""
    for acl in GRANTED.pop(id(s), []):
        answer = await s.call(DELETE_ACLS, 3, {"filters": [acl]}, user="admin", record=False)
        assert answer is not None and answer.filter_results[0].error_code == 0, answer
        await s.until(lambda acl=acl: _listed(s, acl, False), what="the ACL's removal")


def revoking(fn: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """A case that grants ACLs: they are revoked when it ends, however it ends."""
    @functools.wraps(fn)
    async def run(s: Session, *args: Any) -> None:
        try:
            await fn(s, *args)
        finally:
            await revoke_grants(s)
    return run


@dataclass
class Producer:
    """A producer id and epoch from InitProducerId, with its transactional id (or None)."""

    producer_id: int
    epoch: int
    transactional_id: str | None = None


async def init_producer(s: Session, transactional_id: str | None = None,
                        timeout_ms: int = 60000) -> Producer:
    """InitProducerId v4, retried (bounded) while the transaction coordinator loads (a
    transactional id first asks FindCoordinator, which creates Kafka's transaction log)."""
    body = {"transactional_id": transactional_id, "transaction_timeout_ms": timeout_ms,
            "producer_id": -1, "producer_epoch": -1}

    last: list[Struct] = []

    async def ready() -> Struct | None:
        if transactional_id is not None:  # creates __transaction_state when missing
            await s.call(FIND_COORDINATOR, 4, {"key_type": 1,
                                               "coordinator_keys": [transactional_id]},
                         record=False)
            await s.wait_leaders("__transaction_state", TRANSACTION_LOG_PARTITIONS)
        answer = await s.call(INIT_PRODUCER_ID, 4, body, record=False)
        assert answer is not None
        if answer.error_code in RETRIABLE_COORDINATOR_ERRORS:
            last.append(answer)
            return None
        assert answer.error_code == 0, answer
        return answer
    try:
        answer = await s.until(ready, what="a producer id")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {last[-1:]}") from None
    return Producer(answer.producer_id, answer.producer_epoch, transactional_id)


async def add_partitions(s: Session, producer: Producer, topic: str,
                         partitions: Sequence[int] = (0,)) -> None:
    """AddPartitionsToTxn v3 (the client's version), retried while the coordinator loads."""
    body = {"v3_and_below_transactional_id": producer.transactional_id,
            "v3_and_below_producer_id": producer.producer_id,
            "v3_and_below_producer_epoch": producer.epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": list(partitions)}]}

    async def added() -> bool:
        answer = await s.call(ADD_PARTITIONS_TO_TXN, 3, body, record=False)
        assert answer is not None
        codes = {p.partition_error_code for t in answer.results_by_topic_v3_and_below
                 for p in t.results_by_partition}
        if codes & RETRIABLE_COORDINATOR_ERRORS or codes == {51}:  # CONCURRENT_TRANSACTIONS
            return False
        assert codes == {0}, answer
        return True
    await s.until(added, what="partitions added to the transaction")


async def end_transaction(s: Session, producer: Producer, commit: bool) -> None:
    """EndTxn v4, retried while the coordinator is busy."""
    body = {"transactional_id": producer.transactional_id,
            "producer_id": producer.producer_id, "producer_epoch": producer.epoch,
            "committed": commit}

    async def ended() -> bool:
        answer = await s.call(END_TXN, 4, body, record=False)
        assert answer is not None
        if answer.error_code in RETRIABLE_COORDINATOR_ERRORS | {51}:
            return False
        assert answer.error_code == 0, answer
        return True
    await s.until(ended, what="the transaction's end")


def batch(values: Sequence[bytes | None], *, keys: Sequence[bytes | None] | None = None,
          headers: Sequence[Sequence[tuple[str, bytes | None]]] | None = None,
          producer: Producer | None = None, sequence: int = -1,
          transactional: bool = False, **options: Any) -> bytes:
    """One v2 record batch of `values` (with keys / headers per record)."""
    specs = [RecordSpec(value=v, key=None if keys is None else keys[i],
                        headers=() if headers is None else headers[i])
             for i, v in enumerate(values)]
    if producer is not None:
        options.update(producer_id=producer.producer_id, producer_epoch=producer.epoch,
                       base_sequence=sequence)
    data: bytes = build_batch(specs, transactional=transactional, **options)
    return data


async def produce_batch(s: Session, topic: str, data: bytes | None, *, version: int = 9,
                        partition: int = 0, acks: int = -1, record: bool = True,
                        transactional_id: str | None = None,
                        label: str | None = None, user: str | None = None) -> Struct | None:
    """Produce one records blob (recorded unless asked otherwise), as `user`."""
    body = produce_body(topic, partition, data if data is not None else b"", acks=acks,
                        transactional_id=transactional_id)
    if data is None:
        body["topic_data"][0]["partition_data"][0]["records"] = None
    return await s.call(PRODUCE, version, body, record=record, label=label, user=user)


async def transactional_produce(s: Session, producer: Producer, topic: str,
                                values: Sequence[bytes], sequence: int,
                                partition: int = 0) -> None:
    """A transactional batch of a transaction the partition was added to (unrecorded)."""
    data = batch(values, producer=producer, sequence=sequence, transactional=True)
    answer = await produce_batch(s, topic, data, version=9, partition=partition, record=False,
                                 transactional_id=producer.transactional_id)
    assert answer is not None
    assert answer.responses[0].partition_responses[0].error_code == 0, answer


def list_offsets_body(topic: str, timestamp: int, *, partition: int = 0,
                      isolation: int = READ_UNCOMMITTED,
                      leader_epoch: int = -1) -> dict[str, Any]:
    return {"replica_id": -1, "isolation_level": isolation, "timeout_ms": 10000,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": partition, "current_leader_epoch": leader_epoch,
                 "timestamp": timestamp, "max_num_offsets": 1}]}]}


async def latest_offset(s: Session, topic: str, isolation: int = READ_UNCOMMITTED,
                        partition: int = 0) -> int:
    """ListOffsets v7 latest (the high watermark, or the last stable offset with
    READ_COMMITTED), unrecorded."""
    answer = await s.call(LIST_OFFSETS, 7, list_offsets_body(topic, LATEST, partition=partition,
                                                             isolation=isolation),
                          record=False)
    assert answer is not None
    entry = answer.topics[0].partitions[0]
    assert entry.error_code == 0, answer
    return int(entry.offset)


async def wait_stable(s: Session, topic: str, end: int, partition: int = 0) -> None:
    """Wait until the last stable offset reaches `end` (transaction markers written)."""
    async def stable() -> bool:
        return await latest_offset(s, topic, READ_COMMITTED, partition) >= end
    await s.until(stable, what=f"{topic}'s last stable offset at {end}")


__all__ = [
    "ALLOW",
    "CLUSTER",
    "DELETE",
    "DELETE_RECORDS",
    "DENY",
    "DESCRIBE",
    "DESCRIBE_PRODUCERS",
    "EARLIEST",
    "EARLIEST_LOCAL",
    "FETCH",
    "IDEMPOTENT_WRITE",
    "LATEST",
    "LATEST_TIERED",
    "LIST_OFFSETS",
    "MAX_TIMESTAMP",
    "OFFSET_FOR_LEADER_EPOCH",
    "PREFIXED",
    "PRODUCE",
    "READ",
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "TOPIC",
    "TRANSACTIONAL_ID",
    "WRITE",
    "Producer",
    "add_partitions",
    "batch",
    "create_topic",
    "end_transaction",
    "grant",
    "init_producer",
    "latest_offset",
    "list_offsets_body",
    "produce_batch",
    "revoke_grants",
    "revoking",
    "transactional_produce",
    "wait_stable",
]
