"""Hostile input over the wire stays cheap: thousands of mutated frames over thousands of short
connections (tests/support/hostile.py: every advertised API drawn from its schema, plain
Produce requests that append, Fetch requests that open, use and close fetch
sessions and read stored batches, most of them mutated) leave no unhandled exception, no
handler failure, and every table the broker keeps per connection, client id, address, group,
producer, telemetry client, quota entity or fetch session within its bound, and those with
Kafka's expiry empty once Kafka's schedule has passed (issue 24: a million such frames raised
the broker's RSS from 51 MB to 360 MB). Sizes are asserted, not timing or memory.

The cluster runs on a manual clock that starts at the wall clock's time (record timestamps
are the senders'), so the test moves time past each expiry at the end instead of waiting.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from mockbroker.cluster import ManualClock
from mockbroker.cluster.client_telemetry.telemetry_receiver import MAX_CLIENTS
from mockbroker.cluster.groups.classic_groups import (
    DEFAULT_CLEANUP_INTERVAL_MS,
    DEFAULT_OFFSETS_RETENTION_MS,
)
from mockbroker.cluster.log.fetch_sessions import MAX_SESSIONS
from mockbroker.cluster.log.log_manager import DEFAULT_PRODUCER_ID_EXPIRATION_MS
from mockbroker.cluster.quotas.quota_manager import SAMPLE_MS, SAMPLES
from mockbroker.embedded import MockCluster
from tests.support.hostile import HostileFrames, Tally, leaders_by_port, run_senders

TOPICS = ("alpha", "beta", "gamma")
SEED = 24
FRAMES = 4000  # without quotas
QUOTA_FRAMES = 1500  # with a default client-id quota: every request measured
SENDERS = 16
SECONDS = 25  # each phase stops here whatever it has sent
SETTLE_SECONDS = 5
VALID_SHARE = 0.3  # frames sent unmutated: enough reach the stores to fill their tables
TRACE_BUFFER = 200


def tables(mc: MockCluster) -> dict[str, int]:
    """The sizes of what the broker keeps per thing a client names."""
    cluster, server = mc.cluster, mc.server
    logs = [log for replicas in cluster.replication.partitions.values()
            for log in replicas.logs.values()]
    share = cluster._share_groups
    return {
        "open_connections": len(server.hooks.connections),
        "connection_tasks": sum(s.open_connections for s in server.servers.values()),
        "fetch_sessions": max(len(b.fetch_sessions.sessions)
                              for b in cluster.brokers.values()),
        "quota_sensors": cluster.quotas.sensor_count(),
        "mutation_buckets": cluster.mutation_quotas.bucket_count,
        "connection_ip_rates": sum(q.tracked_ips for q in server.connection_quotas.values()),
        "telemetry_instances": len(cluster.telemetry.instances),
        "telemetry_clients": len(cluster.telemetry.clients),
        "telemetry_addresses": len(cluster.telemetry._software),
        "classic_groups": len(cluster.groups.groups),
        "consumer_groups": len(cluster.consumer_groups.groups),
        "share_groups": 0 if share is None else len(share.groups),
        "share_sessions": 0 if share is None else len(share.sessions),
        "producer_states": sum(len(log.producer_states) for log in logs),
        "open_transactions_on_partitions": sum(
            1 for log in logs for e in log.producer_states.values()
            if e.current_txn_first_offset is not None),
        "trace_records": 0 if server.hooks.trace is None else len(server.hooks.trace.records),
    }


async def _settled(mc: MockCluster) -> None:
    """Every connection the senders opened has ended on the broker's side (bounded)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        sizes = tables(mc)
        if sizes["open_connections"] == sizes["connection_tasks"] == 0:
            return
        await asyncio.sleep(0.05)


async def _advance(mc: MockCluster, clock: ManualClock, ms: int) -> None:
    clock.advance(ms)
    mc.cluster.tick()
    await asyncio.sleep(0)


async def test_hostile_frames_leave_bounded_state(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    clock = ManualClock(int(time.time() * 1000))
    try:
        async with MockCluster(brokers=3, clock=clock) as mc:
            cluster = mc.cluster
            for name in TOPICS:
                cluster.create_topic(name, 3, 3)
            ports = [node.port for node in cluster.brokers.values()]
            advertised = [(key, low, high) for key, (low, high) in mc.server.advertised.items()]
            source = HostileFrames(
                SEED, TOPICS, advertised,
                topic_ids=[cluster.image.topics[n].topic_id for n in TOPICS],
                leaders=leaders_by_port(cluster, TOPICS), valid_share=VALID_SHARE)
            tally = await run_senders(source, ports, frames=FRAMES, senders=SENDERS,
                                      seconds=SECONDS)
            await _settled(mc)
            sizes = tables(mc)
            # the stores were reached, not just the framing
            assert any(log.log_end_offset > 0 for replicas in cluster.replication.partitions.values()
                       for log in replicas.logs.values())
            assert sum(b.fetch_sessions._next_id - 1 for b in cluster.brokers.values()) > 0
            assert tally.connections > FRAMES // 4 and tally.closed_by_broker > 0
            assert sizes["open_connections"] == sizes["connection_tasks"] == 0, sizes
            assert sizes["fetch_sessions"] <= MAX_SESSIONS, sizes
            assert sizes["telemetry_instances"] <= MAX_CLIENTS, sizes
            assert sizes["telemetry_addresses"] == 0, sizes  # every connection closed
            assert sizes["quota_sensors"] == 0, sizes  # no quota: nothing measured

            # a default client-id quota (too high to throttle): each client id is measured;
            # and the request trace on, with a small buffer
            await mc.control.set_quota({"client-id": None}, {
                "producer_byte_rate": 1e12, "consumer_byte_rate": 1e12,
                "request_percentage": 1e9, "controller_mutation_rate": 1e9})
            await mc.control.start_trace(buffer=TRACE_BUFFER)
            await run_senders(source, ports, frames=QUOTA_FRAMES, senders=SENDERS,
                              seconds=SECONDS, tally=tally)
            await _settled(mc)
            measured = tables(mc)
            assert measured["quota_sensors"] > 0, measured
            assert measured["trace_records"] == TRACE_BUFFER, measured
            assert measured["telemetry_addresses"] == 0, measured
            await mc.control.stop_trace()
            await _advance(mc, clock, SAMPLES * SAMPLE_MS)
            after_window = tables(mc)
            assert after_window["quota_sensors"] == 0, after_window
            assert after_window["mutation_buckets"] == 0, after_window

            # Kafka's schedules: producers idle for producer.id.expiration.ms, sessions
            # over, empty groups cleaned up, telemetry instances expired
            await _advance(mc, clock, DEFAULT_PRODUCER_ID_EXPIRATION_MS)
            await _advance(mc, clock, DEFAULT_CLEANUP_INTERVAL_MS)
            final = tables(mc)
            with_offsets = cluster.groups.offsets.groups()
            assert set(cluster.groups.groups) <= with_offsets, final
            assert set(cluster.consumer_groups.groups) <= with_offsets, final
            assert final["telemetry_instances"] == 0, final
            assert final["producer_states"] == final["open_transactions_on_partitions"], final
            assert final["open_connections"] == 0, final
            # ... and offsets.retention.minutes: the groups kept for their offsets go too
            await _advance(mc, clock, DEFAULT_OFFSETS_RETENTION_MS)
            await _advance(mc, clock, DEFAULT_CLEANUP_INTERVAL_MS)
            assert cluster.groups.offsets.groups() == set()
            assert (len(cluster.groups.groups), len(cluster.consumer_groups.groups)) == (0, 0)
    finally:
        loop.set_exception_handler(previous)
    assert unhandled == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_tally_counts_frames_by_kind() -> None:
    tally = Tally()
    tally.add("cut")
    tally.add("cut")
    assert tally.kinds == {"cut": 2}
