"""Real clients against a cluster restarted on its data directory.

The CLI test is the hard case: the process is killed with SIGKILL (no shutdown code runs),
started again on the same directory and ports, and a consumer resuming from the group's
committed offset must read exactly the messages after it, while an idempotent producer that
lived through the restart keeps producing without duplicates. The embedded test is the
clean case: a MockClusterThread stopped and a new one started on the directory.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from mockbroker.embedded import MockClusterThread
from tests.support.cli import free_port_base, read_line, start_cli, stop

TIMEOUT = 30.0
MAX_POLLS = 300
TOTAL = 300
COMMITTED = 120


def _consume(bootstrap: str, group: str, topic: str, expected: int,
             reset: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": reset})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(MAX_POLLS):
            message = consumer.poll(0.2)
            if message is None:
                if len(values) >= expected:
                    break
                continue
            assert message.error() is None or message.error().code() == \
                KafkaError._PARTITION_EOF, message.error()
            if message.error() is None:
                values.append(message.value())
        if len(values) >= COMMITTED and expected == COMMITTED:
            consumer.commit(offsets=[TopicPartition(topic, 0, COMMITTED)], asynchronous=False)
    finally:
        consumer.close()
    return values


def _produce(producer: Producer, topic: str, values: range) -> None:
    failures: list[object] = []
    for index in values:
        producer.produce(topic, f"m{index}".encode(),
                         on_delivery=lambda err, _msg: failures.append(err) if err else None)
    assert producer.flush(TIMEOUT) == 0
    assert failures == []


def test_sigkill_and_restart_keeps_acknowledged_records_and_offsets(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port_base(3)
    flags = ("--brokers", "3", "--port", str(port), "--partitions", "1",
             "--data-dir", str(data_dir))
    proc, fields = start_cli(*flags)
    bootstrap = fields["bootstrap"]
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5,
                         "reconnect.backoff.max.ms": 200})
    try:
        _produce(producer, "events", range(TOTAL // 2))
        first = _consume(bootstrap, "readers", "events", COMMITTED, "earliest")
        assert first[:COMMITTED] == [f"m{i}".encode() for i in range(COMMITTED)]
        proc.kill()  # SIGKILL: nothing is flushed or closed by the process
        proc.wait(TIMEOUT)
        proc, restarted = start_cli(*flags)
        assert restarted["bootstrap"] == bootstrap
        _produce(producer, "events", range(TOTAL // 2, TOTAL))  # the same producer goes on
        # "latest": only the committed offset can make this consumer start at COMMITTED
        rest = _consume(bootstrap, "readers", "events", TOTAL - COMMITTED, "latest")
        assert rest == [f"m{i}".encode() for i in range(COMMITTED, TOTAL)]
    finally:
        stop(proc)


def test_cli_refuses_an_unwritable_data_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = subprocess.Popen(
        [*_python_m(), "--brokers", "1", "--data-dir", str(blocker / "sub")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.wait(TIMEOUT) == 2
        assert "data directory" in read_line(proc.stderr)
    finally:
        if proc.poll() is None:
            stop(proc)


def _python_m() -> list[str]:
    import sys
    return [sys.executable, "-m", "mockbroker"]


def test_kafka_python_reads_everything_after_a_clean_restart(tmp_path: Path) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    values = [f"v{i}".encode() for i in range(50)]
    with MockClusterThread(brokers=3, data_dir=str(tmp_path)) as mock:
        producer = KafkaProducer(bootstrap_servers=mock.bootstrap_servers, acks="all")
        for value in values:
            producer.send("kept", value)
        producer.flush(TIMEOUT)
        producer.close(TIMEOUT)
    with MockClusterThread(brokers=3, data_dir=str(tmp_path)) as mock:
        consumer = KafkaConsumer("kept", bootstrap_servers=mock.bootstrap_servers,
                                 auto_offset_reset="earliest", consumer_timeout_ms=3000)
        try:
            read = [message.value for message in consumer]
        finally:
            consumer.close()
    assert read == values
