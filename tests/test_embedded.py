"""The in-process API: MockCluster (async) and MockClusterThread (sync).

Readiness is checked the way a client sees it: right after start returns, a connection to
every broker and to the control port succeeds with no retry. A port that cannot be bound
fails the start at once with the broker, the address and the reason, leaving nothing bound.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import urllib.request
from collections.abc import Iterator

import pytest

from mockbroker import MockCluster, MockClusterThread
from mockbroker.control import ControlError
from tests.support.rawclient import connect_broker

API_VERSIONS = 18


def _connect_once(endpoint: str) -> None:
    host, port = endpoint.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2):
        pass


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


async def test_bootstrap_servers_and_readiness() -> None:
    cluster = MockCluster(brokers=3, control_port=0)
    assert not cluster.running
    await cluster.start()
    try:
        endpoints = cluster.bootstrap_servers.split(",")
        assert len(endpoints) == 3 and all(e.startswith("127.0.0.1:") for e in endpoints)
        assert len(set(endpoints)) == 3
        for endpoint in endpoints:  # no retry: start returned, so they accept
            await asyncio.to_thread(_connect_once, endpoint)
        url = cluster.control_url
        assert url is not None

        def health() -> dict[str, object]:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as resp:
                result: dict[str, object] = json.loads(resp.read())
                return result

        assert (await asyncio.to_thread(health))["brokers_up"] == 3
        assert await cluster.start() is cluster  # starting again is a no-op
    finally:
        await cluster.stop()
    assert not cluster.running


async def test_control_has_the_http_verbs() -> None:
    from mockbroker.control.api import ControlAPI

    async with MockCluster(brokers=2) as cluster:
        for method in ControlAPI.VERBS.values():
            assert callable(getattr(cluster.control, method)), method
        await cluster.control.create_topic("t", partitions=2)
        assert await cluster.control.stop_broker(1)
        assert len(cluster.bootstrap_servers.split(",")) == 1  # only running brokers
        await cluster.control.reset()
        assert len(cluster.bootstrap_servers.split(",")) == 2


@pytest.fixture
def taken_port_after_a_free_one() -> Iterator[int]:
    """A loopback port something else listens on, whose lower neighbour was free a moment
    ago (other processes on the machine take ephemeral ports too: look for such a pair)."""
    for _ in range(50):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            sock.listen()
            port = sock.getsockname()[1]
            with socket.socket() as neighbour:
                try:
                    neighbour.bind(("127.0.0.1", port - 1))
                except OSError:
                    continue
            yield port
            return
    pytest.fail("no loopback port with a free lower neighbour in 50 tries")


async def test_bind_failure_raises_at_once_with_the_reason(
        taken_port_after_a_free_one: int) -> None:
    taken_port = taken_port_after_a_free_one
    cluster = MockCluster(brokers=3, port=taken_port - 1)  # broker 1 collides
    with pytest.raises(OSError) as info:
        await asyncio.wait_for(cluster.start(), 5)
    message = str(info.value)
    assert f"broker 1 cannot listen on 127.0.0.1:{taken_port}" in message
    assert "in use" in message.lower()
    assert not cluster.running and cluster.server.servers == {}
    with socket.socket() as probe:  # broker 0's port was released again
        probe.bind(("127.0.0.1", taken_port - 1))


async def test_control_port_bind_failure(taken_port: int) -> None:
    cluster = MockCluster(brokers=1, control_port=taken_port)
    with pytest.raises(OSError):
        await cluster.start()
    assert cluster.server.servers == {}


def test_thread_form(taken_port: int) -> None:
    with MockClusterThread(brokers=3) as mock:
        for endpoint in mock.bootstrap_servers.split(","):
            _connect_once(endpoint)
        created = mock.control.create_topic("sync", partitions=2)
        assert len(created["partitions"]) == 2
        with pytest.raises(ControlError) as info:
            mock.control.elect_leader("nope", 0)
        assert info.value.status == 404
        assert mock.call(lambda: sorted(mock.cluster.image.topics)) == ["sync"]

        async def from_another_loop() -> dict[str, object]:
            return await mock.acontrol.state()

        assert "sync" in asyncio.run(from_another_loop())["topics"]  # type: ignore[operator]
        assert "reset" in dir(mock.control)
    with pytest.raises(RuntimeError, match="not running"):
        _ = mock.bootstrap_servers
    before = threading.active_count()
    with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{taken_port}"):
        MockClusterThread(brokers=1, port=taken_port).start()
    assert threading.active_count() == before  # the loop thread ended


async def test_trace_options() -> None:
    async with MockCluster(brokers=1, trace_buffer=10) as cluster:
        async with await connect_broker(cluster, 0) as client:
            await client.request(API_VERSIONS, 0)
        assert [r["api"] for r in (await cluster.control.trace())["requests"]] == \
            ["ApiVersions"]
    with pytest.raises(ValueError, match="trace_api"):
        MockCluster(trace=True, trace_api="Nope")
    with pytest.raises(ValueError, match="not both"):
        from mockbroker.cluster import ClusterConfig

        MockCluster(config=ClusterConfig(brokers=1), default_partitions=3)
