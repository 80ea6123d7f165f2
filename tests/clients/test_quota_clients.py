"""Client quotas with real clients: librdkafka under a small producer_byte_rate gets
throttle_time_ms in its responses (its throttle callback reports it) and its data arrives
intact. Under a small consumer_byte_rate a consumer's fetches are capped at what the quota
allows in one window, and a fetch that would go over it is answered empty with the throttle
(Kafka's handleFetchRequest), so the consumer reads every record exactly once, and the
throttles it reports are exactly those the broker gave. kafka-python logs every throttled
response and records it in its throttle-time sensors (`metrics()`); those must be the
broker's throttles exactly. (aiokafka reports throttles neither in metrics nor in logs, so
it has no test here.)
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import confluent_read_values

TIMEOUT = 30.0
VALUES = [f"reading-{i:03d}".encode() * 50 for i in range(10)]  # 10 x 600 bytes


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=1) as mock:
        yield mock


def test_producer_over_its_byte_rate_is_throttled_and_its_data_intact(
        cluster: MockClusterThread) -> None:
    cluster.control.reset()
    cluster.control.create_topic("meters")
    # about 6 KB in one Produce over a 10 s window is ~600 B/s: a 500 B/s quota throttles
    cluster.control.set_quota({"client-id": "metered-producer"},
                              {"producer_byte_rate": 500})
    throttles: list[Any] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "client.id": "metered-producer", "linger.ms": 50,
                         "compression.type": "none", "throttle_cb": throttles.append})
    errors: list[Any] = []
    for value in VALUES:
        producer.produce("meters", value, on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(TIMEOUT) == 0
    deadline = time.monotonic() + TIMEOUT
    while not throttles and time.monotonic() < deadline:  # the callback is served by poll
        producer.poll(0.1)
    assert errors == [None] * len(VALUES)
    quotas = cluster.control.quotas()
    assert quotas["throttled_responses"]["producer_byte_rate"] >= 1
    [last] = [t for t in quotas["throttles"] if t["client_id"] == "metered-producer"]
    assert last["quota"] == "producer_byte_rate" and last["throttle_time_ms"] > 0
    # librdkafka reports the broker's throttle_time_ms (in seconds; 0 once it has ended)
    reported = [round(t.throttle_time * 1000) for t in throttles if t.throttle_time > 0]
    assert reported and reported[-1] == last["throttle_time_ms"]

    got = confluent_read_values({"bootstrap.servers": cluster.bootstrap_servers,
                                 "group.id": "meter-readers", "auto.offset.reset": "earliest"},
                                "meters", len(VALUES), max(deadline - time.monotonic(), 0))
    assert got == VALUES


def _produce_one_batch_each(cluster: MockClusterThread, topic: str) -> int:
    """Each value in a batch of its own, so that the consumer's fetches can be capped below
    the whole topic (a batch larger than what the quota allows in one window would be
    throttled on every fetch, in Kafka too); returns the bytes stored."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0,
                         "compression.type": "none"})
    for value in VALUES:
        producer.produce(topic, value)
        assert producer.flush(TIMEOUT) == 0

    def stored() -> int:
        log = cluster.cluster.log(cluster.cluster.image.topics[topic].topic_id, 0)
        assert log is not None and log.log_end_offset == len(VALUES)
        return sum(batch.size for batch in log.batches_from(0))

    return cluster.call(stored)


def _fetch_throttles(cluster: MockClusterThread, client_id: str) -> list[int]:
    """Every consumer_byte_rate throttle the broker gave `client_id`, oldest first."""
    return [t["throttle_time_ms"] for t in cluster.control.quotas()["throttle_log"]
            if t["client_id"] == client_id and t["quota"] == "consumer_byte_rate"]


def test_consumer_over_its_byte_rate_is_throttled_and_reads_everything_once(
        cluster: MockClusterThread) -> None:
    cluster.control.reset()
    cluster.control.create_topic("readings", partitions=1)
    stored = _produce_one_batch_each(cluster, "readings")
    # 500 B/s: one fetch may carry at most 500 * 10 s = 5000 bytes, less than the ~6.7 KB
    # stored, and the rest of them in the same window is over the quota
    cluster.control.set_quota({"user": None, "client-id": "metered-consumer"},
                              {"consumer_byte_rate": 500})
    throttles: list[Any] = []
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "client.id": "metered-consumer", "group.id": "readers",
                         "auto.offset.reset": "earliest", "throttle_cb": throttles.append})
    consumer.subscribe(["readings"])
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT

    def reported() -> list[int]:  # librdkafka reports seconds, and 0 when one ended
        return [round(t.throttle_time * 1000) for t in throttles if t.throttle_time > 0]

    try:
        while (len(got) < len(VALUES) or len(reported()) < len(
                _fetch_throttles(cluster, "metered-consumer"))) \
                and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    assert got == VALUES  # every record, in order, once
    given = _fetch_throttles(cluster, "metered-consumer")
    assert given and all(0 < t <= 11_000 for t in given)  # Kafka's cap, 11 s
    assert reported() == given
    # librdkafka names the broker (only broker 0 throttled; the bootstrap connection, -1,
    # reports 0)
    assert {t.broker_id for t in throttles if t.throttle_time > 0} == {0}
    quotas = cluster.control.quotas()
    assert quotas["throttled_responses"]["consumer_byte_rate"] == len(given)
    # throttled answers were empty and their bytes taken back: what was recorded is what
    # was sent, each stored byte once
    assert quotas["recorded"]["consumer_byte_rate"] == stored


# -- kafka-python: its connection logs each throttle and records it in the throttle-time
# sensors (producer-metrics / consumer-metrics: throttle-time-max) --------------------------

THROTTLE_LOG = re.compile(r"(\w+)Response(?:_v\d+)? throttled by broker \((\d+) ms\)")


def _logged_throttles(caplog: pytest.LogCaptureFixture, api: str) -> list[int]:
    """The throttle_time_ms of every `api` response kafka-python logged as throttled."""
    found = []
    for record in caplog.records:
        match = THROTTLE_LOG.search(record.getMessage())
        if record.name == "kafka.net.connection" and match and match.group(1) == api:
            found.append(int(match.group(2)))
    return found


def test_kafka_python_producer_reports_the_brokers_throttle(
        cluster: MockClusterThread, caplog: pytest.LogCaptureFixture) -> None:
    from kafka import KafkaProducer

    cluster.control.reset()
    cluster.control.create_topic("kp-meters")
    cluster.control.set_quota({"client-id": "kp-metered"}, {"producer_byte_rate": 500})
    caplog.set_level(logging.WARNING, logger="kafka.net.connection")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                             client_id="kp-metered", linger_ms=50)
    try:
        futures = [producer.send("kp-meters", value) for value in VALUES]
        offsets = [f.get(timeout=TIMEOUT).offset for f in futures]
        metrics = producer.metrics()
    finally:
        producer.close(timeout=TIMEOUT)
    assert offsets == list(range(len(VALUES)))
    quotas = cluster.control.quotas()
    [last] = [t for t in quotas["throttles"] if t["client_id"] == "kp-metered"]
    assert last["quota"] == "producer_byte_rate" and last["throttle_time_ms"] > 0
    reported = _logged_throttles(caplog, "Produce")
    # every Produce was answered before close: the client saw each throttle the broker gave
    assert reported and len(reported) == quotas["throttled_responses"]["producer_byte_rate"]
    assert reported[-1] == last["throttle_time_ms"]
    assert metrics["producer-metrics"]["throttle-time-max"] == max(reported)


def test_kafka_python_consumer_reports_the_brokers_throttle(
        cluster: MockClusterThread, caplog: pytest.LogCaptureFixture) -> None:
    from kafka import KafkaConsumer

    cluster.control.reset()
    cluster.control.create_topic("kp-readings", partitions=1)
    stored = _produce_one_batch_each(cluster, "kp-readings")
    cluster.control.set_quota({"client-id": "kp-reader"}, {"consumer_byte_rate": 500})
    caplog.set_level(logging.WARNING, logger="kafka.net.connection")
    consumer = KafkaConsumer("kp-readings", bootstrap_servers=cluster.bootstrap_servers,
                             client_id="kp-reader", group_id=None,
                             auto_offset_reset="earliest", fetch_max_wait_ms=100)
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while (len(got) < len(VALUES) or len(_logged_throttles(caplog, "Fetch")) < len(
                _fetch_throttles(cluster, "kp-reader"))) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value for r in records)
        metrics = consumer.metrics()
    finally:
        consumer.close()
    assert got == VALUES  # every record, in order, once
    given = _fetch_throttles(cluster, "kp-reader")
    assert given and all(0 < t <= 11_000 for t in given)
    assert _logged_throttles(caplog, "Fetch") == given
    assert metrics["consumer-metrics"]["throttle-time-max"] == max(given)
    quotas = cluster.control.quotas()
    assert {t["quota"] for t in quotas["throttles"] if t["client_id"] == "kp-reader"} == {
        "consumer_byte_rate"}
    assert quotas["recorded"]["consumer_byte_rate"] == stored
