"""Internal topics as real clients see them once a consumer group has been used: librdkafka's
list_topics shows `__consumer_offsets` (Kafka's metadata lists it), kafka-python and aiokafka
hide it (exclude_internal_topics, their default), and a produce to it is refused."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaConsumer

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import close_confluent

pytestmark = pytest.mark.clients

OFFSETS = "__consumer_offsets"


def _join_group(mock: MockClusterThread) -> None:
    consumer = Consumer({"bootstrap.servers": mock.bootstrap_servers, "group.id": "g"})
    try:
        consumer.subscribe(["orders"])
        for _ in range(40):  # bounded: until the group coordinator has been looked up
            consumer.poll(0.25)
            if OFFSETS in mock.control.state()["topics"]:
                break
    finally:
        close_confluent(consumer)


def test_internal_topics_per_client() -> None:
    with MockClusterThread(brokers=3) as mock:
        mock.control.create_topic("orders", partitions=2)
        admin = Producer({"bootstrap.servers": mock.bootstrap_servers})
        assert set(admin.list_topics(timeout=10).topics) == {"orders"}
        _join_group(mock)
        listed = admin.list_topics(timeout=10).topics
        assert set(listed) == {"orders", OFFSETS}
        assert len(listed[OFFSETS].partitions) == 50

        kafka_python = KafkaConsumer(bootstrap_servers=mock.bootstrap_servers)
        try:
            assert kafka_python.topics() == {"orders"}
        finally:
            kafka_python.close()

        async def aiokafka_topics() -> set[str]:
            consumer = AIOKafkaConsumer(bootstrap_servers=mock.bootstrap_servers)
            await consumer.start()
            try:
                return set(await consumer.topics())
            finally:
                await consumer.stop()

        assert asyncio.run(aiokafka_topics()) == {"orders"}

        errors: list[KafkaError | None] = []
        admin.produce(OFFSETS, b"not yours", partition=0,
                      on_delivery=lambda err, _msg: errors.append(err))
        assert admin.flush(10) == 0
        [error] = errors
        assert error is not None and error.code() == KafkaError.TOPIC_EXCEPTION
