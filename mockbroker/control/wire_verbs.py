"""The control verbs for connection-level faults (a part of ControlAPI, kept apart for size).

Theory of operation: `inject-connection-fault` validates every argument, then adds a
WireFault (control/wire_faults.py) to the FaultInjector, which the server's wire hook reads
per request; `for_ms` clears it again on an event-loop timer. `refuse-connections` closes a
broker's listening sockets (clients then get ECONNREFUSED, as from a broker whose port is
gone) while its open connections, its registration and its leaderships stay;
`accept-connections` (or the end of `for_ms`, or `reset`) listens again on the same ports.
`connections` lists the open client connections with the ids a fault's `connection` filter
takes. Undo restores service for new connections: a connection that a fault already hung
stays hung until the client closes it, as after a real network fault.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from mockbroker.control.args import api_key, integer, optional_integer
from mockbroker.control.errors import ControlError
from mockbroker.control.state import broker_state, connections_state
from mockbroker.control.wire_faults import DATA_KINDS, FETCH, KINDS, WireFault

if TYPE_CHECKING:
    from mockbroker.cluster import Cluster, PartitionImage, TopicImage
    from mockbroker.control.faults import FaultInjector
    from mockbroker.server.cluster_server import ClusterServer

log = logging.getLogger("mockbroker.control")

MAX_FOR_MS = 86_400_000
MAX_RESET_DELAY_MS = 600_000
MAX_BYTES_PER_SECOND = 1 << 40


class ConnectionFaultVerbs:
    """Mixed into ControlAPI, which provides the attributes and lookups declared here."""

    server: ClusterServer
    cluster: Cluster
    faults: FaultInjector
    _refusal_timers: dict[int, asyncio.TimerHandle]
    _undo_tasks: set[asyncio.Task[None]]

    if TYPE_CHECKING:
        def _broker(self, broker: Any) -> int: ...
        def _topic(self, topic: Any) -> TopicImage: ...
        def _partition(self, topic: Any,
                       partition: Any) -> tuple[TopicImage, PartitionImage]: ...

    def _init_connection_faults(self) -> None:
        self._refusal_timers = {}
        self._undo_tasks = set()

    async def inject_connection_fault(
            self, kind: str, broker: int | None = None, connection: int | None = None,
            client_id: str | None = None, client_host: str | None = None,
            client_port: int | None = None, api: str | int | None = None,
            topic: str | None = None, partition: int | None = None, count: int | None = None,
            for_ms: int | None = None, delay_ms: int | None = None, answer: bool | None = None,
            bytes_per_second: int | None = None) -> dict[str, Any]:
        """A connection-level fault on matching requests: hang, reset, half-response,
        bandwidth, or on Fetch responses duplicate-batch, corrupt-crc (wire_faults.py)."""
        if kind not in KINDS:
            raise ControlError(400, f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        fault = WireFault(0, kind, count=optional_integer("count", count, 1),
                          for_ms=None if for_ms is None
                          else integer("for_ms", for_ms, 1, MAX_FOR_MS))
        fault.broker = None if broker is None else self._broker(broker)
        fault.connection = optional_integer("connection", connection, 1)
        if fault.connection is not None and fault.connection not in self.server.hooks.connections:
            raise ControlError(404, f"no open connection {fault.connection} (see the "
                                    "connections verb)")
        for name, value in (("client_id", client_id), ("client_host", client_host)):
            if value is not None and not isinstance(value, str):
                raise ControlError(400, f"{name} must be a string, got {value!r}")
        fault.client_id, fault.client_host = client_id, client_host
        if client_port is not None:
            fault.client_port = integer("client_port", client_port, 1, 65535)
        self._data_filters(fault, api, topic, partition)
        self._kind_arguments(fault, delay_ms, answer, bytes_per_second)
        self.faults.add_wire(fault)
        if fault.for_ms is not None:
            asyncio.get_running_loop().call_later(fault.for_ms / 1000, self.faults.clear,
                                                  fault.fault_id)
        return fault.to_json()

    def _data_filters(self, fault: WireFault, api: Any, topic: Any, partition: Any) -> None:
        fault.api_key = None if api is None else api_key(api)
        if fault.kind in DATA_KINDS:
            if fault.api_key not in (None, FETCH):
                raise ControlError(400, f"{fault.kind} applies to Fetch responses only")
            fault.api_key = FETCH
            if topic is not None:
                image = self._topic(topic)
                fault.topic, fault.topic_id = image.name, image.topic_id
            if partition is not None:
                if fault.topic is None:
                    raise ControlError(400, "a partition filter needs a topic")
                self._partition(fault.topic, partition)
                fault.partition = partition
        elif topic is not None or partition is not None:
            raise ControlError(400, f"topic and partition filters apply to the data faults "
                                    f"({', '.join(DATA_KINDS)}) only")

    @staticmethod
    def _kind_arguments(fault: WireFault, delay_ms: Any, answer: Any,
                        bytes_per_second: Any) -> None:
        if fault.kind != "reset" and (delay_ms is not None or answer is not None):
            raise ControlError(400, "delay_ms and answer apply to kind reset only")
        if fault.kind == "reset":
            fault.delay_ms = 0 if delay_ms is None \
                else integer("delay_ms", delay_ms, 0, MAX_RESET_DELAY_MS)
            if answer is not None and not isinstance(answer, bool):
                raise ControlError(400, f"answer must be true or false, got {answer!r}")
            fault.answer = bool(answer)
        if fault.kind == "bandwidth":
            if bytes_per_second is None:
                raise ControlError(400, "kind bandwidth needs bytes_per_second")
            fault.bytes_per_second = integer("bytes_per_second", bytes_per_second, 1,
                                             MAX_BYTES_PER_SECOND)
        elif bytes_per_second is not None:
            raise ControlError(400, "bytes_per_second applies to kind bandwidth only")

    async def refuse_connections(self, broker: int,
                                 for_ms: int | None = None) -> dict[str, Any]:
        """Close the broker's listening sockets: new connections get ECONNREFUSED; open
        ones and the broker's registration stay. `for_ms`: listen again after that long."""
        broker_id = self._broker(broker)
        limit = None if for_ms is None else integer("for_ms", for_ms, 1, MAX_FOR_MS)
        if not self.cluster.brokers[broker_id].up:
            raise ControlError(409, f"broker {broker_id} is stopped (start-broker first)")
        if self.server.refusing_connections(broker_id):
            raise ControlError(409, f"broker {broker_id} already refuses connections")
        await self.server.refuse_connections(broker_id)
        if limit is not None:
            self._refusal_timers[broker_id] = asyncio.get_running_loop().call_later(
                limit / 1000, self._accept_later, broker_id)
        return broker_state(self.server, broker_id)

    async def accept_connections(self, broker: int) -> dict[str, Any]:
        """Undo refuse-connections: listen again on the same ports."""
        broker_id = self._broker(broker)
        if not self.server.refusing_connections(broker_id):
            raise ControlError(409, f"broker {broker_id} is not refusing connections")
        await self._listen_again(broker_id)
        return broker_state(self.server, broker_id)

    async def connections(self, broker: int | None = None) -> dict[str, Any]:
        """The open client connections: id, broker, client address and port, client_id,
        requests, bytes written (and of those, paced by a bandwidth fault), hung or not."""
        broker_id = None if broker is None else self._broker(broker)
        return {"connections": connections_state(self.server, broker_id)}

    async def _listen_again(self, broker_id: int) -> None:
        timer = self._refusal_timers.pop(broker_id, None)
        if timer is not None:
            timer.cancel()
        try:
            await self.server.accept_connections(broker_id)
        except OSError as exc:
            raise ControlError(409, f"broker {broker_id} cannot listen again: {exc}") from exc

    def _accept_later(self, broker_id: int) -> None:
        self._refusal_timers.pop(broker_id, None)
        if self.server.refusing_connections(broker_id):
            task = asyncio.get_running_loop().create_task(self._undo_refusal(broker_id))
            self._undo_tasks.add(task)
            task.add_done_callback(self._undo_tasks.discard)

    async def _undo_refusal(self, broker_id: int) -> None:
        try:
            await self._listen_again(broker_id)
        except ControlError as exc:
            log.error("refuse-connections for_ms ended: %s", exc.message)

    async def _restore_listeners(self) -> None:
        """For reset: every broker that refuses connections listens again."""
        for task in list(self._undo_tasks):
            task.cancel()
        await asyncio.gather(*self._undo_tasks, return_exceptions=True)
        for broker_id in sorted(self.cluster.brokers):
            if self.server.refusing_connections(broker_id):
                await self._listen_again(broker_id)
