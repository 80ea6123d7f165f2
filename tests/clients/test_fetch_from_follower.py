"""Fetch from follower (KIP-392) with real clients: racks r0, r1, r2 on brokers 0-2, Kafka's
RackAwareReplicaSelector, one partition led by broker 0 with followers 1 and 2.

- Each client, configured with client rack r1, reads every record, and the request trace
  shows its Fetch requests went to broker 1 (the leader's first answer names broker 1 as
  preferred read replica): librdkafka (client.rack), kafka-python 3 and aiokafka
  (client_rack) all send the rack id (Fetch v11+) and follow the redirection.
- Out of the ISR (kafka-python, aiokafka): replication to broker 1 is paused and records
  are written; once the follower leaves the ISR, the leader keeps a r1 consumer (whose
  preferred replica expired with metadata.max.age.ms) for itself, and the consumer reads
  the records the follower never got. librdkafka keeps its preferred replica longer (it stays on the lagging
  follower, reading nothing new, as it would with Kafka); a stopped follower sends it back
  to the leader at once.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from mockbroker.cluster.log.read_replicas import RACK_AWARE_SELECTOR
from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

TOPIC = "near"
DEADLINE = 20.0
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka")
FIRST = [f"v{i}".encode() for i in range(12)]
MORE = [f"w{i}".encode() for i in range(5)]


def _cluster(**config: Any) -> MockClusterThread:
    return MockClusterThread(brokers=3, broker_racks=("r0", "r1", "r2"),
                             replica_selector_class=RACK_AWARE_SELECTOR, trace_buffer=5000,
                             **config)


def _create_topic(mock: MockClusterThread) -> None:
    mock.call(lambda: mock.cluster.create_topic(TOPIC, assignments=[[0, 1, 2]]))


def _produce(boot: str, values: list[bytes], acks: Any = "all") -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=boot, acks=acks, enable_idempotence=False)
    try:
        for value in values:
            producer.send(TOPIC, value, partition=0).get(timeout=10)
    finally:
        producer.close(timeout=10)


class Reader:
    """One client's consumer of partition 0 from the beginning, in rack r1."""

    def __init__(self, client: str, boot: str, client_id: str) -> None:
        self.client = client
        self.values: list[bytes] = []
        settings = {"metadata_max_age_ms": 1000}  # the preferred replica expires with it
        if client == "confluent-kafka":
            from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

            self.consumer: Any = Consumer({
                "bootstrap.servers": boot, "group.id": client_id, "client.id": client_id,
                "client.rack": "r1", "enable.auto.commit": False})
            self.consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        elif client == "kafka-python":
            from kafka import KafkaConsumer, TopicPartition

            self.consumer = KafkaConsumer(bootstrap_servers=boot, client_id=client_id,
                                          group_id=None, auto_offset_reset="earliest",
                                          client_rack="r1", **settings)
            self.consumer.assign([TopicPartition(TOPIC, 0)])
        else:
            from aiokafka import AIOKafkaConsumer, TopicPartition

            async def start() -> Any:
                consumer = AIOKafkaConsumer(bootstrap_servers=boot, client_id=client_id,
                                            auto_offset_reset="earliest",
                                            enable_auto_commit=False, client_rack="r1",
                                            **settings)
                await consumer.start()
                consumer.assign([TopicPartition(TOPIC, 0)])
                return consumer

            self.loop = asyncio.new_event_loop()
            self.consumer = self.loop.run_until_complete(start())

    def read_until(self, count: int) -> list[bytes]:
        deadline = time.monotonic() + DEADLINE
        while len(self.values) < count and time.monotonic() < deadline:
            if self.client == "confluent-kafka":
                self.values += [m.value() for m in self.consumer.consume(100, 0.1)
                                if m.error() is None]
            elif self.client == "kafka-python":
                self.values += [r.value for rs in self.consumer.poll(100).values() for r in rs]
            else:
                batch = self.loop.run_until_complete(self.consumer.getmany(timeout_ms=100))
                self.values += [r.value for rs in batch.values() for r in rs]
        return self.values

    def close(self) -> None:
        if self.client == "aiokafka":
            self.loop.run_until_complete(self.consumer.stop())
            self.loop.close()
        else:
            self.consumer.close()


def _fetches(mock: MockClusterThread, client_id: str, since: int = 0) -> dict[int, int]:
    """How many Fetch requests each broker got from `client_id` (only it reads TOPIC;
    from v13 the requests name topics by id, which the trace does not resolve)."""
    trace = mock.control.trace(n=None, api="Fetch", since=since)
    counts: dict[int, int] = {}
    for record in trace["requests"]:
        if record["client_id"] == client_id:
            counts[record["broker"]] = counts.get(record["broker"], 0) + 1
    return counts


def _partition_state(mock: MockClusterThread) -> dict[str, Any]:
    state: dict[str, Any] = mock.control.state()["topics"][TOPIC]["partitions"][0]
    return state


@pytest.mark.parametrize("client", CLIENTS)
def test_a_consumer_in_rack_r1_reads_everything_from_the_follower_there(client: str) -> None:
    with _cluster() as mock:
        _create_topic(mock)
        _produce(mock.bootstrap_servers, FIRST)
        client_id = f"near-{client}"
        reader = Reader(client, mock.bootstrap_servers, client_id)
        try:
            assert reader.read_until(len(FIRST)) == FIRST
        finally:
            reader.close()
        fetches = _fetches(mock, client_id)
        assert fetches.get(1, 0) >= 1, fetches  # read from the follower in its rack
        assert fetches.get(2, 0) == 0, fetches
        state = mock.control.state()
        assert [b["rack"] for b in state["brokers"]] == ["r0", "r1", "r2"]
        assert state["topics"][TOPIC]["partitions"][0]["preferred_read_replica"] == 1


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_a_follower_out_of_the_isr_sends_the_consumer_back_to_the_leader(client: str) -> None:
    with _cluster(replica_lag_time_max_ms=300) as mock:
        _create_topic(mock)
        _produce(mock.bootstrap_servers, FIRST)
        client_id = f"back-{client}"
        reader = Reader(client, mock.bootstrap_servers, client_id)
        try:
            assert reader.read_until(len(FIRST)) == FIRST
            assert _fetches(mock, client_id).get(1, 0) >= 1
            mock.control.pause_replication(broker=1)
            _produce(mock.bootstrap_servers, MORE, acks=1)
            deadline = time.monotonic() + DEADLINE
            while _partition_state(mock)["isr"] != [0, 2] and time.monotonic() < deadline:
                time.sleep(0.05)
            part = _partition_state(mock)
            assert part["isr"] == [0, 2]
            follower = next(r for r in part["replica_logs"] if r["broker"] == 1)
            assert follower["log_end_offset"] == len(FIRST)  # it never got MORE
            since = mock.control.trace(n=1)["last_seq"]
            assert reader.read_until(len(FIRST) + len(MORE)) == FIRST + MORE
        finally:
            reader.close()
        assert _fetches(mock, client_id, since).get(0, 0) >= 1  # back on the leader
        assert _partition_state(mock)["preferred_read_replica"] == 0


def test_librdkafka_goes_back_to_the_leader_when_the_follower_stops() -> None:
    """librdkafka keeps a preferred replica far longer than metadata.max.age.ms (a lagging
    follower keeps it, as with Kafka); a stopped one sends it back to the leader at once."""
    with _cluster() as mock:
        _create_topic(mock)
        _produce(mock.bootstrap_servers, FIRST)
        reader = Reader("confluent-kafka", mock.bootstrap_servers, "stopped-follower")
        try:
            assert reader.read_until(len(FIRST)) == FIRST
            assert _fetches(mock, "stopped-follower").get(1, 0) >= 1
            since = mock.control.trace(n=1)["last_seq"]
            mock.control.stop_broker(1)
            _produce(mock.bootstrap_servers, MORE, acks=1)
            assert reader.read_until(len(FIRST) + len(MORE)) == FIRST + MORE
        finally:
            reader.close()
        assert _fetches(mock, "stopped-follower", since).get(0, 0) >= 1
        assert _partition_state(mock)["isr"] == [0, 2]
