"""The control API over HTTP, driven with nothing but an HTTP client (urllib).

The broker runs as the CLI in a subprocess (`python -m mockbroker --control-port 0`); the
control URL comes from its READY line. No mockbroker module is imported here: this is how a
test in any language, or a docker-compose stack, steers the cluster.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.cli import http_json, start_cli, stop


class Control:
    def __init__(self, url: str) -> None:
        self.url = url

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        return http_json(self.url + path, method, raw=body)

    def post(self, verb: str, body: Any = None) -> tuple[int, Any]:
        return http_json(f"{self.url}/{verb}", "POST", body)

    def ok(self, verb: str, body: Any = None) -> Any:
        status, result = self.post(verb, body)
        assert status == 200, (verb, status, result)
        return result

    def state(self) -> Any:
        status, result = self.request("GET", "/state")
        assert status == 200
        return result

    def stable_state(self) -> Any:
        """The state without what moves on its own: heartbeat times, and the brokers'
        acknowledged metadata offsets, which follow a change at the next heartbeat (every
        500 ms): read once every running broker has acknowledged the controller's last
        record (at most 5 s)."""
        for _ in range(50):
            state = self.state()
            last = state["controller"]["metadata_offset"]
            if state["controller"]["lowest_acknowledged_offset"] == last and all(
                    b["acknowledged_offset"] == last for b in state["brokers"] if b["up"]):
                for broker in state["brokers"]:
                    broker.pop("last_heartbeat_ms", None)
                return state
            time.sleep(0.1)
        raise AssertionError(f"the brokers did not acknowledge the metadata: {state}")


@pytest.fixture(scope="module")
def cli() -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """The CLI in a subprocess: (process, bootstrap servers, control URL)."""
    proc, fields = start_cli("--brokers", "3", "--control-port", "0")
    try:
        assert fields["control"].startswith("http://127.0.0.1:")
        yield proc, fields["bootstrap"], fields["control"]
    finally:
        stop(proc)


@pytest.fixture
def ctl(cli: tuple[subprocess.Popen[str], str, str]) -> Iterator[Control]:
    control = Control(cli[2])
    control.ok("reset")
    yield control
    control.ok("reset")


def test_health_and_state(ctl: Control, cli: tuple[subprocess.Popen[str], str, str]) -> None:
    status, health = ctl.request("GET", "/health")
    assert status == 200 and health == {"status": "ok", "brokers": 3, "brokers_up": 3}
    state = ctl.state()
    endpoints = ",".join(b["endpoint"] for b in state["brokers"])
    assert endpoints == cli[1]  # the READY line's bootstrap
    assert state["topics"] == {} and state["controller"]["id"] == 0


def test_topics_leadership_and_isr(ctl: Control) -> None:
    created = ctl.ok("create-topic", {"topic": "t", "partitions": 2})
    assert [p["leader"] for p in created["partitions"]] == [0, 1]
    moved = ctl.ok("elect-leader", {"topic": "t", "partition": 0, "broker": 2})
    assert (moved["leader"], moved["leader_epoch"]) == (2, 1)
    assert ctl.ok("elect-leader", {"topic": "t", "partition": 0})["leader_epoch"] == 2
    assert ctl.ok("set-isr", {"topic": "t", "partition": 1, "isr": [1, 2]})["isr"] == [1, 2]
    unclean = ctl.ok("unclean-elect", {"topic": "t", "partition": 1, "broker": 0,
                                       "truncate_to": 0})
    assert (unclean["leader"], unclean["isr"], unclean["truncated_records"]) == (0, [0], 0)
    expanded = ctl.ok("expand-partitions", {"topic": "t", "partitions": 4})
    assert len(expanded["partitions"]) == 4
    state = ctl.state()
    assert len(state["topics"]["t"]["partitions"]) == 4
    assert state["topics"]["t"]["partitions"][1]["isr"] == [0]
    assert ctl.ok("delete-topic", {"topic": "t"}) == {"deleted": "t"}


def test_broker_lifecycle_and_metadata_propagation(ctl: Control) -> None:
    ctl.ok("create-topic", {"topic": "life", "partitions": 3})
    port = ctl.state()["brokers"][1]["port"]
    stopped = ctl.ok("stop-broker", {"broker": 1})
    assert (stopped["up"], stopped["fenced"]) == (False, True)
    assert ctl.post("stop-broker", {"broker": 1})[0] == 409
    state = ctl.state()
    assert all(1 not in p["isr"] and p["leader"] != 1
               for p in state["topics"]["life"]["partitions"])
    started = ctl.ok("start-broker", {"broker": 1})
    assert (started["up"], started["fenced"], started["port"]) == (True, False, port)
    paused = ctl.ok("pause-metadata", {"broker": 2})
    assert paused["metadata_paused"]
    ctl.ok("elect-leader", {"topic": "life", "partition": 0, "broker": 1})
    state = ctl.state()
    assert state["brokers"][2]["applied_offset"] < state["brokers"][0]["applied_offset"]
    resumed = ctl.ok("resume-metadata", {"broker": 2})
    assert resumed["applied_offset"] == state["brokers"][0]["applied_offset"]
    assert ctl.ok("delay-metadata", {"broker": 0, "ms": 250})["metadata_delay_ms"] == 250


def test_faults(ctl: Control) -> None:
    ctl.ok("create-topic", {"topic": "f", "partitions": 1})
    error = ctl.ok("inject-error", {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER",
                                    "topic": "f", "partition": 0, "count": 3})
    assert (error["api_key"], error["error_code"], error["count"]) == (0, 6, 3)
    latency = ctl.ok("inject-latency", {"api": "Fetch", "ms": 100, "broker": 0,
                                        "probability": 0.5})
    disconnect = ctl.ok("inject-error", {"api": 3, "error": "disconnect", "count": 1})
    assert disconnect["error"] == "disconnect"
    assert [f["id"] for f in ctl.state()["faults"]] == [error["id"], latency["id"],
                                                       disconnect["id"]]
    assert ctl.ok("clear-faults", {"id": latency["id"]}) == {"cleared": 1}
    assert ctl.ok("clear-faults") == {"cleared": 2}
    assert ctl.state()["faults"] == []


@pytest.mark.parametrize(("verb", "body", "status"), [
    ("elect-leader", {"topic": "missing", "partition": 0}, 404),
    ("elect-leader", {"topic": "bad", "partition": 7}, 404),
    ("stop-broker", {"broker": 9}, 404),
    ("elect-leader", {"topic": "bad", "partition": "zero"}, 400),
    ("elect-leader", {"topic": "bad", "partition": 0, "extra": 1}, 400),
    ("set-isr", {"topic": "bad"}, 400),
    ("inject-error", {"api": "Produce", "error": "NOT_AN_ERROR"}, 400),
    ("create-topic", {"topic": "bad"}, 409),
    ("no-such-verb", {}, 404),
])
def test_bad_input_gets_json_errors_and_changes_nothing(
        ctl: Control, verb: str, body: Any, status: int) -> None:
    ctl.ok("create-topic", {"topic": "bad", "partitions": 1})
    before = ctl.stable_state()
    got, answer = ctl.post(verb, body)
    assert got == status and isinstance(answer["error"], str) and answer["error"]
    assert ctl.stable_state() == before


def test_malformed_requests(ctl: Control) -> None:
    before = ctl.stable_state()
    for raw in (b"{not json", b"[1, 2]", b"\xff\xfe", b'"text"'):
        status, answer = ctl.request("POST", "/elect-leader", raw)
        assert status == 400 and "error" in answer, raw
    assert ctl.request("GET", "/elect-leader")[0] == 405
    assert ctl.request("GET", "/nothing/here")[0] == 404
    assert ctl.stable_state() == before


def test_reset_is_quick_and_empties_the_cluster(ctl: Control) -> None:
    for i in range(5):
        ctl.ok("create-topic", {"topic": f"r{i}", "partitions": 3})
    ctl.ok("inject-error", {"api": "Produce", "error": 6})
    ctl.ok("stop-broker", {"broker": 2})
    started = time.monotonic()
    result = ctl.ok("reset")
    assert time.monotonic() - started < 5
    assert result["reset"] is True and result["elapsed_ms"] >= 0
    state = ctl.state()
    assert state["topics"] == {} and state["faults"] == []
    assert all(b["up"] for b in state["brokers"])
