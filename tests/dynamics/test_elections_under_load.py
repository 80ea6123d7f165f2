"""Elections under load: every partition gets a new leader every second for 20 seconds.

The three Python clients run at once, each with its own topic and consumer group, producing
with acks=all and idempotence and consuming in a group (running them side by side keeps the
test at 20 s instead of 60 s, and loads the broker with all three). Each election moves the
leader to the next in-sync replica and raises the leader epoch by one. Afterwards every
acknowledged message has been consumed exactly once, at the offset it was acknowledged at,
and each partition holds the messages in production order.
"""

from __future__ import annotations

import time

import pytest

from mockbroker.embedded import MockClusterThread
from tests.dynamics.workloads import WORKLOADS, Workload

pytestmark = pytest.mark.clients

PARTITIONS = 3
DURATION = 20.0  # seconds of elections while the clients produce and consume
INTERVAL = 1.0  # one election per partition per second


def test_elections_every_second_for_twenty_seconds(mock: MockClusterThread) -> None:
    workloads: list[Workload] = []
    for name, kind in WORKLOADS.items():
        topic = f"elections-{name}"
        mock.control.create_topic(topic, partitions=PARTITIONS)
        workloads.append(kind(mock.bootstrap_servers, topic, f"group-{name}"))
    try:
        for w in workloads:
            w.start()
        deadline = time.monotonic() + 30
        while not all(w.ledger.consumed for w in workloads) and time.monotonic() < deadline:
            time.sleep(0.05)  # every consumer is under way before the elections start
        assert all(w.ledger.consumed for w in workloads), "a consumer never started"
        rounds = 0
        started = time.monotonic()
        next_round = started
        while time.monotonic() - started < DURATION:
            time.sleep(max(0.0, next_round - time.monotonic()))
            for w in workloads:
                for p in range(PARTITIONS):
                    mock.control.elect_leader(w.topic, p)
            rounds += 1
            next_round += INTERVAL
            assert not any(w.errors for w in workloads), [w.errors for w in workloads]
        for w in workloads:
            w.stop_producing()
        for w in workloads:
            w.wait_consumed()
    finally:
        for w in workloads:
            w.close()
    assert rounds >= DURATION / INTERVAL - 1
    state = mock.control.state()
    for w in workloads:
        epochs = [p["leader_epoch"] for p in state["topics"][w.topic]["partitions"]]
        assert epochs == [rounds] * PARTITIONS, (w.client, epochs)
        w.check()
        assert len(w.ledger.acked) > 1000, (w.client, len(w.ledger.acked))
