"""The control API's waits: wait-group-stable, wait-committed-offset, wait-topic-messages,
wait-fault-consumed, wait-broker-fenced.

Theory of operation: each verb checks its arguments, then polls one condition of
control/waits.py on the event loop until it holds, and answers what it saw; when the timeout
(timeout_ms, bounded by waits.MAX_TIMEOUT_MS) passes first it is a ControlError 408 with
what it saw last. Tests use these instead of sleeping. The telemetry wait is in
control/telemetry_verbs.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.control import waits
from mockbroker.control.args import integer as _int
from mockbroker.control.args import optional_integer as _opt_int
from mockbroker.control.args import string as _str
from mockbroker.control.errors import ControlError
from mockbroker.control.faults import FaultInjector

if TYPE_CHECKING:
    from mockbroker.cluster import Cluster

VERBS = {"wait-group-stable": "wait_group_stable",
         "wait-committed-offset": "wait_committed_offset",
         "wait-topic-messages": "wait_topic_messages",
         "wait-fault-consumed": "wait_fault_consumed",
         "wait-broker-fenced": "wait_broker_fenced"}


class WaitVerbs:
    """The waits; ControlAPI provides `cluster`, `faults` and `_broker`. Its `_wait` also
    serves wait-telemetry (TelemetryVerbs), so ControlAPI lists it first."""

    cluster: Cluster
    faults: FaultInjector

    def _broker(self, broker: Any) -> int:
        raise NotImplementedError  # ControlAPI._broker

    async def _wait(self, check: waits.Check, expected: str,
                    timeout_ms: int | None) -> dict[str, Any]:
        limit = waits.DEFAULT_TIMEOUT_MS if timeout_ms is None \
            else _int("timeout_ms", timeout_ms, 0, waits.MAX_TIMEOUT_MS)
        try:
            return await waits.wait_until(check, expected, limit)
        except waits.WaitTimedOut as exc:
            raise ControlError(408, str(exc)) from exc

    async def wait_group_stable(self, group: str, members: int,
                                timeout_ms: int | None = None) -> dict[str, Any]:
        """Block until a group (classic or KIP-848) is Stable with exactly `members` members."""
        name = _str("group", group)
        count = _int("members", members, 0)
        return await self._wait(waits.group_stable(self.cluster, name, count),
                                f"group {name!r} to be Stable with {count} member(s)",
                                timeout_ms)

    async def wait_committed_offset(self, group: str, topic: str, partition: int, offset: int,
                                    timeout_ms: int | None = None) -> dict[str, Any]:
        """Block until the group's committed offset of topic-partition is >= `offset`."""
        name, topic_name = _str("group", group), _str("topic", topic)
        index, target = _int("partition", partition, 0), _int("offset", offset, 0)
        return await self._wait(
            waits.committed_offset(self.cluster, name, topic_name, index, target),
            f"group {name!r} to commit offset >= {target} on {topic_name}-{index}", timeout_ms)

    async def wait_topic_messages(self, topic: str, count: int, partition: int | None = None,
                                  timeout_ms: int | None = None) -> dict[str, Any]:
        """Block until the topic (or one partition) holds at least `count` records
        (transaction markers not counted); the topic may not exist yet."""
        name = _str("topic", topic)
        wanted = _int("count", count, 0)
        index = _opt_int("partition", partition, 0)
        where = name if index is None else f"{name}-{index}"
        return await self._wait(waits.topic_messages(self.cluster, name, wanted, index),
                                f"{where} to hold {wanted} message(s)", timeout_ms)

    async def wait_fault_consumed(self, id: int,
                                  timeout_ms: int | None = None) -> dict[str, Any]:
        """Block until an injected fault has fired its last time (its count is used up)."""
        fault_id = _int("id", id, 1)
        if not self.faults.issued(fault_id):
            raise ControlError(404, f"unknown fault id {fault_id}")
        return await self._wait(waits.fault_consumed(self.faults, fault_id),
                                f"fault {fault_id} to be consumed", timeout_ms)

    async def wait_broker_fenced(self, broker: int, fenced: bool = True,
                                 timeout_ms: int | None = None) -> dict[str, Any]:
        """Block until the controller has fenced the broker (fenced=false: unfenced it)."""
        broker_id = self._broker(broker)
        if not isinstance(fenced, bool):
            raise ControlError(400, f"fenced must be true or false, got {fenced!r}")
        state = "fenced" if fenced else "unfenced"
        return await self._wait(waits.broker_fenced(self.cluster, broker_id, fenced),
                                f"broker {broker_id} to be {state}", timeout_ms)
