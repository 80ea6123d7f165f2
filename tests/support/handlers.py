"""Drive request handlers in-process: no sockets, no server, no event-loop ticker.

Why: most of a handler's behaviour (error codes, fencing order, offsets, record contents) is
a function of the request and the cluster model; testing it through a socket adds framing,
timing and connection handling that other tests already cover. `HandlerHarness` builds a
`Cluster` on a `ManualClock` (time moves only when a test advances it), registers every
broker as `ClusterServer` does (`Cluster.start_broker`, with an endpoint nothing listens
on), and answers requests the way `server.connection` does: the body is encoded with the
codec and decoded again (so the handler gets a real `Struct`), a `RequestContext` is built
for the chosen broker, API and version, and `REGISTRY[api_key].func` is called and awaited
if it returns an awaitable. The handler's answer is encoded and decoded at the same version,
so a test sees exactly what a client would read off the wire.

`RequestContext` is constructed in one place only (`HandlerHarness.context`), so a change to
its constructor is a one-line fix here.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Mapping
from typing import Any

from kafka_protocol_codec import (
    Request,
    Struct,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.handlers import REGISTRY, advertised_versions
from mockbroker.handlers.acks import produce_answer
from mockbroker.handlers.context import RequestContext

HOST = "127.0.0.1"
FIRST_PORT = 19092  # advertised only: nothing listens in these tests
CLIENT_ID = "handler-test"
CLIENT_ADDRESS = "in-process"


class HandlerParked(AssertionError):
    """The handler suspended (long-polled) where the test expected an immediate answer."""


class HandlerHarness:
    """A cluster model plus a way to call any handler on any of its brokers."""

    def __init__(self, brokers: int = 3, *, clock: ManualClock | None = None,
                 advertised: Mapping[int, tuple[int, int]] | None = None,
                 **config: Any) -> None:
        self.clock = clock or ManualClock()
        self.cluster = Cluster(ClusterConfig(brokers=brokers, **config), self.clock)
        for broker_id in self.cluster.brokers:
            self.cluster.start_broker(broker_id, HOST, FIRST_PORT + broker_id)
        self.advertised = dict(advertised) if advertised is not None else {
            key: (low, high) for key, low, high in advertised_versions()}
        self._correlation = itertools.count(1)

    # -- the one place a RequestContext is made ---------------------------------------------

    def context(self, broker_id: int, request: Request) -> RequestContext:
        return RequestContext(self.cluster, self.cluster.brokers[broker_id], request.api_key,
                              request.api_version, request.correlation_id, request.client_id,
                              request.header, CLIENT_ADDRESS, self.advertised)

    # -- calling handlers -------------------------------------------------------------------

    def _start(self, broker_id: int, api_key: int, version: int,
               body: Mapping[str, Any] | None, client_id: str | None) -> tuple[int, Any]:
        """Decode the request as the server would and call the handler; returns the
        correlation id and the handler's result (possibly an awaitable)."""
        low, high = self.advertised.get(api_key, (0, -1))
        if not low <= version <= high:
            raise ValueError(f"API {api_key} v{version} is not advertised ({low}-{high}): "
                             "the server would close the connection before any handler")
        correlation_id = next(self._correlation)
        request = decode_request(encode_request(api_key, version, body or {},
                                                correlation_id=correlation_id,
                                                client_id=client_id))
        ctx = self.context(broker_id, request)
        result = REGISTRY[api_key].func(request.body, ctx)
        if api_key == 0:  # as the dispatcher: acks=0 sends nothing, or closes on an error
            result = produce_answer(request.body, result)
        return correlation_id, result

    @staticmethod
    def _as_received(api_key: int, version: int, correlation_id: int,
                     result: Mapping[str, Any] | None) -> Struct | None:
        if result is None:  # no response at all (Produce with acks=0)
            return None
        frame = encode_response(api_key, version, correlation_id, result)
        response = decode_response(api_key, version, frame)
        assert response.correlation_id == correlation_id
        return response.body

    async def call(self, broker_id: int, api_key: int, version: int,
                   body: Mapping[str, Any] | None = None, *,
                   client_id: str | None = CLIENT_ID) -> Struct | None:
        """The response body as a client would decode it; None when none would be sent."""
        correlation_id, result = self._start(broker_id, api_key, version, body, client_id)
        if inspect.isawaitable(result):
            result = await result
        return self._as_received(api_key, version, correlation_id, result)

    def call_now(self, broker_id: int, api_key: int, version: int,
                 body: Mapping[str, Any] | None = None, *,
                 client_id: str | None = CLIENT_ID) -> Struct | None:
        """Like `call`, but the handler must answer without suspending even once (a Fetch
        that should not long-poll); raises HandlerParked otherwise. No clock is involved."""
        correlation_id, result = self._start(broker_id, api_key, version, body, client_id)
        if inspect.iscoroutine(result):
            try:
                result.send(None)
            except StopIteration as finished:
                result = finished.value
            else:
                result.close()
                raise HandlerParked(f"API {api_key} v{version} on broker {broker_id} "
                                    "suspended instead of answering at once")
        return self._as_received(api_key, version, correlation_id, result)

    def client(self, broker_id: int) -> BrokerHandle:
        """A Requester bound to one broker, for helpers written against RawClient."""
        return BrokerHandle(self, broker_id)

    # -- cluster shortcuts ------------------------------------------------------------------

    def leader(self, topic: str, partition: int = 0) -> int:
        part = self.cluster.image.partition(topic, partition)
        assert part is not None, f"{topic}-{partition} does not exist"
        return part.leader

    def leader_epoch(self, topic: str, partition: int = 0) -> int:
        part = self.cluster.image.partition(topic, partition)
        assert part is not None, f"{topic}-{partition} does not exist"
        return part.leader_epoch

    @staticmethod
    async def settle(task: asyncio.Future[Any], max_rounds: int = 50) -> bool:
        """Let the event loop run ready callbacks (never timers) until `task` is done or
        `max_rounds` passes are over; returns whether it is done."""
        for _ in range(max_rounds):
            if task.done():
                return True
            await asyncio.sleep(0)
        return task.done()


class BrokerHandle:
    """One broker of a HandlerHarness; a Requester (tests.support.rawclient), like RawClient."""

    def __init__(self, harness: HandlerHarness, broker_id: int) -> None:
        self.harness = harness
        self.broker_id = broker_id

    async def request(self, api_key: int, version: int,
                      body: Mapping[str, Any] | None = None) -> Struct:
        response = await self.harness.call(self.broker_id, api_key, version, body)
        assert response is not None, "the handler sent no response"
        return response
