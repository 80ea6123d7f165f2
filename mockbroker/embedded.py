"""In-process use: `async with MockCluster(...)` and the thread-backed `MockClusterThread`.

Theory of operation: MockCluster runs a ClusterServer on the caller's event loop. Tests that
are not async (kafka-python, confluent-kafka, kcat in a subprocess) need the broker to keep
serving while they block, so MockClusterThread runs the same thing on an event loop in a
daemon thread; `call(fn, *args)` runs a function on that loop and returns its result, which
keeps every mutation of cluster state on the loop that owns it.

Readiness: `start()` returns only when every broker's listener is bound and listening (the
kernel accepts connections from then on), and, with `control_port`, when the HTTP control
API answers. A listener that cannot bind raises OSError at once, naming the broker, the
address and the reason ("broker 1 cannot listen on 127.0.0.1:9093: Address already in
use"); whatever was already bound is closed first. MockClusterThread raises the same error
from `start()` in the calling thread. Bad arguments (an unknown `kafka_version`) raise
ValueError from the constructor.

`control` is the control API (mockbroker.control, docs/control-api.md): on MockCluster every
verb is a coroutine; on MockClusterThread `control` offers them as blocking calls and
`acontrol` as coroutines for async code on another loop (both run the verb on the
cluster's loop). With `control_port` (0: a free port) the same verbs are served over HTTP at
`control_url`.

Options beyond the cluster model's (`ClusterConfig` fields pass through as keywords):
`kafka_version` advertises what that Kafka release advertised (mockbroker.versions; by
default 4.0, "all" for every version mockbroker handles);
`trace=True` logs one line per request on the "mockbroker.trace" logger; `trace_buffer=N`
keeps the last N requests for `control.trace()` (default 1000 with trace, else off).
`data_dir="DIR"` (a ClusterConfig field) persists the cluster in DIR: a MockCluster started
again on DIR has the topics, records, committed offsets and users of the last one
(mockbroker.cluster.persistence.data_dir); `stop()` closes its files.

Security (README "Security: listeners, TLS, SASL"): `security_protocol="SASL_SSL"` makes the
first listener set use that protocol; `listeners="SASL_SSL://127.0.0.1:0,PLAINTEXT://..."`
with `advertised_listeners` and `listener_security_protocol_map` configures named sets as
Kafka's listeners do (the first is the registered one). `sasl_users={"alice": "secret"}`
(or "alice:secret,bob:pw"), `sasl_mechanisms` (default PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
OAUTHBEARER), `connections_max_reauth_ms`; `ssl_certfile`/`ssl_keyfile`/`ssl_cafile`
(default: generated, see `tls_files`) and `ssl_client_auth` (none, requested, required).
`listener_bootstrap(name)` is one listener's bootstrap list.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mockbroker.cluster import Cluster, ClusterConfig
from mockbroker.cluster.clock import Clock
from mockbroker.cluster.configs.broker_properties import unstable_api_versions_enabled
from mockbroker.control.api import ControlAPI, ControlError, api_keys_of
from mockbroker.control.faults import DEFAULT_SEED
from mockbroker.control.http import ControlHTTPServer
from mockbroker.control.waits import DEFAULT_TIMEOUT_MS as DEFAULT_WAIT_TIMEOUT_MS
from mockbroker.handlers import advertised_versions
from mockbroker.server.cluster_server import ClusterServer, ListenerConfig
from mockbroker.server.listeners import SECURITY_PROTOCOLS, parse_named_listeners
from mockbroker.server.sasl import SaslSettings
from mockbroker.server.tls import TlsFiles, TlsSettings
from mockbroker.server.trace import DEFAULT_BUFFER
from mockbroker.versions import caps_for, normalize

T = TypeVar("T")
START_TIMEOUT = 30.0  # seconds MockClusterThread waits for its loop to start the cluster
CALL_TIMEOUT = 30.0


class MockCluster:
    def __init__(self, brokers: int = 3, *, host: str = "127.0.0.1", port: int = 0,
                 advertised_host: str | None = None, advertised_port: int | None = None,
                 clock: Clock | None = None, config: ClusterConfig | None = None,
                 control_port: int | None = None, control_host: str | None = None,
                 fault_seed: int = DEFAULT_SEED, kafka_version: str | None = None,
                 api_caps: dict[int, tuple[int, int]] | None = None, trace: bool = False,
                 trace_buffer: int | None = None, trace_api: str | list[Any] | None = None,
                 extra_listeners: list[ListenerConfig] | None = None,
                 security_protocol: str | None = None, listeners: str | None = None,
                 advertised_listeners: str | None = None,
                 listener_security_protocol_map: str | dict[str, str] | None = None,
                 sasl_users: str | dict[str, str] | None = None,
                 sasl_mechanisms: str | list[str] | None = None,
                 connections_max_reauth_ms: int = 0, ssl_certfile: str | None = None,
                 ssl_keyfile: str | None = None, ssl_cafile: str | None = None,
                 ssl_client_auth: str = "none", **config_kwargs: Any) -> None:
        if kafka_version is not None and api_caps is not None:
            raise ValueError("give kafka_version or api_caps, not both")
        if config is None:
            config = ClusterConfig(brokers=brokers, **config_kwargs)
        elif config_kwargs:
            raise ValueError(f"give config or cluster keywords ({', '.join(config_kwargs)}), "
                             "not both")
        if api_caps is None:
            handled = {key: (low, high) for key, low, high in advertised_versions()}
            api_caps = caps_for(kafka_version, handled,
                                unstable_api_versions_enabled(config.broker_properties))
        self.kafka_version = None if kafka_version is None else normalize(kafka_version)
        named = _named_listeners(listeners, advertised_listeners,
                                 listener_security_protocol_map)
        if named:
            listener, extra_listeners = named[0], [*named[1:], *(extra_listeners or ())]
        else:
            listener = ListenerConfig(host, port, advertised_host, advertised_port)
        if security_protocol is not None:
            protocol = security_protocol.upper()
            if protocol not in SECURITY_PROTOCOLS:
                raise ValueError(f"security_protocol must be one of "
                                 f"{', '.join(SECURITY_PROTOCOLS)}, got {security_protocol!r}")
            listener.security_protocol, listener.name = protocol, listener.name or protocol
        sasl = SaslSettings(connections_max_reauth_ms=connections_max_reauth_ms)
        if sasl_mechanisms is not None:
            sasl = SaslSettings(tuple(parse_mechanisms(sasl_mechanisms)),
                                connections_max_reauth_ms)
        tls = TlsSettings(ssl_certfile, ssl_keyfile, ssl_cafile, ssl_client_auth.lower())
        self.server = ClusterServer(config, listener, clock=clock, api_caps=api_caps,
                                    extra_listeners=extra_listeners, tls=tls, sasl=sasl)
        for name, password in parse_users(sasl_users).items():
            self.server.cluster.credentials.add_user(name, password)
        self.server.cluster.credentials.mark_baseline()
        self.control = ControlAPI(self.server, seed=fault_seed)
        if trace or trace_buffer is not None:
            try:
                apis = api_keys_of(trace_api)
            except ControlError as exc:
                raise ValueError(f"trace_api: {exc.message}") from None
            self.control.enable_trace(trace_buffer or DEFAULT_BUFFER, log_lines=trace,
                                      apis=apis)
            trace_log = logging.getLogger("mockbroker.trace")
            if trace and trace_log.level == logging.NOTSET:
                trace_log.setLevel(logging.INFO)
        self.http: ControlHTTPServer | None = None
        if control_port is not None:
            self.http = ControlHTTPServer(self.control, control_host or host, control_port)
        self.running = False

    @property
    def control_url(self) -> str | None:
        """The HTTP control endpoint (None unless started with control_port)."""
        return self.http.url if self.http is not None else None

    @property
    def cluster(self) -> Cluster:
        return self.server.cluster

    @property
    def bootstrap_servers(self) -> str:
        """"host:port,host:port,..." of the running brokers, as clients should be given."""
        return self.server.bootstrap_servers

    def listener_bootstrap(self, name: str) -> str:
        """The bootstrap list of the listener set `name` (e.g. "SASL_SSL")."""
        return self.server.listener_bootstrap_servers(name)

    @property
    def tls_files(self) -> TlsFiles | None:
        """The TLS listeners' PEM files (ca.pem to trust; None before start or without
        TLS)."""
        return self.server.tls_files

    async def start(self, *, wait_for_control: bool = True) -> MockCluster:
        """Return once every listener accepts connections; raise OSError if one cannot
        bind (nothing stays bound then). With `wait_for_control=False` (the CLI) the HTTP
        control port is listening but may still be loading aiohttp (requests wait in the
        backlog until it serves)."""
        if self.running:
            return self
        await self.server.start()
        if self.http is not None:
            try:
                await self.http.start(wait=wait_for_control)
            except OSError as exc:
                await self.server.stop()
                raise OSError(exc.errno, f"control API cannot listen on "
                                         f"{self.http.host}:{self.http.port}: "
                                         f"{exc.strerror or exc}") from exc
            except BaseException:
                await self.server.stop()
                raise
        self.running = True
        return self

    async def stop(self) -> None:
        if self.http is not None:
            await self.http.stop()
        await self.server.stop()
        self.cluster.close_storage()  # files reopen on the next write (a restart)
        self.running = False

    async def __aenter__(self) -> MockCluster:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class MockClusterThread:
    """A MockCluster served from a background thread, for synchronous tests. Takes
    MockCluster's arguments."""

    def __init__(self, brokers: int = 3, **kwargs: Any) -> None:
        if kwargs.get("kafka_version") is not None:
            normalize(kwargs["kafka_version"])  # a bad version fails here, not in the thread
        self._kwargs = dict(kwargs, brokers=brokers)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.mock: MockCluster | None = None

    def _started(self) -> MockCluster:
        if self.mock is None or self._loop is None:
            raise RuntimeError("the cluster is not running: use `with MockClusterThread(...)` "
                               "or call start()")
        return self.mock

    @property
    def cluster(self) -> Cluster:
        return self._started().cluster

    @property
    def bootstrap_servers(self) -> str:
        return self._started().bootstrap_servers

    @property
    def control(self) -> SyncControl:
        """The control verbs as blocking calls (each runs on the cluster's loop)."""
        self._started()
        return SyncControl(self)

    @property
    def acontrol(self) -> AsyncControl:
        """The control verbs as coroutines for code running on another event loop."""
        self._started()
        return AsyncControl(self)

    @property
    def control_url(self) -> str | None:
        return self._started().control_url

    def listener_bootstrap(self, name: str) -> str:
        return self._started().listener_bootstrap(name)

    @property
    def tls_files(self) -> TlsFiles | None:
        return self._started().tls_files

    def start(self) -> MockClusterThread:
        """Return once every listener accepts connections; raise the start's error
        (OSError naming the broker and address for a bind failure) otherwise."""
        if self._loop is not None:
            return self
        started: concurrent.futures.Future[asyncio.AbstractEventLoop] = \
            concurrent.futures.Future()

        def run() -> None:
            try:
                import uvloop

                loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
            except ImportError:
                loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                mock = MockCluster(**self._kwargs)
                loop.run_until_complete(mock.start())
            except BaseException as exc:
                loop.close()
                started.set_exception(exc)
                return
            self.mock = mock
            started.set_result(loop)
            loop.run_forever()
            try:
                loop.run_until_complete(mock.stop())
            finally:
                loop.close()

        thread = threading.Thread(target=run, name="mockbroker", daemon=True)
        thread.start()
        try:
            self._loop = started.result(timeout=START_TIMEOUT)
        except BaseException:
            thread.join(timeout=START_TIMEOUT)
            raise
        self._thread = thread
        return self

    def call(self, fn: Callable[..., T | Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run fn(*args, **kwargs) on the cluster's event loop and return its result (a
        coroutine function's result is awaited there)."""
        return self.submit(fn, *args, **kwargs).result(timeout=CALL_TIMEOUT)

    def submit(self, fn: Callable[..., T | Awaitable[T]], *args: Any,
               **kwargs: Any) -> concurrent.futures.Future[T]:
        """Like call, without waiting: a concurrent Future of the result."""
        self._started()
        assert self._loop is not None

        async def invoke() -> T:
            result = fn(*args, **kwargs)
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                return await result  # type: ignore[no-any-return]
            return result  # type: ignore[return-value]

        return asyncio.run_coroutine_threadsafe(invoke(), self._loop)

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=CALL_TIMEOUT)

    def __enter__(self) -> MockClusterThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _named_listeners(listeners: str | None, advertised: str | None,
                     protocol_map: str | dict[str, str] | None) -> list[ListenerConfig]:
    if isinstance(protocol_map, dict):
        protocol_map = ",".join(f"{k}:{v}" for k, v in protocol_map.items())
    if listeners is None:
        if advertised is not None or protocol_map is not None:
            raise ValueError("advertised_listeners and listener_security_protocol_map go "
                             "with listeners")
        return []
    return parse_named_listeners(listeners, advertised, protocol_map)


def parse_users(users: str | dict[str, str] | None) -> dict[str, str]:
    """`{"alice": "secret"}` or "alice:secret,bob:pw" (a password may hold ':' but not
    ',')."""
    if users is None:
        return {}
    if isinstance(users, dict):
        pairs = list(users.items())
    else:
        pairs = []
        for entry in (e.strip() for e in users.split(",")):
            if not entry:
                continue
            name, sep, password = entry.partition(":")
            if not sep:
                raise ValueError(f"SASL user {entry!r}: expected NAME:PASSWORD")
            pairs.append((name, password))
    for name, password in pairs:
        if not name or not password:
            raise ValueError(f"SASL user {name!r}: name and password must not be empty")
    return dict(pairs)


def parse_mechanisms(mechanisms: str | list[str]) -> list[str]:
    if isinstance(mechanisms, str):
        mechanisms = [m for m in mechanisms.split(",") if m.strip()]
    return [m.strip().upper() for m in mechanisms]


def _call_timeout(verb: str, kwargs: dict[str, Any]) -> float:
    """How long a blocking caller waits for a verb: a wait verb's own timeout plus the
    usual margin (the verb itself gives up at its timeout and says why)."""
    if verb.startswith("wait_"):
        timeout_ms = kwargs.get("timeout_ms")
        if isinstance(timeout_ms, int) and not isinstance(timeout_ms, bool):
            return timeout_ms / 1000 + CALL_TIMEOUT
        return DEFAULT_WAIT_TIMEOUT_MS / 1000 + CALL_TIMEOUT
    return CALL_TIMEOUT


class SyncControl:
    """ControlAPI's verbs for synchronous code: `mock.control.elect_leader("t", 0)` blocks
    until the verb has run on the cluster's event loop and returns its result (a
    ControlError propagates)."""

    def __init__(self, thread: MockClusterThread) -> None:
        self._thread = thread

    def __getattr__(self, name: str) -> Callable[..., Any]:
        verb = getattr(self._thread._started().control, name)
        if not callable(verb) or name.startswith("_"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            future = self._thread.submit(verb, *args, **kwargs)
            return future.result(timeout=_call_timeout(name, kwargs))

        call.__name__ = name
        call.__doc__ = verb.__doc__
        return call

    def __dir__(self) -> list[str]:
        return sorted(ControlAPI.VERBS.values())


class AsyncControl:
    """ControlAPI's verbs for async code on another loop (pytest-asyncio tests against a
    MockClusterThread): `await mock.acontrol.stop_broker(1)` runs the verb on the cluster's
    loop and awaits its result without blocking the caller's loop."""

    def __init__(self, thread: MockClusterThread) -> None:
        self._thread = thread

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        verb = getattr(self._thread._started().control, name)
        if not callable(verb) or name.startswith("_"):
            raise AttributeError(name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.wrap_future(self._thread.submit(verb, *args, **kwargs))

        call.__name__ = name
        call.__doc__ = verb.__doc__
        return call

    def __dir__(self) -> list[str]:
        return sorted(ControlAPI.VERBS.values())
