"""Helpers of the transaction cases: a transactional producer initialised and, when asked,
in an ongoing transaction with a partition (AddPartitionsToTxn v3 and a transactional
batch) — each step unrecorded unless a case asks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.records import RecordSpec, build_batch

from tests.conformance.cases.group_support import TRANSACTION, coordinator_ready
from tests.conformance.harness import Session, produce_body

INIT_PRODUCER_ID = 22
ADD_PARTITIONS = 24
ADD_OFFSETS = 25
END_TXN = 26
WRITE_MARKERS = 27
TXN_OFFSET_COMMIT = 28
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
TIMEOUT_MS = 60000
# retriable answers a client retries: NOT_LEADER_OR_FOLLOWER, COORDINATOR_LOAD_IN_PROGRESS,
# COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS
RETRIABLE = (6, 14, 15, 16, 51)


@dataclass
class Producer:
    transactional_id: str
    producer_id: int
    epoch: int

    def ids(self) -> dict[str, Any]:
        return {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.epoch}


def init_body(transactional_id: str | None, timeout_ms: int = TIMEOUT_MS,
              producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
    return {"transactional_id": transactional_id, "transaction_timeout_ms": timeout_ms,
            "producer_id": producer_id, "producer_epoch": epoch}


async def init_producer(s: Session, transactional_id: str, *, version: int = 4,
                        record: bool = False) -> Producer:
    await coordinator_ready(s, transactional_id, TRANSACTION)

    async def initialised() -> Struct | None:
        answer = await s.call(INIT_PRODUCER_ID, version, init_body(transactional_id),
                              record=False)
        assert answer is not None and answer.error_code in (0, *RETRIABLE), answer
        return answer if answer.error_code == 0 else None
    answer = await s.until(initialised, timeout=10.0, what="InitProducerId")
    if record:
        s.observe("init", answer)
    return Producer(transactional_id, answer.producer_id, answer.producer_epoch)


def add_partitions_body(producer: Producer, topics: dict[str, list[int]],
                        **override: Any) -> dict[str, Any]:
    body = {"v3_and_below_transactional_id": producer.transactional_id,
            "v3_and_below_producer_id": producer.producer_id,
            "v3_and_below_producer_epoch": producer.epoch,
            "v3_and_below_topics": [{"name": t, "partitions": p} for t, p in topics.items()]}
    body.update({f"v3_and_below_{k}": v for k, v in override.items()})
    return body


async def add_partitions(s: Session, producer: Producer, topics: dict[str, list[int]], *,
                         record: bool = False) -> Struct:
    answer = await s.call(ADD_PARTITIONS, 3, add_partitions_body(producer, topics),
                          record=record)
    assert answer is not None
    return answer


async def produce_txn(s: Session, producer: Producer, topic: str, values: list[bytes], *,
                      partition: int = 0, sequence: int = 0, version: int = 11,
                      record: bool = False) -> Struct:
    data = build_batch([RecordSpec(value=v) for v in values], producer_id=producer.producer_id,
                       producer_epoch=producer.epoch, base_sequence=sequence,
                       transactional=True)
    answer = await s.call(0, version, produce_body(topic, partition, data,
                                                   transactional_id=producer.transactional_id),
                          record=record)
    assert answer is not None
    return answer


async def produce_settled(s: Session, producer: Producer, topic: str, values: list[bytes],
                          *, version: int = 11, label: str = "produce") -> Struct:
    """A transactional produce retried while its answer is retriable (a leader that cannot
    verify with the coordinator yet answers NOT_LEADER_OR_FOLLOWER), the last answer
    recorded."""
    async def settled() -> Struct | None:
        answer = await produce_txn(s, producer, topic, values, version=version)
        error = answer.responses[0].partition_responses[0].error_code
        return None if error in RETRIABLE else answer
    answer: Struct = await s.until(settled, timeout=10.0, what="a settled produce")
    s.observe(label, answer)
    return answer


async def ongoing(s: Session, topic: str, *, partitions: int = 1,
                  suffix: str = "txn") -> Producer:
    """A topic and a transactional producer with one record written in an open
    transaction on partition 0."""
    await s.create_topic(topic, partitions)
    producer = await init_producer(s, s.name(suffix))
    added = await add_partitions(s, producer, {topic: [0]})
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0] \
        .partition_error_code == 0, added

    async def produced() -> bool:
        answer = await produce_txn(s, producer, topic, [b"one"])
        error = answer.responses[0].partition_responses[0].error_code
        assert error in (0, *RETRIABLE), answer
        return bool(error == 0)
    await s.until(produced, timeout=10.0, what="the transactional produce")
    return producer


async def wait_complete(s: Session, producer: Producer) -> None:
    """Poll DescribeTransactions until the transaction's markers are written."""
    async def complete() -> bool:
        answer = await s.call(DESCRIBE_TRANSACTIONS, 0, {
            "transactional_ids": [producer.transactional_id]}, record=False)
        assert answer is not None
        return str(answer.transaction_states[0].transaction_state) in (
            "CompleteCommit", "CompleteAbort", "Empty")
    await s.until(complete, timeout=10.0, what="the end of the transaction")


def end_body(producer: Producer, committed: bool) -> dict[str, Any]:
    return {**producer.ids(), "committed": committed}


__all__ = [
    "ADD_OFFSETS",
    "ADD_PARTITIONS",
    "DESCRIBE_TRANSACTIONS",
    "END_TXN",
    "INIT_PRODUCER_ID",
    "LIST_TRANSACTIONS",
    "TXN_OFFSET_COMMIT",
    "WRITE_MARKERS",
    "Producer",
    "add_partitions",
    "add_partitions_body",
    "end_body",
    "init_body",
    "init_producer",
    "ongoing",
    "produce_settled",
    "produce_txn",
    "wait_complete",
]
