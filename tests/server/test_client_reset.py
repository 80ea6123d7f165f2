"""A client that resets its connection while its request is parked ends that connection
quietly, and the parked request is cleaned up.

Under uvloop (the CLI and MockClusterThread run on it) a write to a transport the peer has
reset raises RuntimeError ("unable to perform operation on <TCPTransport closed=True ...>;
the handler is closed"); the connection must not let that escape as an unhandled exception
of the listener's client_connected_cb. Each scenario runs an in-process cluster on a fresh
uvloop loop (and on asyncio's own loop, which must behave the same), records every call of
the loop's exception handler, and resets a raw client (SO_LINGER 0, then close) while its
long-poll Fetch or its JoinGroup is parked. A parked Fetch's listeners go away with the
connection; a JoinGroup member stays in the group, as in Kafka, until its session times out.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import PartitionLog
from mockbroker.cluster.clock import ManualClock
from mockbroker.embedded import MockCluster
from mockbroker.server.broker_server import BrokerServer
from tests.support.rawclient import RawClient, connect_broker

FETCH, PRODUCE, JOIN_GROUP, HEARTBEAT = 1, 0, 11, 12
TOPIC = "reset"
LONG_POLL_MS = 60_000  # far beyond every bounded wait below: only the reset can end it
SCENARIO_TIMEOUT = 30.0
WAIT_STEP = 0.01
WAIT_LIMIT = 5.0

Scenario = Callable[[], Coroutine[Any, Any, None]]


def _uvloop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    uvloop = importlib.import_module("uvloop")
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


@pytest.fixture(params=["uvloop", "asyncio"])
def run_scenario(request: pytest.FixtureRequest,
                 caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[Scenario], None]]:
    """Run a scenario on a fresh loop of the kind asked for; afterwards assert that nothing
    reached the loop's exception handler and nothing was logged at WARNING or above."""
    factory = _uvloop_factory() if request.param == "uvloop" else asyncio.new_event_loop
    caplog.set_level(logging.WARNING)

    def run(scenario: Scenario) -> None:
        unhandled: list[dict[str, Any]] = []
        loop = factory()
        loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
        try:
            loop.run_until_complete(asyncio.wait_for(scenario(), SCENARIO_TIMEOUT))
            gc.collect()  # a future whose exception nobody read reports it when collected
        finally:
            loop.close()
        assert not unhandled, [(c.get("message"), repr(c.get("exception")))
                               for c in unhandled]
        noisy = [(r.name, r.getMessage()) for r in caplog.records
                 if r.levelno >= logging.WARNING]
        assert not noisy

    yield run


async def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait (bounded) for a condition that some other party makes true."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_LIMIT
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        await asyncio.sleep(WAIT_STEP)


async def _broker_noticed_reset(server: BrokerServer, connections_left: int) -> None:
    """Wait until the broker's side of the reset connection is closed: the connection has
    ended, or its transport is (the connection itself may still be parked). Reads the
    listener's private set of writers: nothing public tells a closed transport apart."""
    await _until(lambda: server.open_connections == connections_left
                 or any(w.transport.is_closing() for w in server._writers),
                 "the broker noticed the reset")


def _partition_log(mc: MockCluster) -> PartitionLog:
    topic = mc.cluster.image.topics[TOPIC]
    log = mc.cluster.log(topic.topic_id, 0)
    assert log is not None
    return log


def _listeners(mc: MockCluster, log: PartitionLog) -> tuple[int, int]:
    """How many callbacks wait on the partition's appends and on metadata changes."""
    return log.listener_count, mc.cluster.metadata_listener_count


def _fetch_body(max_wait_ms: int) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                 "last_fetched_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


async def _produce(client: RawClient, value: bytes) -> None:
    body = await client.request(PRODUCE, 9, {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [
            {"index": 0, "records": build_batch([RecordSpec(value=value)])}]}]})
    assert body.responses[0].partition_responses[0].error_code == ErrorCode.NONE


async def _park_fetch_then_reset(mc: MockCluster) -> tuple[RawClient, PartitionLog,
                                                           tuple[int, int]]:
    """A consumer parks a long-poll Fetch on an empty partition and resets its connection;
    returns a second (producer) connection, the partition's log and the listener counts
    from before the Fetch."""
    mc.cluster.create_topic(TOPIC, 1)
    log = _partition_log(mc)
    idle = _listeners(mc, log)
    server = mc.server.servers[0]
    producer = await connect_broker(mc, 0, client_id="producer")
    consumer = await connect_broker(mc, 0, client_id="consumer")
    await _until(lambda: server.open_connections == 2, "both connections accepted")
    await consumer.send(FETCH, 12, _fetch_body(LONG_POLL_MS))
    await _until(lambda: _listeners(mc, log)[0] > idle[0], "the Fetch parked")
    consumer.reset()
    await _broker_noticed_reset(server, connections_left=1)
    return producer, log, idle


def test_reset_then_append_wakes_nothing(run_scenario: Callable[[Scenario], None]) -> None:
    """An append after the reset would wake the parked Fetch, whose answer has nowhere to
    go: the connection ends quietly and the broker keeps serving."""

    async def scenario() -> None:
        async with MockCluster(brokers=1) as mc:
            producer, log, idle = await _park_fetch_then_reset(mc)
            async with producer:
                await _produce(producer, b"after the reset")
                server = mc.server.servers[0]
                await _until(lambda: server.open_connections == 1,
                             "the reset connection ended")
                await _until(lambda: _listeners(mc, log) == idle, "the Fetch let go")
                fresh = await connect_broker(mc, 0, client_id="after")
                async with fresh:
                    body = await fresh.request(FETCH, 12, _fetch_body(0))
                    assert body.responses[0].partitions[0].high_watermark == 1

    run_scenario(scenario)


def test_reset_alone_releases_the_parked_fetch(
        run_scenario: Callable[[Scenario], None]) -> None:
    """Nothing wakes the Fetch for a minute; the reset alone ends its connection and
    removes its listeners."""

    async def scenario() -> None:
        async with MockCluster(brokers=1) as mc:
            producer, log, idle = await _park_fetch_then_reset(mc)
            async with producer:
                server = mc.server.servers[0]
                await _until(lambda: _listeners(mc, log) == idle,
                             "the reset released the parked Fetch's listeners")
                await _until(lambda: server.open_connections == 1,
                             "the reset connection ended")
                await _produce(producer, b"nobody is waiting")

    run_scenario(scenario)


def test_reset_while_idle(run_scenario: Callable[[Scenario], None]) -> None:
    """The plain case: a reset between requests ends the connection without a word."""

    async def scenario() -> None:
        async with MockCluster(brokers=1) as mc:
            server = mc.server.servers[0]
            idle = await connect_broker(mc, 0, client_id="idle")
            await idle.request(18, 3, {"client_software_name": "t",
                                       "client_software_version": "1"})
            idle.reset()
            await _until(lambda: server.open_connections == 0, "the reset connection ended")

    run_scenario(scenario)


def _join_body(member_id: str, session_timeout_ms: int) -> dict[str, Any]:
    return {"group_id": "g", "session_timeout_ms": session_timeout_ms,
            "rebalance_timeout_ms": 60_000, "member_id": member_id, "group_instance_id": None,
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]}


def test_reset_while_join_group_waits(run_scenario: Callable[[Scenario], None]) -> None:
    """Member B's JoinGroup waits for member A to rejoin; B resets its connection. A's
    rejoin completes the rebalance with B still in it (Kafka keeps a member whose connection
    dropped), B's answer is dropped quietly, and B leaves only when its session expires."""
    clock = ManualClock()
    a_session, b_session = 45_000, 10_000

    async def scenario() -> None:
        async with MockCluster(brokers=1, clock=clock) as mc:
            server = mc.server.servers[0]
            a = await connect_broker(mc, 0, client_id="member-a")
            b = await connect_broker(mc, 0, client_id="member-b")
            async with a:
                first = await a.request(JOIN_GROUP, 3, _join_body("", a_session))
                assert first.error_code == ErrorCode.NONE and first.generation_id == 1
                await b.send(JOIN_GROUP, 3, _join_body("", b_session))
                await _until(lambda: len(mc.cluster.groups.describe("g").members) == 2,
                             "B's JoinGroup parked")
                b.reset()
                await _broker_noticed_reset(server, connections_left=1)
                rejoin = await a.request(JOIN_GROUP, 3, _join_body(first.member_id,
                                                                   a_session))
                assert rejoin.error_code == ErrorCode.NONE and rejoin.generation_id == 2
                assert len(rejoin.members) == 2  # B is part of the new generation
                await _until(lambda: server.open_connections == 1, "B's connection ended")
                b_id = next(m.member_id for m in rejoin.members
                            if m.member_id != first.member_id)
                members = {m.member_id for m in mc.cluster.groups.describe("g").members}
                assert members == {first.member_id, b_id}
                clock.advance(b_session + 1)  # B's session expires, A's does not
                mc.cluster.tick()
                members = {m.member_id for m in mc.cluster.groups.describe("g").members}
                assert members == {first.member_id}
                beat = await a.request(HEARTBEAT, 3, {
                    "group_id": "g", "generation_id": 2, "member_id": first.member_id,
                    "group_instance_id": None})
                assert beat.error_code == ErrorCode.REBALANCE_IN_PROGRESS

    run_scenario(scenario)
