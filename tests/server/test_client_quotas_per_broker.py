"""Client quotas are measured per broker, as Kafka's ClientQuotaManager is one per broker:
a client spreading its produce over three brokers may send three times its quota in total,
while the same bytes to one broker are throttled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import ManualClock
from mockbroker.control.webview import render_view
from mockbroker.embedded import MockCluster
from tests.support.admin import leader_client

# quota sample windows are aligned to the clock: a start on a window boundary keeps the
# expected throttle times exact
WINDOW_ALIGNED_START_MS = 1_700_000_000_000

PRODUCE = 0


@pytest.fixture
async def cluster() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=3, clock=ManualClock(WINDOW_ALIGNED_START_MS)) as mc:
        yield mc


def _produce_body(topic: str, partition: int, batch: bytes) -> dict[str, Any]:
    return {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}


async def test_each_broker_measures_only_what_it_received(cluster: MockCluster) -> None:
    cluster.cluster.create_topic("spread", 3, 1)
    leaders = {p: cluster.cluster.image.partition("spread", p).leader for p in range(3)}
    assert sorted(leaders.values()) == [0, 1, 2]
    batch = build_batch([RecordSpec(value=b"z" * 1000) for _ in range(3)], base_timestamp=1)
    size = len(batch)
    # one batch per broker stays under the quota (size / 10 s); two to one broker do not
    quota = size / 10 * 1.5
    await cluster.control.set_quota({"client-id": "rawclient"}, {"producer_byte_rate": quota})
    clients = {p: await leader_client(cluster, "spread", p) for p in range(3)}
    for partition, client in clients.items():
        answer = await client.request(PRODUCE, 9, _produce_body("spread", partition, batch))
        assert answer.throttle_time_ms == 0, partition
    state = await cluster.control.quotas()
    assert state["recorded"]["producer_byte_rate"] == 3 * size  # summed over the brokers
    assert state["throttled_responses"]["producer_byte_rate"] == 0

    second = await clients[0].request(PRODUCE, 9, _produce_body("spread", 0, batch))
    expected = int((2 * size / 10 - quota) / quota * 10_000)  # only broker 0's two batches
    assert second.throttle_time_ms == expected > 0
    state = await cluster.control.quotas()
    assert [(t["broker"], t["quota"], t["throttle_time_ms"]) for t in state["throttles"]] == [
        (leaders[0], "producer_byte_rate", expected)]
    # the web view shows the entity and the throttle with its broker
    view = render_view(await cluster.control.state())
    assert f"<td>client-id=rawclient</td><td>producer_byte_rate={quota:g}</td>" in view
    assert (f"<td>{leaders[0]}</td><td>ANONYMOUS</td><td>rawclient</td>"
            f"<td>producer_byte_rate</td><td>{expected}</td>") in view
