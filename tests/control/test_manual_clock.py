"""A clock a test can drive: `--clock manual` and the advance-clock verb.

With a manual clock the cluster's time moves only when a test says so, so timeouts that
follow the cluster clock (metadata delays, transaction timeouts, group sessions) fire exactly
on demand, from any language: here over HTTP against the CLI, and in Python in-process.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.cluster import ManualClock
from mockbroker.control import ControlError
from mockbroker.embedded import MockCluster
from tests.support.cli import http_json, start_cli, stop


def _call(url: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    return http_json(url + path, method, body)


def _start_cli(*flags: str, env: dict[str, str] | None = None
               ) -> tuple[subprocess.Popen[str], str]:
    proc, fields = start_cli("--brokers", "2", *flags, env=env)
    return proc, fields["control"]


@pytest.fixture(params=["flag", "env"])
def manual_cli(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "flag":
        proc, url = _start_cli("--clock", "manual")
    else:
        proc, url = _start_cli(env={"MOCKBROKER_CLOCK": "manual"})
    try:
        yield url
    finally:
        stop(proc)


def test_delayed_metadata_catches_up_exactly_when_the_clock_says(manual_cli: str) -> None:
    url = manual_cli
    status, state = _call(url, "GET", "/state")
    assert status == 200 and state["clock"]["mode"] == "manual"
    start = state["clock"]["now_ms"]
    assert _call(url, "POST", "/delay-metadata", {"broker": 1, "ms": 5000})[0] == 200
    assert _call(url, "POST", "/create-topic", {"topic": "t", "partitions": 1})[0] == 200

    def offsets() -> tuple[int, int]:
        brokers = _call(url, "GET", "/state")[1]["brokers"]
        return brokers[0]["applied_offset"], brokers[1]["applied_offset"]

    current, delayed = offsets()
    assert delayed < current  # broker 1 has not applied the topic yet
    status, moved = _call(url, "POST", "/advance-clock", {"ms": 4999})
    assert status == 200 and moved == {"mode": "manual", "now_ms": start + 4999,
                                       "advanced_ms": 4999}
    assert offsets() == (current, delayed)  # one millisecond short
    _call(url, "POST", "/advance-clock", {"ms": 1})
    assert offsets() == (current, current)
    status, error = _call(url, "POST", "/advance-clock", {"ms": -1})
    assert status == 400 and "ms must be at least 0" in error["error"]


def test_advance_clock_needs_a_manual_clock() -> None:
    proc, url = _start_cli()
    try:
        assert _call(url, "GET", "/state")[1]["clock"] == {"mode": "system"}
        status, error = _call(url, "POST", "/advance-clock", {"ms": 10})
        assert status == 409 and "--clock manual" in error["error"]
    finally:
        stop(proc)


async def test_a_transaction_times_out_when_the_clock_passes_its_timeout() -> None:
    clock = ManualClock()
    async with MockCluster(brokers=1, clock=clock) as mc:
        await mc.control.create_topic("t", partitions=1)
        txn = mc.cluster.transactions
        init = txn.init_producer_id("tx", 1000)
        txn.add_partitions("tx", init.producer_id, init.producer_epoch, [("t", 0)])
        await mc.control.advance_clock(1000)  # exactly the timeout: not past it yet
        assert (await mc.control.state())["transactions"]["tx"]["state"] == "Ongoing"
        await mc.control.advance_clock(1)
        state = (await mc.control.state())["transactions"]["tx"]
        assert state["state"] == "CompleteAbort"
        assert state["producer_epoch"] == init.producer_epoch + 1  # the zombie is fenced
        with pytest.raises(ControlError) as info:
            await mc.control.advance_clock("10")  # type: ignore[arg-type]
        assert info.value.status == 400
