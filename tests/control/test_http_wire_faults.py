"""Connection-level fault verbs over HTTP and `mockbroker ctl`, against the CLI (uvloop).

The broker runs as the CLI in a subprocess, as a test in another language would run it; the
verbs go over HTTP (and once through `mockbroker ctl`), and the raw codec client checks what
a Kafka connection sees. Bad arguments are 4xx answers with the reason.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from kafka_protocol_codec import decode_response

from tests.support.cli import http_json, start_cli, stop
from tests.support.rawclient import RawClient

API_VERSIONS = 18
API_VERSIONS_BODY = {"client_software_name": "t", "client_software_version": "1"}
CTL_TIMEOUT = 60


@pytest.fixture(scope="module")
def cli() -> Iterator[str]:
    """The control URL of a 2-broker CLI in a subprocess."""
    proc, fields = start_cli("--brokers", "2", "--control-port", "0")
    try:
        yield fields["control"]
    finally:
        stop(proc)


@pytest.fixture
def url(cli: str) -> Iterator[str]:
    assert http_json(f"{cli}/reset", "POST", {})[0] == 200
    yield cli
    assert http_json(f"{cli}/reset", "POST", {})[0] == 200


def post(url: str, verb: str, body: Any = None) -> tuple[int, Any]:
    return http_json(f"{url}/{verb}", "POST", body if body is not None else {})


def ok(url: str, verb: str, body: Any = None) -> Any:
    status, result = post(url, verb, body)
    assert status == 200, (verb, status, result)
    return result


def broker_port(url: str, broker: int) -> int:
    port: int = ok(url, "state")["brokers"][broker]["port"]
    return port


def test_reset_fault_on_one_connection(url: str) -> None:
    port = broker_port(url, 0)

    async def scenario() -> None:
        async with await RawClient.connect(port, client_id="victim") as victim, \
                await RawClient.connect(port, client_id="bystander") as bystander:
            await victim.request(API_VERSIONS, 3, API_VERSIONS_BODY)
            await bystander.request(API_VERSIONS, 3, API_VERSIONS_BODY)
            listed = ok(url, "connections", {"broker": 0})["connections"]
            by_client = {c["client_id"]: c for c in listed}
            assert set(by_client) == {"victim", "bystander"}
            victim_port = victim.writer.get_extra_info("sockname")[1]
            assert by_client["victim"]["client_port"] == victim_port
            fault = ok(url, "inject-connection-fault",
                       {"kind": "reset", "connection": by_client["victim"]["id"]})
            assert (fault["kind"], fault["connection"], fault["count"]) == (
                "reset", by_client["victim"]["id"], None)
            assert [f["id"] for f in ok(url, "state")["faults"]] == [fault["id"]]
            await victim.send(API_VERSIONS, 3, API_VERSIONS_BODY)
            with pytest.raises(ConnectionResetError):
                await asyncio.wait_for(victim.reader.readexactly(4), 5)
            await bystander.request(API_VERSIONS, 3, API_VERSIONS_BODY)

    asyncio.run(scenario())
    assert ok(url, "clear-faults") == {"cleared": 1}


def test_refuse_and_accept_connections(url: str) -> None:
    port = broker_port(url, 1)
    refused = ok(url, "refuse-connections", {"broker": 1})
    assert (refused["refusing_connections"], refused["listening"]) == (True, False)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    status, answer = post(url, "refuse-connections", {"broker": 1})
    assert status == 409 and "already refuses" in answer["error"]
    assert ok(url, "accept-connections", {"broker": 1})["listening"] is True
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    status, answer = post(url, "accept-connections", {"broker": 1})
    assert status == 409 and "not refusing" in answer["error"]


@pytest.mark.parametrize(("verb", "body", "status", "reason"), [
    ("inject-connection-fault", {}, 400, "missing field(s) kind"),
    ("inject-connection-fault", {"kind": "slow"}, 400, "kind must be one of"),
    ("inject-connection-fault", {"kind": "bandwidth", "bytes_per_second": "fast"}, 400,
     "bytes_per_second must be an integer"),
    ("inject-connection-fault", {"kind": "hang", "client_id": 5}, 400, "client_id must be"),
    ("inject-connection-fault", {"kind": "reset", "delay_ms": -1}, 400, "at least 0"),
    ("inject-connection-fault", {"kind": "hang", "for_ms": 0}, 400, "for_ms must be"),
    ("inject-connection-fault", {"kind": "duplicate-batch", "topic": "gone"}, 404,
     "unknown topic"),
    ("inject-connection-fault", {"kind": "hang", "connection": 123456}, 404,
     "no open connection"),
    ("refuse-connections", {"broker": 5}, 404, "unknown broker"),
    ("refuse-connections", {"broker": 0, "for_ms": "soon"}, 400, "for_ms must be"),
    ("accept-connections", {"broker": 0}, 409, "not refusing"),
    ("connections", {"broker": "zero"}, 400, "broker must be an integer"),
])
def test_bad_arguments_are_4xx_with_a_reason(url: str, verb: str, body: dict[str, Any],
                                             status: int, reason: str) -> None:
    got, answer = post(url, verb, body)
    assert got == status and reason in answer["error"], answer
    state = ok(url, "state")
    assert state["faults"] == []
    assert not any(b["refusing_connections"] for b in state["brokers"])


def test_ctl_injects_and_clears_a_connection_fault(url: str) -> None:
    def ctl(*words: str) -> tuple[int, Any]:
        result = subprocess.run([sys.executable, "-m", "mockbroker", "ctl", "--url", url,
                                 *words], capture_output=True, text=True, timeout=CTL_TIMEOUT,
                                check=False)
        return result.returncode, json.loads(result.stdout) if result.stdout.strip() else None

    code, fault = ctl("inject-connection-fault", "bandwidth", "bytes_per_second=1000",
                      "client_id=slow-consumer", "api=Fetch")
    assert code == 0 and (fault["kind"], fault["bytes_per_second"], fault["client_id"],
                          fault["api"]) == ("bandwidth", 1000, "slow-consumer", "Fetch")
    code, listed = ctl("connections")
    assert code == 0 and listed == {"connections": []}
    code, refused = ctl("refuse-connections", "0")
    assert code == 0 and refused["refusing_connections"] is True
    assert ctl("accept-connections", "broker=0")[0] == 0
    assert ctl("clear-faults", f"id={fault['id']}") == (0, {"cleared": 1})


def test_half_response_hang_and_bandwidth_on_the_cli(url: str) -> None:
    port = broker_port(url, 0)
    ok(url, "inject-connection-fault", {"kind": "half-response", "client_id": "half",
                                        "count": 1})
    ok(url, "inject-connection-fault", {"kind": "hang", "client_id": "hang", "count": 1})
    paced = ok(url, "inject-connection-fault", {"kind": "bandwidth", "client_id": "slow",
                                                "bytes_per_second": 20_000})

    paced_frames: list[int] = []

    async def scenario() -> None:
        async with await RawClient.connect(port, client_id="slow") as slow:
            correlation_id = await slow.send(API_VERSIONS, 3, API_VERSIONS_BODY)
            frame = await slow.read_frame()
            body = decode_response(API_VERSIONS, 3, frame)
            assert body.correlation_id == correlation_id and body.body.error_code == 0
            paced_frames.append(len(frame) + 4)
        async with await RawClient.connect(port, client_id="half") as half:
            await half.send(API_VERSIONS, 3, API_VERSIONS_BODY)
            size = int.from_bytes(await half.reader.readexactly(4), "big", signed=True)
            rest = await asyncio.wait_for(half.reader.read(), 5)
            assert len(rest) == (size + 4) // 2 - 4  # half the frame, then EOF
        async with await RawClient.connect(port, client_id="hang") as hang:
            await hang.send(API_VERSIONS, 3, API_VERSIONS_BODY)
            with pytest.raises(TimeoutError):
                await hang.read_frame(timeout=1.0)
            listed = {c["client_id"]: c for c in ok(url, "connections")["connections"]}
            assert listed["hang"]["hung"] is True

    asyncio.run(scenario())
    state = ok(url, "state")
    assert [f["id"] for f in state["faults"]] == [paced["id"]]  # the counted ones are used up
    assert state["faults"][0]["throttled_bytes"] == paced_frames[0]  # the whole answer
