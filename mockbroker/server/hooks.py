"""A hook the layers above install to steer requests before and after their handlers.

Theory of operation: imports go downward only, so the server does not know about the control
layer's faults. It defines this small interface instead: for every decoded request a
connection asks `ServerHooks.request` (when set) for a plan. The plan may delay the request,
close the connection without answering, answer in place of the handler, or rewrite the
handler's response (per-partition error codes). A hook that returns None costs one call.

`ServerHooks.trace` is the request trace (mockbroker.server.trace): None means off, and then
a connection does nothing for it beyond reading the attribute.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kafka_protocol_codec import Struct

    from mockbroker.cluster import BrokerNode
    from mockbroker.server.trace import Tracer


class RequestPlan(Protocol):
    delay_ms: float  # wait this long before handling the request
    disconnect: bool  # then close the connection without an answer
    response: Mapping[str, Any] | None  # answer this instead of calling the handler

    def after(self, response: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """Rewrite the handler's response (None: the handler sends no response)."""


class RequestHook(Protocol):
    def before(self, node: BrokerNode, api_key: int, api_version: int,
               body: Struct) -> RequestPlan | None:
        """A plan for this request, or None to handle it normally. May edit `body`."""


@dataclass
class ServerHooks:
    """Shared by every listener of a cluster, so a hook installed later reaches them all."""

    request: RequestHook | None = None
    trace: Tracer | None = None  # the request trace; None: off
