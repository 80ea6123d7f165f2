"""The control API: the verbs tests use to steer a running cluster, in Python.

Theory of operation: `ControlAPI` wraps a ClusterServer (the network half) and its Cluster
(the model). Every verb is a coroutine run on the cluster's event loop, so it never races a
request handler; the HTTP front (control/http.py) calls the same methods by verb name
through `dispatch`. Each verb validates all of its arguments before it changes anything:
an unknown topic, partition or broker is a ControlError 404, a malformed argument or a
change the cluster refuses is a 400 (409 for a conflict such as stopping a stopped broker),
and the state is then unchanged. Every change to the model is a Cluster method (which writes
the metadata records through the controller's log); the only thing a verb does beside that
is open or close listeners. Verbs return small JSON-ready dicts describing what changed.

Verbs: state, advance-clock (a manual clock only), elect-leader, set-isr, unclean-elect, stop-broker, start-broker,
pause-metadata, resume-metadata, delay-metadata, the replication verbs (control/replication.py:
pause-replication, resume-replication, delay-replication), the request faults
(control/fault_verbs.py: inject-error, inject-latency, clear-faults), the connection faults
(control/wire_verbs.py: inject-connection-fault, refuse-connections, accept-connections,
connections),
create-topic, expand-partitions, delete-topic, reset, trace, start-trace, stop-trace, the
client telemetry verbs (control/telemetry_verbs.py), and the waits (control/wait_verbs.py):
wait-group-stable, wait-committed-offset, wait-topic-messages, wait-fault-consumed,
wait-broker-fenced, wait-telemetry, which block until their condition holds or answer 408
with what they saw last.
The SASL user verbs add-user, delete-user and users are in control/users.py.
docs/control-api.md describes them.

The request trace (mockbroker.server.trace) is off until `start-trace` (or the CLI's
--trace / --trace-buffer, or MockCluster(trace=...)) installs a Tracer on the server's
hooks; `trace` reads its ring buffer. `reset` leaves the trace alone: it is history, and
readers that want one test's requests ask for those after a sequence number (`since`).
"""

from __future__ import annotations

import inspect
import random
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec import api as api_spec
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import ClusterError, ManualClock, PartitionImage, TopicImage
from mockbroker.control.acl_verbs import VERBS as ACL_VERBS
from mockbroker.control.acl_verbs import AclVerbs
from mockbroker.control.args import api_key as _api_key
from mockbroker.control.args import integer as _int
from mockbroker.control.args import optional_integer as _opt_int
from mockbroker.control.args import string as _str
from mockbroker.control.errors import ControlError as ControlError  # re-exported
from mockbroker.control.fault_verbs import VERBS as FAULT_VERBS
from mockbroker.control.fault_verbs import FaultVerbs
from mockbroker.control.faults import DEFAULT_SEED, FaultInjector
from mockbroker.control.log_management import VERBS as LOG_MANAGEMENT_VERBS
from mockbroker.control.log_management import LogManagementVerbs
from mockbroker.control.quota_verbs import VERBS as QUOTA_VERBS
from mockbroker.control.quota_verbs import QuotaVerbs
from mockbroker.control.replication import VERBS as REPLICATION_VERBS
from mockbroker.control.replication import ReplicationVerbs
from mockbroker.control.state import snapshot, topic_state
from mockbroker.control.telemetry_verbs import VERBS as TELEMETRY_VERBS
from mockbroker.control.telemetry_verbs import TelemetryVerbs
from mockbroker.control.users import UserVerbs
from mockbroker.control.wait_verbs import VERBS as WAIT_VERBS
from mockbroker.control.wait_verbs import WaitVerbs
from mockbroker.control.wire_faults import WireFaultHook
from mockbroker.control.wire_verbs import ConnectionFaultVerbs
from mockbroker.server.cluster_server import ClusterServer
from mockbroker.server.trace import DEFAULT_BUFFER, MAX_BUFFER, Tracer

if TYPE_CHECKING:  # scenarios (and json) load with the first load_scenario
    from mockbroker.control import scenario as scenarios

MAX_DELAY_MS = 3_600_000
MAX_CLOCK_STEP_MS = 365 * 24 * 3_600_000  # a year at a time: retention tests want days


def _status_for(error: ClusterError) -> int:
    if error.code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID):
        return 404
    if error.code == ErrorCode.TOPIC_ALREADY_EXISTS:
        return 409
    return 400


# argument checks: control/args.py


def api_keys_of(value: Any) -> list[int] | None:
    """APIs as a list of keys or names, or one comma-separated string; None for None."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not value:
        raise ControlError(400, f"api must be an API name or key, a comma-separated string or "
                                f"a non-empty list of them, got {value!r}")
    return [_api_key(v.strip() if isinstance(v, str) else v) for v in value]


class ControlAPI(WaitVerbs, TelemetryVerbs, ConnectionFaultVerbs, UserVerbs, ReplicationVerbs,
                 AclVerbs, QuotaVerbs, LogManagementVerbs, FaultVerbs):
    """Every verb, as a coroutine on the cluster's event loop (the KIP-714 telemetry verbs
    live in control/telemetry_verbs.py, the connection-level fault verbs in control/wire_verbs.py,
    the request fault verbs in control/fault_verbs.py, the waits in control/wait_verbs.py,
    the SASL user verbs in control/users.py, the replication verbs in control/replication.py)."""

    VERBS: dict[str, str] = {
        "state": "state", "elect-leader": "elect_leader", "set-isr": "set_isr",
        "unclean-elect": "unclean_elect", "stop-broker": "stop_broker",
        "start-broker": "start_broker", "pause-metadata": "pause_metadata",
        "resume-metadata": "resume_metadata", "delay-metadata": "delay_metadata",
        "create-topic": "create_topic",
        "expand-partitions": "expand_partitions", "delete-topic": "delete_topic",
        "reset": "reset", "trace": "trace", "start-trace": "start_trace",
        "stop-trace": "stop_trace", "advance-clock": "advance_clock",
        "load-scenario": "load_scenario", "scenario": "scenario",
        "stop-scenario": "stop_scenario", **TELEMETRY_VERBS, **REPLICATION_VERBS,
        **LOG_MANAGEMENT_VERBS,
        "inject-connection-fault": "inject_connection_fault",
        "refuse-connections": "refuse_connections",
        "accept-connections": "accept_connections", "connections": "connections",
        "add-user": "add_user", "delete-user": "delete_user", "users": "users",
        "set-share-group-config": "set_share_group_config",
        **ACL_VERBS, **QUOTA_VERBS, **FAULT_VERBS, **WAIT_VERBS,
    }

    def __init__(self, server: ClusterServer, seed: int = DEFAULT_SEED) -> None:
        self.server = server
        self.cluster = server.cluster
        self.faults = FaultInjector(seed)
        server.hooks.request = self.faults
        server.hooks.wire = WireFaultHook(self.faults.wire_faults)
        self._init_connection_faults()
        self.last_reset_ms: float | None = None
        self.running_scenario: scenarios.ScenarioRun | None = None

    # -- dispatch (HTTP) --------------------------------------------------------------------

    async def dispatch(self, verb: str, args: Mapping[str, Any]) -> Any:
        """Run a verb by its HTTP name with JSON arguments; argument errors are 400s."""
        method_name = self.VERBS.get(verb) or self.VERBS.get(verb.replace("_", "-"))
        if method_name is None:
            raise ControlError(404, f"unknown verb {verb!r}; verbs: {', '.join(self.VERBS)}")
        method = getattr(self, method_name)
        params = inspect.signature(method).parameters
        unknown = sorted(set(args) - set(params))
        if unknown:
            raise ControlError(400, f"{verb}: unknown field(s) {', '.join(unknown)}; "
                                    f"expected {', '.join(params) or 'none'}")
        missing = [n for n, p in params.items()
                   if p.default is inspect.Parameter.empty and n not in args]
        if missing:
            raise ControlError(400, f"{verb}: missing field(s) {', '.join(missing)}")
        return await method(**args)

    # -- lookups ----------------------------------------------------------------------------

    def _topic(self, topic: Any) -> TopicImage:
        name = _str("topic", topic)
        found = self.cluster.image.topics.get(name)
        if found is None:
            raise ControlError(404, f"unknown topic {name!r}")
        return found

    def _partition(self, topic: Any, partition: Any) -> tuple[TopicImage, PartitionImage]:
        t = self._topic(topic)
        index = _int("partition", partition, 0)
        part = t.partitions.get(index)
        if part is None:
            raise ControlError(404, f"unknown partition {t.name}-{index} "
                                    f"(the topic has {len(t.partitions)})")
        return t, part

    def _broker(self, broker: Any) -> int:
        broker_id = _int("broker", broker)
        if broker_id not in self.cluster.brokers:
            raise ControlError(404, f"unknown broker {broker_id} "
                                    f"(brokers: {sorted(self.cluster.brokers)})")
        return broker_id

    def _partition_json(self, topic: str, partition: int) -> dict[str, Any]:
        entry: dict[str, Any] = topic_state(self.cluster, self.cluster.image.topics[topic])[
            "partitions"][partition]
        return {"topic": topic, **entry}

    # -- inspection -------------------------------------------------------------------------

    async def state(self) -> dict[str, Any]:
        """Brokers, controller, topics and partitions, groups, producers, transactions, faults."""
        return snapshot(self.server, self.faults)

    # -- leadership and ISR -----------------------------------------------------------------

    async def elect_leader(self, topic: str, partition: int,
                           broker: int | None = None) -> dict[str, Any]:
        """Move leadership (default: the next live in-sync replica); the epoch rises by 1."""
        t, _ = self._partition(topic, partition)
        target = None if broker is None else self._broker(broker)
        try:
            self.cluster.elect_leader(t.name, partition, target)
        except ClusterError as exc:
            raise ControlError(_status_for(exc), exc.message or exc.code.name) from exc
        return self._partition_json(t.name, partition)

    async def set_isr(self, topic: str, partition: int, isr: list[int]) -> dict[str, Any]:
        """Replace a partition's ISR: a non-empty subset of its replicas holding the leader."""
        t, part = self._partition(topic, partition)
        if not isinstance(isr, list) or not isr:
            raise ControlError(400, f"isr must be a non-empty list of broker ids, got {isr!r}")
        members = [self._broker(b) for b in isr]
        if len(set(members)) != len(members):
            raise ControlError(400, f"isr {members} has duplicates")
        outside = [b for b in members if b not in part.replicas]
        if outside:
            raise ControlError(400, f"brokers {outside} are not replicas of "
                                    f"{t.name}-{partition} (replicas {list(part.replicas)})")
        if part.leader >= 0 and part.leader not in members:
            raise ControlError(400, f"the leader {part.leader} must stay in the ISR; elect "
                                    "another leader first (or use unclean-elect)")
        self.cluster.set_isr(t.name, partition, members)
        return self._partition_json(t.name, partition)

    async def unclean_elect(self, topic: str, partition: int, broker: int,
                            truncate_to: int | None = None) -> dict[str, Any]:
        """Elect a replica outside the ISR: its log wins (truncated to `truncate_to` when
        given), the others truncate where they diverge; epoch +1."""
        t, _ = self._partition(topic, partition)
        target = self._broker(broker)
        offset = _opt_int("truncate_to", truncate_to, 0)
        try:
            result = self.cluster.unclean_elect(t.name, partition, target, offset)
        except ClusterError as exc:
            raise ControlError(_status_for(exc), exc.message or exc.code.name) from exc
        return {**self._partition_json(t.name, partition),
                "truncated_records": result.truncated_records}

    # -- broker lifecycle -------------------------------------------------------------------

    async def stop_broker(self, broker: int) -> dict[str, Any]:
        """Fence the broker, move its leaderships and coordinators, shrink ISRs, and close
        its listener and every connection to it."""
        broker_id = self._broker(broker)
        if not self.cluster.brokers[broker_id].up:
            raise ControlError(409, f"broker {broker_id} is already stopped")
        self.cluster.fence_broker(broker_id)  # the model first, in this loop turn ...
        await self.server.stop_broker(broker_id)  # ... then the sockets, at once
        return self._broker_json(broker_id)

    async def start_broker(self, broker: int) -> dict[str, Any]:
        """Listen again on the same port, re-register, catch up, restore ISR."""
        broker_id = self._broker(broker)
        if self.cluster.brokers[broker_id].up:
            raise ControlError(409, f"broker {broker_id} is already running")
        try:
            await self.server.start_broker(broker_id)
        except OSError as exc:
            raise ControlError(409, str(exc)) from exc
        self.cluster.rejoin_broker(broker_id)
        return self._broker_json(broker_id)

    def _broker_json(self, broker_id: int) -> dict[str, Any]:
        from mockbroker.control.state import broker_state

        return broker_state(self.server, broker_id)

    # -- metadata propagation ---------------------------------------------------------------

    async def pause_metadata(self, broker: int) -> dict[str, Any]:
        """The broker stops applying the metadata log and answers from its stale image."""
        broker_id = self._broker(broker)
        self.cluster.pause_metadata(broker_id)
        return self._broker_json(broker_id)

    async def resume_metadata(self, broker: int) -> dict[str, Any]:
        """Undo pause-metadata and delay-metadata: the broker catches up at once."""
        broker_id = self._broker(broker)
        self.cluster.resume_metadata(broker_id)
        return self._broker_json(broker_id)

    async def delay_metadata(self, broker: int, ms: int) -> dict[str, Any]:
        """The broker applies each metadata record `ms` after it was written (0: no delay)."""
        broker_id = self._broker(broker)
        delay = _int("ms", ms, 0, MAX_DELAY_MS)
        self.cluster.delay_metadata(broker_id, delay)
        return self._broker_json(broker_id)

    # -- time -------------------------------------------------------------------------------

    async def advance_clock(self, ms: int) -> dict[str, Any]:
        """Move a manual clock forward by `ms` and run every deadline check at once (group
        sessions, transaction timeouts, delayed metadata fire on demand)."""
        clock = self.cluster.clock
        if not isinstance(clock, ManualClock):
            raise ControlError(409, "the cluster runs on the system clock; start it with "
                                    "--clock manual (MockCluster(clock=ManualClock())) to "
                                    "advance time by hand")
        step = _int("ms", ms, 0, MAX_CLOCK_STEP_MS)
        clock.advance(step)
        self.cluster.tick()
        return {"mode": "manual", "now_ms": clock.now_ms(), "advanced_ms": step}

    # -- scenarios (control/scenario.py) ----------------------------------------------------

    async def load_scenario(self, scenario: dict[str, Any] | None = None,
                            path: str | None = None,
                            seed: int | None = None) -> dict[str, Any]:
        """Start a scenario (the object, or a .json/.toml/.yaml file on this machine):
        seed topics and data, then its steps; `seed` overrides the scenario's."""
        if (scenario is None) == (path is None):
            raise ControlError(400, "give scenario (an object) or path (a file), not both")
        from mockbroker.control import scenario as scenarios

        name = None
        if path is not None:
            try:
                scenario = scenarios.load_file(_str("path", path))
            except ValueError as exc:
                raise ControlError(400, str(exc)) from None
            name = path
        parsed = scenarios.parse(scenario, self.VERBS, _api_key)
        if self.running_scenario is not None and self.running_scenario.running:
            raise ControlError(409, "a scenario is running; stop-scenario first")
        chosen = _opt_int("seed", seed, 0)
        if chosen is None:
            chosen = parsed.seed if parsed.seed is not None else random.randrange(2**31)
        run = scenarios.ScenarioRun(self, parsed, chosen, name)
        await run.start()
        self.running_scenario = run
        return run.status()

    async def scenario(self) -> dict[str, Any]:
        """The running (or last) scenario: seed, steps, and every firing so far."""
        if self.running_scenario is None:
            return {"running": False, "seed": None, "steps": [], "pending": 0,
                    "fired_total": 0, "fired": []}
        return self.running_scenario.status()

    async def stop_scenario(self) -> dict[str, Any]:
        """Stop the scenario: pending steps are cancelled, pending undos run now."""
        if self.running_scenario is None:
            raise ControlError(409, "no scenario was loaded")
        await self.running_scenario.stop()
        return self.running_scenario.status()

    # -- share groups (KIP-932) -------------------------------------------------------------

    async def set_share_group_config(self, group: str, key: str,
                                     value: str | None = None) -> dict[str, Any]:
        """Set (or with no value, reset) a share group config: share.auto.offset.reset
        (latest/earliest) or share.isolation.level (read_uncommitted/read_committed)."""
        allowed = {"share.auto.offset.reset": ("latest", "earliest"),
                   "share.isolation.level": ("read_uncommitted", "read_committed")}
        name, config = _str("group", group), _str("key", key)
        if config not in allowed:
            raise ControlError(400, f"unknown share group config {config!r}; "
                                    f"known: {', '.join(allowed)}")
        if value is not None and value not in allowed[config]:
            raise ControlError(400, f"{config} must be one of {', '.join(allowed[config])}")
        self.cluster.share_groups.set_group_config(name, config, value)
        return {"group": name, "configs": dict(self.cluster.share_groups.groups[name].configs)}

    # -- topics -----------------------------------------------------------------------------

    async def create_topic(self, topic: str, partitions: int | None = None,
                           replication_factor: int | None = None,
                           configs: dict[str, Any] | None = None) -> dict[str, Any]:
        """Create a topic (defaults: the cluster's partitions and replication factor)."""
        name = _str("topic", topic)
        count = _opt_int("partitions", partitions, 1)
        rf = _opt_int("replication_factor", replication_factor, 1)
        if configs is not None and not isinstance(configs, dict):
            raise ControlError(400, f"configs must be an object, got {configs!r}")
        values = {}
        for key, value in (configs or {}).items():
            if isinstance(value, (dict, list)) or value is None:
                raise ControlError(400, f"config {key} must be a string or number")
            values[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
        try:
            created = self.cluster.create_topic(name, count, rf, values or None)
        except ClusterError as exc:
            raise ControlError(_status_for(exc), exc.message or exc.code.name) from exc
        assert created is not None
        return {"topic": name, **topic_state(self.cluster, created)}

    async def expand_partitions(self, topic: str, partitions: int) -> dict[str, Any]:
        """Grow a topic to `partitions` in total (Cluster.create_partitions, as CreatePartitions)."""
        t = self._topic(topic)
        total = _int("partitions", partitions, 1)
        try:
            self.cluster.create_partitions(t.name, total)
        except ClusterError as exc:
            raise ControlError(_status_for(exc), exc.message or exc.code.name) from exc
        return {"topic": t.name, **topic_state(self.cluster, self.cluster.image.topics[t.name])}

    async def delete_topic(self, topic: str) -> dict[str, Any]:
        """Delete a topic and its data."""
        t = self._topic(topic)
        self.cluster.delete_topic(t.name)
        return {"deleted": t.name}

    # -- reset ------------------------------------------------------------------------------

    async def reset(self, seed: int | None = None) -> dict[str, Any]:
        """Empty topics, groups, producers, transactions and faults; restart stopped brokers
        and resume their metadata. Brokers and listeners stay. `seed` reseeds the fault RNG."""
        new_seed = _opt_int("seed", seed)
        start = time.perf_counter()
        if self.running_scenario is not None:
            await self.running_scenario.stop()
            self.running_scenario = None
        self.faults.clear()
        self.faults.reseed(new_seed)
        await self._restore_listeners()
        self.cluster.reset()  # configured SASL users come back; the login record starts anew
        self.server.sasl.authentications.clear()
        for connection_quotas in self.server.connection_quotas.values():  # KIP-612
            connection_quotas.reset()
        for broker_id, node in sorted(self.cluster.brokers.items()):
            if not node.up:
                await self.server.start_broker(broker_id)
                self.cluster.rejoin_broker(broker_id)
        self.last_reset_ms = (time.perf_counter() - start) * 1000
        return {"reset": True, "elapsed_ms": round(self.last_reset_ms, 3)}

    # -- request trace ----------------------------------------------------------------------

    @property
    def tracer(self) -> Tracer | None:
        return self.server.hooks.trace

    def enable_trace(self, buffer: int = DEFAULT_BUFFER, *, log_lines: bool = False,
                     apis: list[int] | None = None) -> Tracer:
        """Install a fresh Tracer (synchronous; the verb is `start_trace`)."""
        tracer = Tracer(buffer, log_lines=log_lines, apis=apis,
                        previous=self.server.hooks.trace)
        self.server.hooks.trace = tracer
        return tracer

    async def start_trace(self, buffer: int | None = None, log: bool | None = None,
                          api: str | list[Any] | None = None) -> dict[str, Any]:
        """Record every request from now on (the last `buffer`, default 1000); `log` also
        writes one log line per request, for the APIs in `api` (default: all)."""
        size = DEFAULT_BUFFER if buffer is None else _int("buffer", buffer, 1, MAX_BUFFER)
        if log is not None and not isinstance(log, bool):
            raise ControlError(400, f"log must be true or false, got {log!r}")
        apis = api_keys_of(api)
        tracer = self.enable_trace(size, log_lines=bool(log), apis=apis)
        return self._trace_status(tracer)

    async def stop_trace(self) -> dict[str, Any]:
        """Stop recording (what was recorded is dropped)."""
        self.server.hooks.trace = None
        return {"enabled": False}

    async def trace(self, n: int | None = 100, api: str | list[Any] | None = None,
                    since: int | None = None) -> dict[str, Any]:
        """The last `n` traced requests (all with null), oldest first, optionally only those
        of `api` and those after sequence number `since`."""
        count = None if n is None else _int("n", n, 1)
        apis = api_keys_of(api)
        after = 0 if since is None else _int("since", since, 0)
        tracer = self.server.hooks.trace
        if tracer is None:
            return {"enabled": False, "last_seq": 0, "requests": []}
        records = tracer.tail(count, apis=apis, since=after)
        return {**self._trace_status(tracer), "requests": [r.to_json() for r in records]}

    @staticmethod
    def _trace_status(tracer: Tracer) -> dict[str, Any]:
        return {"enabled": True, "buffer": tracer.buffer, "log": tracer.log_lines,
                "api": None if tracer.apis is None
                else [api_spec(k).name for k in sorted(tracer.apis)],
                "last_seq": tracer.last_seq}
