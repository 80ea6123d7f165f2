"""Injected errors on Produce and Fetch are retried by every client, and the data arrives.

For each client a workload produces (acks=all, idempotent) and consumes in a group while the
test injects, one after the other, errors on the next requests for its topic: on Produce
NOT_LEADER_OR_FOLLOWER and REQUEST_TIMED_OUT (the partitions in error are not written, as
with a real broker's error), on Fetch those two and FENCED_LEADER_EPOCH. Each fault must be
used up (the client really received the error), the client must keep making progress, and
in the end every acknowledged message is consumed exactly once, with no delivery failure.

FENCED_LEADER_EPOCH on Produce is different: a real broker never sends it there (Produce
carries no leader epoch; KIP-359 is an opt-in extension here), and the clients disagree
about it. The last test pins what each one does: kafka-python retries it like any
retriable error; librdkafka fails the delivery with FENCED_LEADER_EPOCH and carries on;
aiokafka does not know code 74, fails the batch with UnknownError, and its idempotent
sequence is then broken (the next batch gets OUT_OF_ORDER_SEQUENCE_NUMBER).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.dynamics.workloads import WORKLOADS, Workload

pytestmark = pytest.mark.clients

PARTITIONS = 2
ERRORS = {
    "Produce": ("NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT"),
    "Fetch": ("NOT_LEADER_OR_FOLLOWER", "FENCED_LEADER_EPOCH", "REQUEST_TIMED_OUT"),
}
COUNT = 3  # requests that get each error
STEP_TIMEOUT = 20.0


def _wait(condition: object, what: str, workload: Workload) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT
    while time.monotonic() < deadline and not workload.errors:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError(f"{workload.client}: {what} (errors: {workload.errors})")


@pytest.mark.parametrize("client", list(WORKLOADS))
def test_injected_errors_are_retried(mock: MockClusterThread, client: str) -> None:
    topic = f"injected-{client}"
    mock.control.create_topic(topic, partitions=PARTITIONS)
    workload = WORKLOADS[client](mock.bootstrap_servers, topic, f"injected-{client}")
    fired: dict[tuple[str, str], int] = {}
    try:
        workload.start()
        _wait(lambda: workload.ledger.consumed, "consumer never started", workload)
        for api, errors in ERRORS.items():
            for error in errors:
                fault = mock.control.inject_error(api, error, topic=topic, count=COUNT)

                def used_up(fault_id: int = fault["id"]) -> bool:
                    return all(f["id"] != fault_id for f in mock.control.state()["faults"])
                _wait(used_up, f"{api} {error} was never used up", workload)
                fired[(api, error)] = COUNT
                acked, consumed = len(workload.ledger.acked), len(workload.ledger.consumed)
                _wait(lambda a=acked, c=consumed: len(workload.ledger.acked) > a + 20
                      and len(workload.ledger.consumed) > c + 20,
                      f"no progress after {api} {error}", workload)
        workload.stop_producing()
        workload.wait_consumed()
    finally:
        workload.close()
    assert len(fired) == sum(len(e) for e in ERRORS.values())
    workload.check()


def _produce_three(client: str, boot: str, topic: str, mock: MockClusterThread) -> list[str]:
    """Send a, b (with FENCED_LEADER_EPOCH injected once) and c; what each send reports."""
    import asyncio

    outcomes: list[str] = []

    def inject() -> None:
        mock.control.inject_error("Produce", "FENCED_LEADER_EPOCH", topic=topic, count=1)

    if client == "kafka-python":
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=boot, acks="all", enable_idempotence=True)
        try:
            for value in (b"a", b"b", b"c"):
                if value == b"b":
                    inject()
                try:
                    md = producer.send(topic, value, partition=0).get(timeout=10)
                    outcomes.append(f"offset {md.offset}")
                except Exception as exc:
                    outcomes.append(type(exc).__name__)
        finally:
            producer.close(timeout=10)
    elif client == "confluent-kafka":
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": boot, "acks": "all",
                             "enable.idempotence": True})
        for value in (b"a", b"b", b"c"):
            if value == b"b":
                inject()
            report: list[str] = []

            def delivered(err: Any, m: Any, report: list[str] = report) -> None:
                report.append(f"offset {m.offset()}" if err is None else err.name())
            producer.produce(topic, value, partition=0, on_delivery=delivered)
            producer.flush(10)
            outcomes.append(report[0] if report else "no report")
    else:
        from aiokafka import AIOKafkaProducer

        async def run() -> None:
            producer = AIOKafkaProducer(bootstrap_servers=boot, acks="all",
                                        enable_idempotence=True)
            await producer.start()
            try:
                for value in (b"a", b"b", b"c"):
                    if value == b"b":
                        inject()
                    try:
                        md = await asyncio.wait_for(
                            producer.send_and_wait(topic, value, partition=0), 10)
                        outcomes.append(f"offset {md.offset}")
                    except Exception as exc:
                        outcomes.append(type(exc).__name__)
            finally:
                await producer.stop()
        asyncio.run(run())
    return outcomes


FENCED_ON_PRODUCE = {
    "kafka-python": ["offset 0", "offset 1", "offset 2"],  # retried
    "confluent-kafka": ["offset 0", "FENCED_LEADER_EPOCH", "offset 1"],
    "aiokafka": ["offset 0", "UnknownError", "OutOfOrderSequenceNumber"],
}


@pytest.mark.parametrize("client", list(FENCED_ON_PRODUCE))
def test_fenced_leader_epoch_on_produce_per_client(mock: MockClusterThread,
                                                   client: str) -> None:
    topic = f"fenced-produce-{client}"
    mock.control.create_topic(topic, partitions=1)
    outcomes = _produce_three(client, mock.bootstrap_servers, topic, mock)
    assert outcomes == FENCED_ON_PRODUCE[client]
    assert mock.control.state()["faults"] == []  # the error was delivered
