"""Broker failure under load: stop-broker on a leader, then start-broker.

The three clients run at once, each producing (acks=all, idempotent) to its own 3-partition
topic and consuming it in a group. Broker 1 leads one partition of every topic; stopping it
closes its listener and every connection at once, moves its leaderships (epoch +1) and its
group coordinators, and shrinks the ISRs. The clients must carry on without a restart: the
producers keep getting acknowledgements while it is down and after it is back, and every
acknowledged message is consumed exactly once.
"""

from __future__ import annotations

import time

import pytest

from mockbroker.embedded import MockClusterThread
from tests.dynamics.workloads import WORKLOADS, Workload

pytestmark = pytest.mark.clients

PARTITIONS = 3
VICTIM = 1
PHASE = 3.0  # seconds before the stop, while down, and after the restart
STARTUP_SECONDS = 30.0  # at most, until every producer has its first acknowledgement


def _wait_for_first_acks(workloads: list[Workload], seconds: float) -> dict[str, int]:
    """Until every workload has an acknowledgement (clients connect and join their groups
    first, which takes long on a loaded machine); returns the counts at the end."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not all(w.ledger.acked for w in workloads):
        time.sleep(0.05)
    return {w.client: len(w.ledger.acked) for w in workloads}


def _wait_for_more_acks(workloads: list[Workload], seconds: float) -> dict[str, int]:
    """Sleep `seconds`; return how many acknowledgements each workload gained."""
    before = {w.client: len(w.ledger.acked) for w in workloads}
    time.sleep(seconds)
    return {w.client: len(w.ledger.acked) - before[w.client] for w in workloads}


def test_stop_and_start_a_leader_under_load(mock: MockClusterThread) -> None:
    workloads: list[Workload] = []
    for name, kind in WORKLOADS.items():
        topic = f"failure-{name}"
        created = mock.control.create_topic(topic, partitions=PARTITIONS)
        assert VICTIM in [p["leader"] for p in created["partitions"]]
        workloads.append(kind(mock.bootstrap_servers, topic, f"failure-group-{name}"))
    try:
        for w in workloads:
            w.start()
        first = _wait_for_first_acks(workloads, STARTUP_SECONDS)
        assert all(first.values()), f"a producer got no acknowledgement: {first}"
        gained = _wait_for_more_acks(workloads, PHASE)
        assert all(gained.values()), gained
        stopped = mock.control.stop_broker(VICTIM)
        assert stopped["fenced"] and not stopped["listening"]
        state = mock.control.state()
        for w in workloads:
            for p in state["topics"][w.topic]["partitions"]:
                assert p["leader"] != VICTIM and VICTIM not in p["isr"], p
        gained = _wait_for_more_acks(workloads, PHASE)
        assert all(gained.values()), f"no progress while broker {VICTIM} is down: {gained}"
        started = mock.control.start_broker(VICTIM)
        assert started["up"] and not started["fenced"]
        gained = _wait_for_more_acks(workloads, PHASE)
        assert all(gained.values()), f"no progress after the restart: {gained}"
        for w in workloads:
            w.stop_producing()
        for w in workloads:
            w.wait_consumed()
    finally:
        for w in workloads:
            w.close()
    state = mock.control.state()
    for w in workloads:
        for p in state["topics"][w.topic]["partitions"]:
            assert sorted(p["isr"]) == [0, 1, 2], p  # the restarted broker is back in sync
        w.check()
