"""Client quotas through the metadata log, over the wire: AlterClientQuotas on one broker
reaches every broker through the controller, DescribeClientQuotas answers from the receiving
broker's image, and a broker whose metadata is paused keeps describing and enforcing the old
quota until it catches up, as a lagging Kafka broker does; a cluster restarted on its data
directory comes back with its quotas (the metadata log is persisted)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import ManualClock
from mockbroker.embedded import MockCluster
from tests.support.rawclient import RawClient, connect_broker

# quota sample windows are aligned to the clock: a start on a window boundary keeps the
# expected throttle times exact
WINDOW_ALIGNED_START_MS = 1_700_000_000_000

PRODUCE, DESCRIBE, ALTER = 0, 48, 49
ANY = 2


@pytest.fixture
async def cluster() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=2, clock=ManualClock(WINDOW_ALIGNED_START_MS)) as mc:
        yield mc


async def _describe(client: RawClient) -> list[tuple[tuple[tuple[str, str | None], ...],
                                                     dict[str, float]]]:
    answer = await client.request(DESCRIBE, 1, {
        "components": [{"entity_type": "client-id", "match_type": ANY, "match": None}],
        "strict": False})
    assert answer.error_code == 0
    return [(tuple((e.entity_type, e.entity_name) for e in entry.entity),
             {v.key: v.value for v in entry["values"]}) for entry in answer.entries]


async def _set_rate(client: RawClient, rate: float) -> None:
    answer = await client.request(ALTER, 1, {"validate_only": False, "entries": [{
        "entity": [{"entity_type": "client-id", "entity_name": "rawclient"}],
        "ops": [{"key": "producer_byte_rate", "value": rate, "remove": False}]}]})
    assert [e.error_code for e in answer.entries] == [0]


def _produce_body(topic: str, partition: int, batch: bytes) -> dict[str, Any]:
    return {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}


async def test_a_paused_broker_describes_and_enforces_the_old_quota(
        cluster: MockCluster) -> None:
    cluster.cluster.create_topic("lagging", 2, 1)
    leaders = [cluster.cluster.image.partition("lagging", p).leader for p in range(2)]
    assert sorted(leaders) == [0, 1]
    clients = [await connect_broker(cluster, b) for b in range(2)]
    batch = build_batch([RecordSpec(value=b"q" * 1000)], base_timestamp=1)
    size = len(batch)
    # one batch: far under / twice over (whole numbers: Kafka refuses a fractional rate)
    generous, tight = float(size), float(size // 20)

    await _set_rate(clients[0], generous)
    await cluster.control.pause_metadata(1)
    await _set_rate(clients[0], tight)  # broker 1 has not applied this one
    entity = (("client-id", "rawclient"),)
    assert await _describe(clients[0]) == [(entity, {"producer_byte_rate": tight})]
    assert await _describe(clients[1]) == [(entity, {"producer_byte_rate": generous})]
    throttles = {}
    for broker in (0, 1):
        partition = leaders.index(broker)
        answer = await clients[broker].request(
            PRODUCE, 9, _produce_body("lagging", partition, batch))
        throttles[broker] = answer.throttle_time_ms
    assert throttles == {0: int((size / 10 - tight) / tight * 10_000), 1: 0}

    await cluster.control.resume_metadata(1)
    assert await _describe(clients[1]) == [(entity, {"producer_byte_rate": tight})]
    again = await clients[1].request(PRODUCE, 9,
                                     _produce_body("lagging", leaders.index(1), batch))
    # broker 1 measured the first batch too (under its old quota): two batches now, capped
    # at the 11 s window
    assert again.throttle_time_ms == min(11_000,
                                         int((2 * size / 10 - tight) / tight * 10_000))


async def test_quotas_set_over_the_wire_survive_a_restart_on_the_data_dir(
        tmp_path: Path) -> None:
    async with MockCluster(brokers=1, data_dir=str(tmp_path)) as first:
        await _set_rate(await connect_broker(first, 0), 2048.0)
    async with MockCluster(brokers=1, data_dir=str(tmp_path)) as second:
        entity = (("client-id", "rawclient"),)
        assert await _describe(await connect_broker(second, 0)) == [
            (entity, {"producer_byte_rate": 2048.0})]
        assert (await second.control.quotas())["entities"] == [
            {"entity": {"client-id": "rawclient"}, "values": {"producer_byte_rate": 2048.0}}]
