"""The replication verbs (pause-replication, delay-replication, resume-replication) from
Python, HTTP, `mockbroker ctl` and a scenario step, and a parked acks=all Produce answered
REQUEST_TIMED_OUT, or once replication catches up, over the wire."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import ManualClock
from mockbroker.control import ControlError
from mockbroker.embedded import MockCluster
from tests.control.test_ctl import ctl
from tests.support.cli import http_json, start_cli, stop
from tests.support.rawclient import connect_broker

TOPIC = "repl"
PRODUCE = 0


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=3, clock=ManualClock(), control_port=0,
                           replica_lag_time_max_ms=5000) as cluster:
        await cluster.control.create_topic(TOPIC, partitions=1, replication_factor=3)
        yield cluster


def _replicas(state: dict[str, Any]) -> dict[int, dict[str, Any]]:
    entry = state["topics"][TOPIC]["partitions"][0]
    return {r["broker"]: r for r in entry["replica_logs"]}


async def _produce(mc: MockCluster, value: bytes, timeout_ms: int, acks: int = -1,
                   broker: int | None = None) -> int:
    leader = mc.cluster.image.partition(TOPIC, 0).leader if broker is None else broker
    async with await connect_broker(mc, leader) as client:
        body = await client.request(PRODUCE, 9, {
            "transactional_id": None, "acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": TOPIC, "partition_data": [
                {"index": 0, "records": build_batch([RecordSpec(value=value)])}]}]})
    error: int = body.responses[0].partition_responses[0].error_code
    return error


async def test_a_paused_partition_parks_acks_all_until_the_request_timeout(
        mc: MockCluster) -> None:
    answer = await mc.control.pause_replication(topic=TOPIC, partition=0)
    assert [p["topic"] for p in answer["partitions"]] == [TOPIC]
    assert await _produce(mc, b"late", timeout_ms=200) == ErrorCode.REQUEST_TIMED_OUT
    replicas = _replicas(await mc.control.state())
    leader = mc.cluster.image.partition(TOPIC, 0).leader
    assert {b: (r["log_end_offset"], r["lag"], r["in_isr"]) for b, r in replicas.items()} == {
        b: ((1, 0, True) if b == leader else (0, 1, True)) for b in (0, 1, 2)}
    assert replicas[leader]["high_watermark"] == 0


async def test_resuming_answers_the_parked_produce(mc: MockCluster) -> None:
    await mc.control.pause_replication(topic=TOPIC, partition=0)
    parked = asyncio.ensure_future(_produce(mc, b"v", timeout_ms=30_000))
    for _ in range(200):  # bounded: until the produce is parked on the leader's log
        if mc.cluster.replicas(TOPIC, 0).leader_log().log_end_offset == 1:
            break
        await asyncio.sleep(0.01)
    assert not parked.done()
    await mc.control.resume_replication(topic=TOPIC, partition=0)
    assert await asyncio.wait_for(parked, 10) == ErrorCode.NONE


async def test_the_lag_rule_shrinks_the_isr_and_the_produce_is_answered(
        mc: MockCluster) -> None:
    leader = mc.cluster.image.partition(TOPIC, 0).leader
    follower = next(b for b in (0, 1, 2) if b != leader)
    await mc.control.pause_replication(broker=follower)
    parked = asyncio.ensure_future(_produce(mc, b"v", timeout_ms=30_000))
    for _ in range(200):
        if mc.cluster.replicas(TOPIC, 0).leader_log().log_end_offset == 1:
            break
        await asyncio.sleep(0.01)
    await mc.control.advance_clock(5001)
    assert await asyncio.wait_for(parked, 10) == ErrorCode.NONE  # min.insync.replicas 1
    replicas = _replicas(await mc.control.state())
    assert not replicas[follower]["in_isr"] and replicas[follower]["paused"]
    await mc.control.resume_replication()
    assert all(r["in_isr"] and r["lag"] == 0 for r in _replicas(
        await mc.control.state()).values())


async def test_refusals(mc: MockCluster) -> None:
    for kwargs, status in [({}, 400), ({"broker": 9}, 404),
                           ({"topic": "nope", "partition": 0}, 404),
                           ({"broker": 0, "topic": TOPIC, "partition": 0}, 400)]:
        with pytest.raises(ControlError) as info:
            await mc.control.pause_replication(**kwargs)
        assert info.value.status == status, kwargs
    with pytest.raises(ControlError):
        await mc.control.delay_replication(ms=-1, broker=0)


async def test_over_http_and_as_a_scenario_step(mc: MockCluster) -> None:
    url = mc.control_url
    assert url is not None

    def post(verb: str, body: Any) -> tuple[int, Any]:
        return http_json(f"{url}/{verb}", "POST", body)

    status, body = await asyncio.to_thread(post, "delay-replication", {"broker": 1, "ms": 300})
    assert status == 200 and all(r["delay_ms"] == 300 for p in body["partitions"]
                                 for r in p["replicas"] if r["broker"] == 1)
    status, body = await asyncio.to_thread(post, "load-scenario", {"scenario": {
        "steps": [{"do": "pause-replication", "args": {"broker": 2}, "for_ms": 600_000}]}})
    assert status == 200
    assert _replicas(await mc.control.state())[2]["paused"]
    status, body = await asyncio.to_thread(post, "stop-scenario", {})
    assert [e["do"] for e in body["fired"]] == ["pause-replication", "resume-replication"]
    assert not _replicas(await mc.control.state())[2]["paused"]


async def test_an_isolated_leader_is_fenced_by_timeout_and_its_zombie_writes_are_lost(
        mc: MockCluster) -> None:
    assert await _produce(mc, b"kept", timeout_ms=5000) == ErrorCode.NONE
    zombie = mc.cluster.image.partition(TOPIC, 0).leader
    isolated = await mc.control.isolate_broker(zombie)
    assert isolated["isolated"] and not isolated["fenced"]
    await mc.control.advance_clock(9001)  # broker.session.timeout.ms
    state = await mc.control.state()
    assert state["brokers"][zombie]["fenced"] and state["brokers"][zombie]["listening"]
    assert state["topics"][TOPIC]["partitions"][0]["leader"] != zombie
    # its own image still says it leads: an acks=1 write is acknowledged, then lost
    assert await _produce(mc, b"zombie", 5000, acks=1, broker=zombie) == ErrorCode.NONE
    healed = await mc.control.heal_broker(zombie)
    assert not healed["fenced"] and not healed["isolated"]
    replicas = _replicas(await mc.control.state())
    assert {r["log_end_offset"] for r in replicas.values()} == {1}
    assert replicas[zombie]["in_isr"]


def test_from_the_shell() -> None:
    proc, fields = start_cli("--brokers", "3")
    try:
        url = fields["control"]
        assert ctl("create-topic", "s", "1", "3", url=url)[0] == 0
        code, paused, _ = ctl("pause-replication", "broker=1", url=url)
        assert code == 0 and paused["broker"] == 1
        code, resumed, _ = ctl("resume-replication", url=url)
        assert code == 0 and not any(r["paused"] for p in resumed["partitions"]
                                     for r in p["replicas"])
    finally:
        stop(proc)
