"""pytest plugin (entry point `pytest11`): a Kafka cluster fixture for every test that asks.

Fixtures:

- `mockbroker` (function scope): a running cluster, reset to a fresh state before the test
  (no topics, groups, producers, faults; stopped brokers back up). It offers
  `bootstrap_servers`, `control` (the control verbs as blocking calls), `acontrol` (the
  same as coroutines, for pytest-asyncio tests), `call(fn, ...)` (run fn on the cluster's
  loop), `cluster` (the model, read it through `call`), `trace()` (this test's requests),
  `control_url` and `thread` (the MockClusterThread).
- `mockbroker_cluster` (session scope): the default cluster itself (a MockClusterThread),
  shared by the tests, never reset by the fixture.

Options, for a test: `@pytest.mark.mockbroker(brokers=1, kafka_version="2.8",
partitions=3, ...)`; `scenario=` (a file path or a dict, mockbroker.control.scenario) and
`scenario_seed=` start a scenario after the reset, and a failed test's report then gets a
"mockbroker scenario" section with the seed and every step that fired or indirect parametrization (`@pytest.mark.parametrize("mockbroker",
[{"brokers": 1}, {"brokers": 3}], indirect=True)`); they take MockCluster's keywords and
ClusterConfig's fields (`data_dir="DIR"` persists that cluster in DIR; the fixture's reset
empties it like the rest), plus the CLI's names `partitions` and `replication_factor`. For the
session: `--mockbroker-brokers N`, `--mockbroker-kafka-version V`, `--mockbroker-trace` (log
every request on the "mockbroker.trace" logger), or the ini keys `mockbroker_brokers`,
`mockbroker_kafka_version`.

Theory of operation: clusters run in a background thread (MockClusterThread), so the same
cluster serves sync tests and async tests, whatever event loop pytest-asyncio gives each
test. A session-wide pool keeps one running cluster per distinct set of options (the
default one, and one per marker/parameter combination, at most MAX_CLUSTERS, the least
recently used stopped beyond that), so a test pays for a reset (well under a millisecond on
the loop, plus a thread hop), not a start. Every pooled cluster records the request trace;
the fixture notes the trace's sequence number after the reset, and when a test fails the
report gets a "mockbroker request trace" section with the requests sent during the test
(the last TRACE_LINES of them).

This module imports only pytest at import time (it is loaded in every pytest session where
mockbroker is installed); mockbroker itself is imported when a fixture is first used.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mockbroker.cluster import Cluster
    from mockbroker.embedded import AsyncControl, MockClusterThread, SyncControl
    from mockbroker.server.tls import TlsFiles

MAX_CLUSTERS = 8
TRACE_BUFFER = 10_000  # requests kept per pooled cluster (the report shows the last TRACE_LINES)
TRACE_LINES = 200
TRACE_TIMEOUT = 5.0  # seconds to read a failed test's trace before giving up
ALIASES = {"partitions": "default_partitions",
           "replication_factor": "default_replication_factor"}
_HANDLE = pytest.StashKey["MockBroker"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mockbroker", "mockbroker Kafka simulator")
    group.addoption("--mockbroker-brokers", type=int, default=None, metavar="N",
                    help="brokers of the default `mockbroker` cluster (default 3)")
    group.addoption("--mockbroker-kafka-version", default=None, metavar="VERSION",
                    help="Kafka release the default cluster advertises (2.8, 3.0, 3.6, 3.9, "
                         "4.0; default: everything mockbroker handles)")
    group.addoption("--mockbroker-trace", action="store_true", default=False,
                    help="log one line per Kafka request (logger mockbroker.trace)")
    parser.addini("mockbroker_brokers", "brokers of the default mockbroker cluster",
                  default="3")
    parser.addini("mockbroker_kafka_version", "Kafka release the default mockbroker "
                  "cluster advertises", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "mockbroker(**options): options of the `mockbroker` fixture's cluster, "
                   "e.g. brokers=1, kafka_version='2.8', partitions=3 (MockCluster keywords "
                   "and ClusterConfig fields)")


def _defaults(config: pytest.Config) -> dict[str, Any]:
    brokers = config.getoption("mockbroker_brokers") or int(config.getini("mockbroker_brokers"))
    options: dict[str, Any] = {"brokers": brokers}
    version = config.getoption("mockbroker_kafka_version") or config.getini(
        "mockbroker_kafka_version")
    if version:
        options["kafka_version"] = str(version)
    if config.getoption("mockbroker_trace"):
        options["trace"] = True
    return options


def _normalize(options: dict[str, Any]) -> dict[str, Any]:
    return {ALIASES.get(k, k): v for k, v in options.items()}


def _key(options: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in options.items()))


class ClusterPool:
    """Running clusters by options, for the whole session."""

    def __init__(self, defaults: dict[str, Any]) -> None:
        self.defaults = _normalize(defaults)
        self._clusters: OrderedDict[tuple[tuple[str, str], ...], MockClusterThread] = \
            OrderedDict()

    def get(self, overrides: dict[str, Any] | None = None) -> MockClusterThread:
        from mockbroker.embedded import MockClusterThread

        options = {**self.defaults, **_normalize(overrides or {})}
        key = _key(options)
        cluster = self._clusters.get(key)
        if cluster is not None:
            self._clusters.move_to_end(key)
            return cluster
        kwargs = dict(options)
        kwargs.setdefault("trace_buffer", TRACE_BUFFER)
        cluster = MockClusterThread(**kwargs).start()
        self._clusters[key] = cluster
        while len(self._clusters) > MAX_CLUSTERS:
            _, oldest = self._clusters.popitem(last=False)
            oldest.stop()
        return cluster

    def close(self) -> None:
        while self._clusters:
            _, cluster = self._clusters.popitem()
            cluster.stop()


class MockBroker:
    """What the `mockbroker` fixture gives a test: one reset cluster and this test's
    trace."""

    def __init__(self, thread: MockClusterThread, fault_seed: int) -> None:
        self.thread = thread
        self.scenario_loaded = False
        thread.control.reset(seed=fault_seed)
        self.trace_start = thread.call(self._last_seq)

    def _last_seq(self) -> int:
        tracer = self.thread._started().control.tracer
        return 0 if tracer is None else tracer.last_seq

    @property
    def bootstrap_servers(self) -> str:
        return self.thread.bootstrap_servers

    @property
    def control(self) -> SyncControl:
        return self.thread.control

    @property
    def acontrol(self) -> AsyncControl:
        return self.thread.acontrol

    @property
    def cluster(self) -> Cluster:
        return self.thread.cluster

    @property
    def control_url(self) -> str | None:
        return self.thread.control_url

    @property
    def tls_files(self) -> TlsFiles | None:
        """The TLS listeners' PEM files (`.ca` to trust), with security_protocol SSL or
        SASL_SSL in the marker."""
        return self.thread.tls_files

    def listener_bootstrap(self, name: str) -> str:
        return self.thread.listener_bootstrap(name)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.thread.call(fn, *args, **kwargs)

    def trace(self, n: int | None = None) -> list[dict[str, Any]]:
        """This test's Kafka requests so far (the last `n`), oldest first, as dicts."""
        verb: Callable[..., Any] = self.thread._started().control.trace
        result: dict[str, Any] = self.thread.submit(verb, n, since=self.trace_start).result(
            timeout=TRACE_TIMEOUT)
        records: list[dict[str, Any]] = result["requests"]
        return records

    def scenario_text(self) -> str:
        """The scenario's seed and the steps that fired, for replaying a failed run."""
        verb: Callable[..., Any] = self.thread._started().control.scenario
        try:
            status: dict[str, Any] = self.thread.submit(verb).result(timeout=TRACE_TIMEOUT)
        except Exception as exc:  # a wedged cluster must not hide the test's own failure
            return f"(the scenario could not be read: {type(exc).__name__}: {exc})"
        lines = [f"seed {status['seed']} (replay: "
                 f"@pytest.mark.mockbroker(scenario=..., scenario_seed={status['seed']}))",
                 f"steps fired: {status['fired_total']}"]
        for entry in status["fired"]:
            outcome = "ok" if entry["ok"] else entry["error"]
            label = "undo" if entry["undo"] else f"step {entry['step']}"
            lines.append(f"  {entry['at_ms']:>9.1f} ms  {label}: {entry['do']} "
                         f"{entry['args']} -> {outcome}")
        return "\n".join(lines)

    def trace_text(self, limit: int = TRACE_LINES) -> str:
        from mockbroker.server.trace import TraceRecord

        records = self.trace()
        if not records:
            return "(no Kafka requests during this test)"
        lines = [TraceRecord(**r).line() for r in records[-limit:]]
        if len(records) > limit:
            lines.insert(0, f"({len(records) - limit} earlier requests not shown)")
        return "\n".join(lines)


@pytest.fixture(scope="session")
def mockbroker_pool(pytestconfig: pytest.Config) -> Iterator[ClusterPool]:
    """The session's running clusters, by options (used by the fixtures below)."""
    pool = ClusterPool(_defaults(pytestconfig))
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def mockbroker_cluster(mockbroker_pool: ClusterPool) -> MockClusterThread:
    """The session's default cluster (a MockClusterThread); not reset between tests."""
    return mockbroker_pool.get()


@pytest.fixture
def mockbroker(request: pytest.FixtureRequest, mockbroker_pool: ClusterPool) -> MockBroker:
    """A cluster reset for this test; options from @pytest.mark.mockbroker(...) and from
    indirect parametrization (a dict)."""
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("mockbroker"))):
        options.update(marker.kwargs)  # the closest marker (the test's own) wins
    param = getattr(request, "param", None)
    if param is not None:
        if not isinstance(param, dict):
            raise TypeError(f"mockbroker parameters must be dicts of options, got {param!r}")
        options.update(param)
    scenario = options.pop("scenario", None)  # loaded per test, not a cluster option
    scenario_seed = options.pop("scenario_seed", None)
    thread = mockbroker_pool.get(options)
    seed = options.get("fault_seed", mockbroker_pool.defaults.get("fault_seed", 0))
    handle = MockBroker(thread, seed)
    request.node.stash[_HANDLE] = handle
    if scenario is not None:
        key = "scenario" if isinstance(scenario, dict) else "path"
        thread.control.load_scenario(**{key: scenario if key == "scenario" else str(scenario)},
                                     seed=scenario_seed)
        handle.scenario_loaded = True
    return handle


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
        item: pytest.Item,
        call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    handle = item.stash.get(_HANDLE, None)
    if not report.failed or handle is None:
        return report
    try:
        text = handle.trace_text()
    except Exception as exc:  # a wedged cluster must not hide the test's own failure
        text = f"(the trace could not be read: {type(exc).__name__}: {exc})"
    report.sections.append((f"mockbroker request trace ({report.when})", text))
    if handle.scenario_loaded:
        report.sections.append((f"mockbroker scenario ({report.when})",
                                handle.scenario_text()))
    return report
