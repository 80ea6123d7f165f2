"""Ids drawn as Kafka's Uuid.randomUuid draws them: no "-" in the printed (base64) form, never
the reserved ids. Kafka's topic ids, cluster ids and the member ids its group coordinator
assigns never contain "-"; about 29 % of plain random ids would."""

from __future__ import annotations

import re
import uuid

from mockbroker.cluster.cluster_config import new_cluster_id
from mockbroker.cluster.kafka_uuid import base64_id, random_id, random_uuid
from mockbroker.embedded import MockCluster
from tests.server.test_consumer_groups_wire import _coordinator, _join

KAFKA_ID = re.compile(r"[A-Za-z0-9_]{22}")  # URL-safe base64 of 16 bytes, without "-"
DRAWS = 300  # with plain random ids, all 300 free of "-" has probability 0.71 ** 300


def test_random_ids_are_what_kafka_draws() -> None:
    values = [random_uuid() for _ in range(DRAWS)]
    assert all(KAFKA_ID.fullmatch(base64_id(v)) for v in values)
    assert not {uuid.UUID(int=0), uuid.UUID(int=1)} & set(values)
    assert all(KAFKA_ID.fullmatch(random_id()) for _ in range(DRAWS))
    assert all(KAFKA_ID.fullmatch(new_cluster_id()) for _ in range(DRAWS))


async def test_topic_ids_have_no_dash() -> None:
    async with MockCluster(brokers=1) as mc:
        for index in range(DRAWS):
            mc.cluster.create_topic(f"t{index}", 1)
        ids = [base64_id(topic.topic_id) for topic in mc.cluster.image.topics.values()]
    assert len(ids) == DRAWS and all(KAFKA_ID.fullmatch(i) for i in ids)


async def test_a_member_id_the_coordinator_assigns_is_a_kafka_id() -> None:
    async with MockCluster(brokers=1) as mc:
        mc.cluster.create_topic("orders", 1)
        async with await _coordinator(mc, "uuid-g") as client:
            joined = await client.request(68, 0, _join("uuid-g", topics=["orders"]))
            assert KAFKA_ID.fullmatch(joined.member_id), joined.member_id
