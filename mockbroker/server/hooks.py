"""A hook the layers above install to steer requests before and after their handlers.

Theory of operation: imports go downward only, so the server does not know about the control
layer's faults. It defines this small interface instead: for every decoded request a
connection asks `ServerHooks.request` (when set) for a plan. The plan may delay the request,
close the connection without answering, answer in place of the handler, or rewrite the
handler's response (per-partition error codes). A hook that returns None costs one call.

`ServerHooks.trace` is the request trace (mockbroker.server.trace): None means off, and then
a connection does nothing for it beyond reading the attribute.

Connection-level faults go through `ServerHooks.wire`: for every decoded request a
connection asks it for a `WirePlan` (never answer, reset, cut the response in half, pace the
response's bytes, rewrite the response's data), passing its `ConnectionInfo`. Deciding which
fault applies is the hook's business; the connection only carries the plan out at its write
point. `ServerHooks.connections` is the table of open connections, by id, that every
listener fills and empties, so a test can see them and aim a fault at one.
`ServerHooks.close_connections` closes a broker's open connections when the cluster decides
so (after a metadata.version change, cluster/kraft/feature_renegotiation.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kafka_protocol_codec import TypedStruct

    from mockbroker.cluster import BrokerNode
    from mockbroker.server.trace import Tracer


class RequestPlan(Protocol):
    delay_ms: float  # wait this long before handling the request
    disconnect: bool  # then close the connection without an answer
    response: Mapping[str, Any] | None  # answer this instead of calling the handler

    @property
    def partition_errors(self) -> Mapping[tuple[str, int], int]:
        """(topic, partition) -> the error code `after` sets there (the handler never sees
        those partitions)."""

    def after(self, response: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """Rewrite the handler's response, before the dispatcher decides the answer
        (RequestContext.response_hook: a Produce with acks=0 then closes the connection on
        an injected error as on a real one)."""


class RequestHook(Protocol):
    def before(self, node: BrokerNode, api_key: int, api_version: int,
               body: TypedStruct) -> RequestPlan | None:
        """A plan for this request, or None to handle it normally. May edit `body`."""

    def idle(self) -> bool:
        """True when `before` would return None for any request and nothing observes
        requests: a request may then be handled without asking."""


@dataclass
class ConnectionInfo:
    """One open connection as the hooks and the `state` verb see it."""

    connection_id: int
    broker_id: int
    client_host: str
    client_port: int
    broker_port: int
    opened_at: float  # event-loop time
    last_active: float = 0.0  # event-loop time of its last request (LRU for max.connections)
    client_id: str | None = None
    requests: int = 0
    bytes_out: int = 0
    throttled_bytes: int = 0  # response bytes written under a bandwidth cap
    hung: bool = False  # a fault made it stop answering
    # closes the connection, logging the reason (idle: at once; else after its answer)
    close: Callable[[str], None] | None = field(default=None, repr=False, compare=False)

    def to_json(self, now: float) -> dict[str, Any]:
        return {"id": self.connection_id, "broker": self.broker_id,
                "client_host": self.client_host, "client_port": self.client_port,
                "broker_port": self.broker_port, "client_id": self.client_id,
                "open_ms": round((now - self.opened_at) * 1000), "requests": self.requests,
                "bytes_out": self.bytes_out, "throttled_bytes": self.throttled_bytes,
                "hung": self.hung}


@dataclass
class WirePlan:
    """What a connection does on the wire with one request (connection-level faults)."""

    hang: bool = False  # neither handle nor answer it, nor any later request on the connection
    reset: bool = False  # end the connection with a TCP reset (RST) instead of answering
    answer_before_reset: bool = False  # with reset: answer first, then reset
    reset_delay_ms: float = 0.0  # with reset: wait this long (event-loop time) first
    half_response: bool = False  # write the first half of the response frame, then close
    bytes_per_second: int | None = None  # pace the response's bytes at this rate
    on_paced: Callable[[int], None] | None = None  # told of every paced chunk's size
    # rewrites the handler's response (data faults); None: unchanged
    rewrite: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None


class WireHook(Protocol):
    def plan(self, connection: ConnectionInfo, api_key: int,
             api_version: int) -> WirePlan | None:
        """What to do on the wire with this request, or None for nothing unusual."""

    def idle(self) -> bool:
        """True when `plan` would return None for any request."""


@dataclass
class ServerHooks:
    """Shared by every listener of a cluster, so a hook installed later reaches them all."""

    request: RequestHook | None = None
    trace: Tracer | None = None  # the request trace; None: off
    wire: WireHook | None = None  # connection-level faults; None: none
    connections: dict[int, ConnectionInfo] = field(default_factory=dict)  # open, by id
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def next_connection_id(self) -> int:
        return next(self._ids)

    def close_connections(self, broker_id: int, reason: str) -> int:
        """Close every connection open to broker `broker_id` now (a decision of the cluster,
        e.g. KIP-778 ApiVersions renegotiation); returns how many."""
        targets = [info for info in self.connections.values()
                   if info.broker_id == broker_id and info.close is not None]
        for info in targets:
            assert info.close is not None
            info.close(reason)
        return len(targets)
