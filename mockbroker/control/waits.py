"""Waits: block until a condition on the cluster holds, or until a timeout passes.

Theory of operation: a test that sleeps and hopes is slow when the sleep is long and flaky
when it is short; a wait states what the test expects and returns as soon as it is true.
Each condition is a function of the cluster state (and the fault registry) that answers
(holds, what it saw). `wait_until` evaluates it on the event loop that owns the state, so
every check sees one consistent state, and again every POLL_MS until it holds or
`timeout_ms` (wall time on the loop, whatever the cluster's injected clock does) has passed.
Then it raises ControlError 408 whose message says what was expected and what was seen
last, which is what a failing test wants to print. The number of checks is bounded by the
timeout, which is itself bounded by MAX_TIMEOUT_MS.

Conditions (the verbs are `wait-<name>` in ControlAPI):
- group-stable: a classic group is Stable with exactly `members` members, or a KIP-848
  consumer group is Stable (every member at the target assignment) with that many;
- committed-offset: a group's committed offset of a partition is at least `offset`;
- topic-messages: a topic (or one partition) holds at least `count` records, control
  records (transaction markers) not counted;
- fault-consumed: an injected fault with a count has fired its last time;
- broker-fenced: the controller has fenced a broker (or, with fenced=false, unfenced it);
- telemetry: a client (optionally with a given client id) has pushed a metric of that name
  (or any metric), and optionally its terminating push (KIP-714,
  cluster/client_telemetry/telemetry_receiver.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kafka_protocol_codec.record_batches import BatchHeader

from mockbroker.cluster import Cluster
from mockbroker.cluster.groups.classic_group_model import GroupState
from mockbroker.cluster.groups.consumer_group_model import ConsumerGroupState
from mockbroker.control.faults import FaultInjector

POLL_MS = 10
DEFAULT_TIMEOUT_MS = 10_000
MAX_TIMEOUT_MS = 600_000

Check = Callable[[], tuple[bool, Any]]


class WaitTimedOut(Exception):
    """The condition did not hold within the timeout; `seen` is the last observation."""

    def __init__(self, expected: str, seen: Any, waited_ms: float) -> None:
        super().__init__(f"timed out after {waited_ms:.0f} ms waiting for {expected}; "
                         f"last seen: {seen}")
        self.expected = expected
        self.seen = seen
        self.waited_ms = waited_ms


async def wait_until(check: Check, expected: str, timeout_ms: int) -> dict[str, Any]:
    """Poll `check` on this loop until it holds; {"waited_ms", "observed"} or WaitTimedOut."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    deadline = start + timeout_ms / 1000
    while True:
        holds, seen = check()
        now = loop.time()
        if holds:
            return {"satisfied": True, "waited_ms": round((now - start) * 1000, 3),
                    "observed": seen}
        if now >= deadline:
            raise WaitTimedOut(expected, seen, (now - start) * 1000)
        await asyncio.sleep(min(POLL_MS / 1000, deadline - now))


# -- conditions -------------------------------------------------------------------------------

def group_stable(cluster: Cluster, group_id: str, members: int) -> Check:
    def check() -> tuple[bool, Any]:
        consumer = cluster.consumer_groups.get(group_id)
        if consumer is not None:  # KIP-848: every member reconciled to the target
            seen = {"state": consumer.state.value, "members": len(consumer.members),
                    "group_epoch": consumer.group_epoch}
            return consumer.state is ConsumerGroupState.STABLE \
                and len(consumer.members) == members, seen
        group = cluster.groups.get(group_id)
        if group is None:
            return False, {"state": "unknown group", "members": 0}
        seen = {"state": group.state.value, "members": len(group.members),
                "generation": group.generation_id}
        return group.state == GroupState.STABLE and len(group.members) == members, seen
    return check


def committed_offset(cluster: Cluster, group_id: str, topic: str, partition: int,
                     offset: int) -> Check:
    def check() -> tuple[bool, Any]:
        committed = cluster.groups.offsets.get(group_id, topic, partition)
        value = None if committed is None else committed.offset
        return value is not None and value >= offset, {"committed_offset": value}
    return check


def topic_messages(cluster: Cluster, topic: str, count: int,
                   partition: int | None = None) -> Check:
    def check() -> tuple[bool, Any]:
        image = cluster.image.topics.get(topic)
        if image is None:
            return False, {"messages": 0, "topic": "does not exist"}
        total = 0
        # a compacted log has offset gaps: count the records its batches hold
        compacted = "compact" in cluster.topic_config(topic)["cleanup.policy"]
        for index in image.partitions:
            if partition is not None and index != partition:
                continue
            log = cluster.log(image.topic_id, index)
            if log is None:
                continue
            if compacted:
                total += sum(BatchHeader.parse(b.data).record_count
                             for b in log.batches if not b.is_control)
                continue
            total += sum(b.last_offset - max(b.base_offset, log.log_start_offset) + 1
                         for b in log.batches if not b.is_control)
        return total >= count, {"messages": total}
    return check


def fault_consumed(faults: FaultInjector, fault_id: int) -> Check:
    def check() -> tuple[bool, Any]:
        fault = faults.get(fault_id)
        if fault is None:
            return True, {"active": False}
        return False, {"active": True, "fired": fault.fired, "remaining": fault.count}
    return check


def broker_fenced(cluster: Cluster, broker_id: int, fenced: bool) -> Check:
    def check() -> tuple[bool, Any]:
        registration = cluster.image.brokers.get(broker_id)
        is_fenced = registration is None or registration.fenced
        return is_fenced == fenced, {"fenced": is_fenced,
                                     "registered": registration is not None}
    return check


def telemetry_pushed(cluster: Cluster, metric: str | None, client_id: str | None,
                     terminating: bool) -> Check:
    """A client (with `client_id`, if given) pushed a metric named `metric` (any, if None)
    and, with `terminating`, its terminating push was accepted."""
    def check() -> tuple[bool, Any]:
        telemetry = cluster.telemetry
        for record in reversed(telemetry.clients.values()):
            if client_id is not None and record.identity.client_id != client_id:
                continue
            pushed = [m for p in record.pushes if p.data is not None for m in p.data.metrics
                      if metric is None or m.name == metric]
            ended = any(p.terminating and p.error_code == 0 for p in record.pushes)
            if pushed and (ended or not terminating):
                return True, {"client_instance_id": str(record.identity.client_instance_id),
                              "client_id": record.identity.client_id,
                              "client_software_name": record.identity.software_name,
                              "client_software_version": record.identity.software_version,
                              "pushes": record.push_count, "terminated": ended,
                              "metric": pushed[-1].to_json()}
        return False, {"enabled": telemetry.enabled, "clients": len(telemetry.clients),
                       "pushes": sum(r.push_count for r in telemetry.clients.values())}
    return check
