"""Real Apache Kafka in the suite, beside mockbroker: the same client workload against both.

The real broker comes from tests/support/real_kafka.py (`make jvm` resolves it from Maven
Central); these tests check that it runs here and that a transactional workload read with
read_committed gives the same observable outcome on both: the committed values in order,
the aborted ones never, offsets counting the control records the same way.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.support.real_kafka import RealKafka, kafka_version

DEADLINE = 60.0


def _workload(boot: str, topic: str) -> list[tuple[int, bytes]]:
    """Commit one transaction, abort one, commit one; read_committed from the start:
    (offset, value) of everything read."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": boot})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(DEADLINE)
    producer = Producer({"bootstrap.servers": boot, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(DEADLINE)
    for name, commit in (("one", True), ("two", False), ("three", True)):
        producer.begin_transaction()
        for i in range(2):
            producer.produce(topic, f"{name}-{i}".encode(), partition=0)
        assert producer.flush(DEADLINE) == 0  # written, so the abort has data to hide
        (producer.commit_transaction if commit else producer.abort_transaction)(DEADLINE)
    consumer = Consumer({"bootstrap.servers": boot, "group.id": f"g-{topic}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + DEADLINE
    try:
        while len(out) < 4 and time.monotonic() < deadline:
            out += [(m.offset(), m.value()) for m in consumer.consume(10, 0.2)
                    if m.error() is None]
    finally:
        consumer.close()
    return out


def test_real_kafka_runs_and_agrees_on_a_transactional_workload(real_kafka: RealKafka) -> None:
    assert kafka_version().startswith("4.")
    real = _workload(real_kafka.bootstrap_servers, "txn-agree")
    with MockClusterThread(brokers=1) as mock:
        ours = _workload(mock.bootstrap_servers, "txn-agree")
    expected: list[Any] = [(0, b"one-0"), (1, b"one-1"), (6, b"three-0"), (7, b"three-1")]
    assert real == expected
    assert ours == real


@pytest.mark.parametrize("nodes", [3])
def test_a_real_kafka_node_restarts_on_its_directory(tmp_path: Any, nodes: int) -> None:
    """The harness the history checker uses against real Kafka: three KRaft nodes, one
    killed and started again; acknowledged records survive."""
    from confluent_kafka import Producer

    with RealKafka(tmp_path, nodes=nodes) as kafka:
        boot = kafka.bootstrap_servers
        producer = Producer({"bootstrap.servers": boot, "acks": "all",
                             "enable.idempotence": True})
        acked: list[bytes] = []
        for i in range(10):
            producer.produce("restart", f"v-{i}".encode(), partition=0,
                             on_delivery=lambda err, m: err is None and acked.append(m.value()))
        assert producer.flush(DEADLINE) == 0
        kafka.restart(2)
        for i in range(10, 20):
            producer.produce("restart", f"v-{i}".encode(), partition=0,
                             on_delivery=lambda err, m: err is None and acked.append(m.value()))
        assert producer.flush(DEADLINE) == 0
        assert acked == [f"v-{i}".encode() for i in range(20)]
        assert kafka.members[2].starts == 2 and kafka.members[2].running
