"""In-process use: `async with MockCluster(...)` and the thread-backed `MockClusterThread`.

Theory of operation: MockCluster runs a ClusterServer on the caller's event loop. Tests that
are not async (kafka-python, confluent-kafka, kcat in a subprocess) need the broker to keep
serving while they block, so MockClusterThread runs the same thing on an event loop in a
daemon thread; `call(fn, *args)` runs a function on that loop and returns its result, which
keeps every mutation of cluster state on the loop that owns it. Both return from start only
when every listener accepts, and raise at once if a listener cannot bind.

`MockCluster.control` is the control API (mockbroker.control): every verb as a coroutine.
With `control_port` (0: a free port) the same verbs are served over HTTP at `control_url`.
`MockClusterThread.control` offers the verbs as plain blocking calls, each run on the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from mockbroker.cluster import Cluster, ClusterConfig
from mockbroker.cluster.clock import Clock
from mockbroker.control.api import ControlAPI
from mockbroker.control.faults import DEFAULT_SEED
from mockbroker.control.http import ControlHTTPServer
from mockbroker.server.cluster_server import ClusterServer, ListenerConfig

T = TypeVar("T")


class MockCluster:
    def __init__(self, brokers: int = 3, *, host: str = "127.0.0.1", port: int = 0,
                 advertised_host: str | None = None, clock: Clock | None = None,
                 config: ClusterConfig | None = None, control_port: int | None = None,
                 control_host: str | None = None, fault_seed: int = DEFAULT_SEED,
                 **config_kwargs: Any) -> None:
        if config is None:
            config = ClusterConfig(brokers=brokers, **config_kwargs)
        self.server = ClusterServer(config, ListenerConfig(host, port, advertised_host),
                                    clock=clock)
        self.control = ControlAPI(self.server, seed=fault_seed)
        self.http: ControlHTTPServer | None = None
        if control_port is not None:
            self.http = ControlHTTPServer(self.control, control_host or host, control_port)

    @property
    def control_url(self) -> str | None:
        """The HTTP control endpoint (None unless started with control_port)."""
        return self.http.url if self.http is not None else None

    @property
    def cluster(self) -> Cluster:
        return self.server.cluster

    @property
    def bootstrap_servers(self) -> str:
        return self.server.bootstrap_servers

    async def start(self) -> MockCluster:
        await self.server.start()
        if self.http is not None:
            try:
                await self.http.start()
            except BaseException:
                await self.server.stop()
                raise
        return self

    async def stop(self) -> None:
        if self.http is not None:
            await self.http.stop()
        await self.server.stop()

    async def __aenter__(self) -> MockCluster:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class MockClusterThread:
    """A MockCluster served from a background thread, for synchronous tests."""

    def __init__(self, brokers: int = 3, **kwargs: Any) -> None:
        self._kwargs = dict(kwargs, brokers=brokers)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.mock: MockCluster | None = None

    @property
    def cluster(self) -> Cluster:
        assert self.mock is not None, "not started"
        return self.mock.cluster

    @property
    def bootstrap_servers(self) -> str:
        assert self.mock is not None, "not started"
        return self.mock.bootstrap_servers

    @property
    def control(self) -> SyncControl:
        """The control verbs as blocking calls (each runs on the cluster's loop)."""
        assert self.mock is not None, "not started"
        return SyncControl(self)

    @property
    def control_url(self) -> str | None:
        assert self.mock is not None, "not started"
        return self.mock.control_url

    def start(self) -> MockClusterThread:
        started: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            try:
                import uvloop

                loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
            except ImportError:
                loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self.mock = MockCluster(**self._kwargs)
                loop.run_until_complete(self.mock.start())
            except BaseException as exc:
                started.set_exception(exc)
                loop.close()
                return
            started.set_result(None)
            loop.run_forever()
            loop.run_until_complete(self.mock.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="mockbroker", daemon=True)
        self._thread.start()
        started.result(timeout=30)
        return self

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run fn(*args) on the cluster's event loop and return its result."""
        assert self._loop is not None, "not started"

        async def invoke() -> T:
            result = fn(*args, **kwargs)
            if asyncio.iscoroutine(result):
                return await result  # type: ignore[no-any-return]
            return result

        return asyncio.run_coroutine_threadsafe(invoke(), self._loop).result(timeout=30)

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._loop = None

    def __enter__(self) -> MockClusterThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SyncControl:
    """ControlAPI's verbs for synchronous code: `mock.control.elect_leader("t", 0)` blocks
    until the verb has run on the cluster's event loop and returns its result (a
    ControlError propagates)."""

    def __init__(self, thread: MockClusterThread) -> None:
        self._thread = thread

    def __getattr__(self, name: str) -> Callable[..., Any]:
        assert self._thread.mock is not None, "not started"
        verb = getattr(self._thread.mock.control, name)
        if not callable(verb) or name.startswith("_"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._thread.call(verb, *args, **kwargs)

        call.__name__ = name
        call.__doc__ = verb.__doc__
        return call

    def __dir__(self) -> list[str]:
        return sorted(ControlAPI.VERBS.values())
