"""The run-log-cleaner verb from Python, HTTP and `mockbroker ctl`, the `log` entry of
`state`, and retention driven by advance-clock (log.retention.check.interval.ms)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import ManualClock
from mockbroker.control import ControlError
from mockbroker.embedded import MockCluster
from tests.control.test_ctl import ctl
from tests.support.cli import http_json

TOPIC = "kv"


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=3, clock=ManualClock(), control_port=0, broker_properties={
            "log.retention.check.interval.ms": "60000"}) as cluster:
        await cluster.control.create_topic(TOPIC, partitions=1, configs={
            "cleanup.policy": "compact,delete", "internal.segment.bytes": 100, "retention.ms": 600_000})
        yield cluster


def _produce(mc: MockCluster, *keys: bytes, one_batch: bool = False) -> None:
    part = mc.cluster.image.partition(TOPIC, 0)
    assert part is not None
    now = mc.cluster.clock.now_ms()
    batches = [[key] for key in keys] if not one_batch else [list(keys)]
    for batch_keys in batches:
        batch = build_batch([RecordSpec(key=key, value=b"x", timestamp=now)
                             for key in batch_keys])
        assert mc.cluster.produce(mc.cluster.brokers[part.leader], TOPIC, 0, batch,
                                  acks=-1).ok


async def test_run_log_cleaner_from_python_http_and_ctl(mc: MockCluster) -> None:
    _produce(mc, b"a", b"a", b"a", one_batch=True)  # offsets 0-2 in one segment
    _produce(mc, b"b")  # 3, the active segment
    state = (await mc.control.state())["topics"][TOPIC]["partitions"][0]["log"]
    assert state["segments"] == 2 and state["log_start_offset"] == 0
    assert state["cleaner_last_run_ms"] is None and state["dirty_ratio"] == 1.0
    answer = await mc.control.run_log_cleaner(topic=TOPIC)
    assert [(r["broker"], r["cleaned"], r["records_removed"]) for r in answer["replicas"]] \
        == [(0, True, 2), (1, True, 2), (2, True, 2)]
    [entry] = answer["partitions"]
    assert entry["cleaner_checkpoint"] == 3 and entry["dirty_ratio"] == 0.0
    # wait-topic-messages counts the records left (offsets 2 and 3), not the offsets 0-3
    waited = await mc.control.wait_topic_messages(TOPIC, 2, timeout_ms=0)
    assert waited["observed"] == {"messages": 2}
    url = mc.control_url
    assert url is not None
    status, body = await asyncio.to_thread(http_json, f"{url}/run-log-cleaner", "POST",
                                           {"topic": TOPIC, "force": True})
    assert status == 200 and [r["records_removed"] for r in body["replicas"]] == [0, 0, 0]
    status, body = await asyncio.to_thread(http_json, f"{url}/run-log-cleaner", "POST",
                                           {"topic": "nope"})
    assert status == 404 and "unknown topic" in body["error"]
    code, out, _ = await asyncio.to_thread(ctl, "run-log-cleaner", TOPIC, url=url)
    assert code == 0 and out["replicas"] == []  # nothing dirty, nothing expired
    with pytest.raises(ControlError):
        await mc.control.run_log_cleaner(topic=TOPIC, force="yes")  # type: ignore[arg-type]


async def test_advance_clock_runs_retention_at_the_check_interval(mc: MockCluster) -> None:
    _produce(mc, b"a", b"b")
    await mc.control.advance_clock(ms=30_000)
    _produce(mc, b"c")
    await mc.control.advance_clock(ms=580_001)  # a, b are 610 s old: one step, one check
    log = (await mc.control.state())["topics"][TOPIC]["partitions"][0]["log"]
    assert log["log_start_offset"] == 2 and log["segments"] == 1


async def test_the_web_view_shows_segments_size_and_dirty_ratio(mc: MockCluster) -> None:
    from mockbroker.control.webview import render_view

    _produce(mc, b"a", b"a")
    state = await mc.control.state()
    log = state["topics"][TOPIC]["partitions"][0]["log"]
    cell = f'<td class="segments">2 / {log["size_bytes"]} (dirty 1.0)</td>'
    assert cell in render_view(state)
