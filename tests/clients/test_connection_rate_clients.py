"""KIP-612 connection_creation_rate with real sockets and a real client, on a manual clock so
the rate measurement is exact (the broker's waits are event-loop timers).

With 127.0.0.1 at 1 connection/s, the rate counts over a window of at least 10 s: a burst of
12 connections has 10 served and 2 accepted but closed unserved after the 1 s throttle. A
producer that starts then has its connections closed too, and works once the clock has
moved past the window; the control API's state counts every connection closed per IP.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from mockbroker.cluster import ManualClock
from mockbroker.embedded import MockClusterThread

TIMEOUT = 30.0
BURST = 12


@pytest.fixture
def cluster() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=1, clock=ManualClock()) as mock:
        yield mock


def _api_versions_v0(correlation_id: int) -> bytes:
    client_id = b"burst"
    payload = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(payload)) + payload


def _answered(sock: socket.socket) -> bool:
    """True: the broker answered; False: it closed the connection without a word."""
    sock.settimeout(TIMEOUT)
    try:
        return bool(sock.recv(4))
    except ConnectionResetError:
        return False


def _throttled(cluster: MockClusterThread) -> dict[str, Any]:
    return dict(cluster.control.state()["quotas"]["connections"]["throttled_by_ip"])


def test_a_burst_over_the_ip_rate_is_closed_unserved_and_clients_recover(
        cluster: MockClusterThread) -> None:
    cluster.control.set_quota({"ip": "127.0.0.1"}, {"connection_creation_rate": 1})
    cluster.control.create_topic("after-the-burst")
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    sockets = [socket.create_connection((host, int(port)), timeout=TIMEOUT)
               for _ in range(BURST)]
    try:
        for index, sock in enumerate(sockets):
            sock.sendall(_api_versions_v0(index))
        answered = [_answered(sock) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    assert answered.count(True) == 10 and answered.count(False) == BURST - 10
    assert _throttled(cluster) == {"127.0.0.1": BURST - 10}

    # a producer starting now has its connections closed unserved too (the clock has not
    # moved: the rate is still 10 per 10 s) ...
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
                         "error_cb": errors.append})
    producer.produce("after-the-burst", b"patience")
    deadline = time.monotonic() + TIMEOUT
    while _throttled(cluster)["127.0.0.1"] < BURST - 10 + 2 and time.monotonic() < deadline:
        producer.poll(0.1)
    assert _throttled(cluster)["127.0.0.1"] >= BURST - 10 + 2
    assert producer.flush(0) == 1  # nothing delivered yet

    # ... until the window has passed: then it is served and delivers
    cluster.control.advance_clock(11_000)
    assert producer.flush(TIMEOUT) == 0
    state = cluster.control.state()
    [partition] = state["topics"]["after-the-burst"]["partitions"]
    assert partition["high_watermark"] == 1
    assert state["quotas"]["connections"]["brokers"]["0"]["throttled_by_ip"] == \
        _throttled(cluster)
