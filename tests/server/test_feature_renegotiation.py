"""KIP-778 ApiVersions renegotiation on the wire (raw codec): after UpdateFeatures upgrades
metadata.version, each broker's ApiVersions reports its own image's level (a paused broker the
old one); once every broker applied the record (the lowest acknowledged offset passes it),
each broker closes the connections open at that moment, exactly once, and the state verb
reports it; connections opened afterwards stay open."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from mockbroker.cluster import ManualClock
from mockbroker.cluster.kraft.controller import METADATA_VERSION
from mockbroker.embedded import MockCluster
from tests.server.test_quorum_features import finalized, update, upgrade
from tests.support.admin import running_cluster
from tests.support.rawclient import RawClient, connect_broker

OLDER = METADATA_VERSION - 1
BROKERS = (0, 1, 2)


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with running_cluster(clock=ManualClock(), metadata_version=OLDER) as cluster:
        yield cluster


async def _level(client: RawClient) -> tuple[int, int]:
    """(metadata.version level, finalized features epoch) the broker advertises."""
    features, epoch = await finalized(client)
    [level] = [high for name, _, high in features if name == "metadata.version"]
    return level, epoch


def _open_to(mc: MockCluster, broker: int) -> int:
    return sum(1 for c in mc.server.hooks.connections.values() if c.broker_id == broker)


async def test_each_broker_advertises_its_own_level_and_closes_once(
        mc: MockCluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mockbroker.server")
    cluster = mc.cluster
    cluster.heartbeat_round()
    tracer = mc.control.enable_trace()
    before = [await connect_broker(mc, b) for b in BROKERS]
    try:
        bootstrap = cluster.controller.log.end_offset - 1
        assert [await _level(c) for c in before] == [(OLDER, bootstrap)] * 3
        cluster.pause_metadata(2)
        response = await update(before[0], 1, upgrade(METADATA_VERSION))
        assert [r.error_code for r in response.results] == [0]
        record = cluster.controller.log.end_offset - 1
        assert [await _level(c) for c in before] == [
            (METADATA_VERSION, record), (METADATA_VERSION, record), (OLDER, bootstrap)]
        state = await mc.control.state()
        assert [b["metadata_version"] for b in state["brokers"]] == [
            METADATA_VERSION, METADATA_VERSION, OLDER]
        assert [b["renegotiation_pending_offset"] for b in state["brokers"]] == [record] * 3

        for _ in range(3):  # broker 2 has not applied it: nobody closes
            cluster.heartbeat_round()
        assert [await _level(c) for c in before][2] == (OLDER, bootstrap)  # still open
        assert [_open_to(mc, b) for b in BROKERS] == [1, 1, 1]
        assert cluster.renegotiation.events == []

        cluster.resume_metadata(2)
        assert await _level(before[2]) == (METADATA_VERSION, record)
        seq = tracer.last_seq
        cluster.heartbeat_round()  # every broker learns the lowest offset passed the record
        assert [await c.is_closed() for c in before] == [True] * 3
        decisions = [r.getMessage() for r in caplog.records if "renegotiation" in r.getMessage()]
        assert decisions == [
            f"broker {b}: lowest acknowledged metadata offset {record} passed metadata.version "
            f"{METADATA_VERSION} (record {record}): closed 1 client connection(s) for "
            "ApiVersions renegotiation" for b in BROKERS]
        state = await mc.control.state()
        assert [(e["broker"], e["metadata_version"], e["record_offset"],
                 e["closed_connections"])
                for e in state["controller"]["apiversions_renegotiations"]] == [
            (b, METADATA_VERSION, record, 1) for b in BROKERS]
        assert [b["metadata_version"] for b in state["brokers"]] == [METADATA_VERSION] * 3
        assert [b["renegotiation_pending_offset"] for b in state["brokers"]] == [None] * 3
    finally:
        for client in before:
            await client.close()

    after = [await connect_broker(mc, b) for b in BROKERS]
    try:
        assert [await _level(c) for c in after] == [(METADATA_VERSION, record)] * 3
        for _ in range(3):  # decided once: the new connections stay open
            cluster.heartbeat_round()
        assert [await _level(c) for c in after] == [(METADATA_VERSION, record)] * 3
        assert len(cluster.renegotiation.events) == 3
        renegotiated = [r for r in tracer.tail(None, apis=[18], since=seq)]
        assert sorted(r.broker for r in renegotiated) == [0, 0, 1, 1, 2, 2]
    finally:
        for client in after:
            await client.close()


async def test_a_request_in_flight_is_answered_before_the_close(mc: MockCluster) -> None:
    cluster = mc.cluster
    cluster.heartbeat_round()
    async with await connect_broker(mc, 1) as client:
        await update(client, 1, upgrade(METADATA_VERSION))
        [info] = [c for c in mc.server.hooks.connections.values() if c.broker_id == 1]
        # a Fetch parks for up to max_wait_ms: the close waits for its answer
        correlation = await client.send(1, 12, {
            "replica_id": -1, "max_wait_ms": 300, "min_bytes": 1, "max_bytes": 1024,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [],
            "forgotten_topics_data": [], "rack_id": ""})
        for _ in range(100):  # until the broker is handling it
            if info.requests >= 2:  # UpdateFeatures, then the Fetch
                break
            await asyncio.sleep(0.01)
        cluster.heartbeat_round()
        assert info.connection_id in mc.server.hooks.connections  # parked: not closed yet
        response = await client.receive(1, 12, correlation)
        assert response.body.error_code == 0
        assert await client.is_closed()
    assert [e.closed_connections for e in cluster.renegotiation.events
            if e.broker_id == 1] == [1]
