"""Consistent-read mode over the wire (the lowest acknowledged metadata offset from broker
heartbeats), with one broker's metadata paused.

Without the mode each broker answers from its own image, so a client reading Metadata
round-robin sees a new topic appear (on the brokers that applied it) and disappear again (on
the paused one). With `consistent_metadata` every broker answers Metadata, DescribeConfigs,
ListGroups and DescribeCluster from the image at min(applied, lowest acknowledged offset):
nothing newer than what every unfenced broker has acknowledged, so round-robin reads never
go back in time, and a write made through one broker becomes visible on every broker at the
same metadata offset. Heartbeats run every 100 ms here; every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.kraft.metadata_log import RESOURCE_BROKER, RESOURCE_TOPIC, TOPIC
from mockbroker.embedded import MockCluster
from tests.support.admin import DESCRIBE_CLUSTER, DESCRIBE_CONFIGS, create_topic
from tests.support.rawclient import RawClient, connect_broker

METADATA, LIST_GROUPS = 3, 16
HEARTBEAT_MS = 100
DEADLINE = 5.0  # seconds; normally reached within a few heartbeats
QUIET = 0.5  # seconds of reading while the paused broker holds the offset back


class Brokers:
    def __init__(self, mc: MockCluster) -> None:
        self.mc = mc
        self.clients: dict[int, RawClient] = {}

    async def request(self, broker: int, api_key: int, version: int,
                      body: dict[str, Any]) -> Struct:
        if broker not in self.clients:
            self.clients[broker] = await connect_broker(self.mc, broker)
        return await self.clients[broker].request(api_key, version, body)

    async def topics(self, broker: int) -> dict[str, list[int]]:
        """Every topic a broker's Metadata answer shows, with its partitions' leader epochs."""
        meta = await self.request(broker, METADATA, 12, {
            "topics": None, "allow_auto_topic_creation": False})
        return {t.name: [p.leader_epoch for p in t.partitions] for t in meta.topics}

    async def close(self) -> None:
        for client in self.clients.values():
            await client.close()


@pytest.fixture
async def plain() -> AsyncIterator[tuple[MockCluster, Brokers]]:
    async with MockCluster(brokers=3, heartbeat_interval_ms=HEARTBEAT_MS) as mc:
        brokers = Brokers(mc)
        yield mc, brokers
        await brokers.close()


@pytest.fixture
async def consistent() -> AsyncIterator[tuple[MockCluster, Brokers]]:
    async with MockCluster(brokers=3, heartbeat_interval_ms=HEARTBEAT_MS,
                           consistent_metadata=True) as mc:
        brokers = Brokers(mc)
        yield mc, brokers
        await brokers.close()


async def create_through(brokers: Brokers, broker: int, name: str) -> None:
    if broker not in brokers.clients:
        brokers.clients[broker] = await connect_broker(brokers.mc, broker)
    await create_topic(brokers.clients[broker], name, 2, 3)


async def read_until(brokers: Brokers, done: Callable[[list[tuple[int, dict[str, list[int]]]]],
                                                      bool], seconds: float
                     ) -> list[tuple[int, dict[str, list[int]]]]:
    """Round-robin Metadata reads until `done(reads)` or the time is up."""
    reads: list[tuple[int, dict[str, list[int]]]] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not done(reads):
        for broker in range(3):
            reads.append((broker, await brokers.topics(broker)))
        await asyncio.sleep(0.01)
    return reads


def assert_never_older(reads: list[tuple[int, dict[str, list[int]]]]) -> None:
    """No read shows less than an earlier one: no topic vanishes, no leader epoch drops."""
    newest: dict[str, list[int]] = {}
    for i, (broker, seen) in enumerate(reads):
        for name, epochs in newest.items():
            assert name in seen, f"read {i} (broker {broker}) lost topic {name}"
            assert all(a >= b for a, b in zip(seen[name], epochs, strict=False)), (
                f"read {i} (broker {broker}): {name} epochs {seen[name]} after {epochs}")
        newest = {name: list(epochs) for name, epochs in seen.items()}


async def test_without_the_mode_a_new_topic_appears_and_disappears(plain: Any) -> None:
    mc, brokers = plain
    mc.cluster.brokers[2].paused = True
    await create_through(brokers, 0, "fresh")
    seen = [("fresh" in (await brokers.topics(b))) for _ in range(2) for b in range(3)]
    assert seen == [True, True, False, True, True, False]
    # DescribeConfigs, too, answers from each broker's own image
    codes = []
    for broker in (0, 2):
        response = await brokers.request(broker, DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": RESOURCE_TOPIC, "resource_name": "fresh",
             "configuration_keys": ["cleanup.policy"]}]})
        codes.append(response.results[0].error_code)
    assert codes == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


async def test_consistent_reads_never_show_an_older_view(consistent: Any) -> None:
    mc, brokers = consistent
    await create_through(brokers, 0, "base")
    await read_until(brokers, lambda r: len(r) >= 3 and all("base" in s for _, s in r[-3:]),
                     DEADLINE)
    mc.cluster.brokers[2].paused = True
    await create_through(brokers, 0, "fresh")
    mc.cluster.elect_leader("base", 0)  # b0 and b1 apply epoch 1; b2 does not
    held = await read_until(brokers, lambda r: False, QUIET)
    assert held and all("fresh" not in seen and seen["base"][0] == 0 for _, seen in held)
    assert mc.cluster.lowest_acknowledged_offset == mc.cluster.brokers[2].applied_offset
    mc.cluster.brokers[2].paused = False  # the next tick catches it up; no propagate() here
    after = await read_until(
        brokers, lambda r: len(r) >= 3 and all("fresh" in s for _, s in r[-3:]), DEADLINE)
    assert all("fresh" in seen and seen["base"][0] == 1 for _, seen in after[-3:])
    assert_never_older(held + after)


async def test_read_after_write_is_visible_everywhere_at_one_offset(consistent: Any) -> None:
    mc, brokers = consistent
    cluster = mc.cluster
    await create_through(brokers, 0, "written")
    topic_offset = max(r.offset for r in cluster.controller.log.records
                       if r.record_type == TOPIC and r.data["name"] == "written")
    reads: list[tuple[int, bool]] = []
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline and sum(v for _, v in reads[-3:]) < 3:
        for broker in range(3):
            views = {cluster.read_image(n).offset for n in cluster.brokers.values()}
            assert len(views) == 1, f"brokers read at different offsets {views}"
            before = views.pop()
            visible = "written" in await brokers.topics(broker)
            after = cluster.read_image(cluster.brokers[broker]).offset
            assert (after >= topic_offset) if visible else (before < topic_offset)
            reads.append((broker, visible))
        await asyncio.sleep(0.01)
    flags = [v for _, v in reads]
    assert flags[-3:] == [True] * 3
    first = flags.index(True)
    assert all(flags[first:]), f"visible, then not, on some broker: {reads}"


async def test_admin_reads_follow_the_lowest_acknowledged_offset(consistent: Any) -> None:
    mc, brokers = consistent
    cluster = mc.cluster
    cluster.groups.get_or_create("readers")
    cluster.brokers[2].paused = True
    cluster.create_topic("late", 1)
    cluster.controller.set_config(RESOURCE_BROKER, "", "log.retention.ms", "1234")
    cluster.propagate()
    await asyncio.sleep(3 * HEARTBEAT_MS / 1000)

    async def describe(broker: int) -> tuple[int, list[str]]:
        response = await brokers.request(broker, DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": RESOURCE_TOPIC, "resource_name": "late",
             "configuration_keys": None},
            {"resource_type": RESOURCE_BROKER, "resource_name": "",
             "configuration_keys": None}]})
        topic, default = response.results
        return topic.error_code, [c.name for c in default.configs]

    assert await describe(0) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    described = await brokers.request(1, DESCRIBE_CLUSTER, 1, {
        "include_cluster_authorized_operations": False, "endpoint_type": 1})
    assert (described.cluster_id, described.controller_id) == (cluster.config.cluster_id, 0)
    assert [b.broker_id for b in described.brokers] == [0, 1, 2]
    listed = []
    for broker in range(3):
        response = await brokers.request(broker, LIST_GROUPS, 5, {
            "states_filter": [], "types_filter": []})
        listed += [(broker, g.group_id) for g in response.groups]
    assert [g for _, g in listed] == ["readers"]
    cluster.brokers[2].paused = False
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline and (await describe(0))[0] != 0:
        await asyncio.sleep(0.02)
    assert await describe(0) == (0, ["log.retention.ms"])
