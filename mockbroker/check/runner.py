"""One check run: a cluster, the workload, the fault schedule, the final read, the checks.

Theory of operation (`run`):
1. The plan (plan.py) is made from the seed and the options.
2. A cluster is started in this process (MockClusterThread: 3 brokers by default, the
   topic with replication factor 3 and min.insync.replicas=2; a manual clock with
   `clock="manual"`), or an existing one is used (`bootstrap`, and `control_url` for its
   control API, needed by any fault mix but "none").
3. The clients start (workload.py); the fault schedule runs in its own thread
   (faults.py) and, with a manual clock, a thread moves the clock on with real time.
4. At the end of the duration (or when every producer has spent its write budget) the
   writers are told to stop and the faults to end; everything still on is undone (heal),
   the producers finish their current transaction and flush (bounded by `drain`), then the
   readers stop.
5. The final read reads every partition to its end (bounded by `final_timeout`).
6. The checks (checks.py) run over the recorded history; the report (report.py) has the
   figures, the anomalies and the plan.
Every wait is bounded, so a run lasts at most about duration + drain + final_timeout plus
the clients' own close timeouts, whatever the cluster does.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from mockbroker.check.checks import Anomaly, check
from mockbroker.check.faults import Control, FaultRunner, HttpControl, InProcessControl
from mockbroker.check.history import History
from mockbroker.check.javaclient import CLASSPATH_ENV, classpath_from, java_command
from mockbroker.check.plan import CLIENTS, Plan, make_plan
from mockbroker.check.report import build_report
from mockbroker.check.workload import Context, Recorder, final_read, start_clients

DEFAULT_SESSION_TIMEOUT_MS = 9000   # ClusterConfig.broker_session_timeout_ms
DEFAULT_LAG_TIME_MAX_MS = 30_000    # ClusterConfig.replica_lag_time_max_ms
JOIN_MARGIN_S = 15.0                # beyond the deadlines, for the clients' own closing


@dataclass
class Options:
    seed: int = 0
    mix: str = "all"
    duration: float = 20.0
    operations: int = 100_000
    partitions: int = 4
    brokers: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    clients: tuple[str, ...] = CLIENTS
    java_classpath: str | None = None  # kafka-clients for "java" (else from the environment)
    txn_producers: int = 2  # transactional producers per client
    clock: str = "system"  # or "manual"
    kafka_version: str | None = None
    bootstrap: str | None = None  # an existing cluster instead of one started here
    control_url: str | None = None  # its control API
    drain: float = 20.0
    final_timeout: float = 30.0


@dataclass
class Result:
    plan: Plan
    history: History
    anomalies: list[Anomaly]
    report: dict[str, Any]
    errors: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.anomalies


def make_options_plan(options: Options) -> Plan:
    return make_plan(options.seed, options.mix, options.duration, options.operations,
                     options.partitions, options.clients, options.clock == "manual",
                     options.txn_producers)


def _cluster_view(control: Control | None, topic: str) -> dict[str, Any]:
    """The partitions and transactions as the cluster ends (for the report)."""
    if control is None:
        return {}
    try:
        state = control.call("state")
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    keep = ("leader", "leader_epoch", "isr", "high_watermark", "last_stable_offset",
            "log_end_offset")
    partitions = [{k: p.get(k) for k in ("partition", *keep)}
                  | {"replicas": [{k: r.get(k) for k in ("broker", "log_end_offset",
                                                         "high_watermark", "in_isr")}
                                  for r in p.get("replica_logs", [])]}
                  for p in state["topics"].get(topic, {}).get("partitions", [])]
    versions = sorted({t.get("transaction_version") for name, t in
                       state.get("transactions", {}).items() if name.startswith("check-")})
    return {"partitions": partitions, "transaction_versions": versions}


def run(options: Options, progress: Callable[[str], None] | None = None,
        control: Control | None = None) -> Result:
    """One check run. `control`: the verbs of an external cluster given by
    `options.bootstrap` other than a mockbroker's HTTP control API (the test suite's real
    Kafka answers the ones that apply to it)."""
    say = progress or (lambda _: None)
    plan = make_options_plan(options)
    if options.bootstrap is not None and options.control_url is None and control is None \
            and plan.faults:
        raise ValueError("faults need the cluster's control API: give --control-url, or "
                         "--faults none")
    java: list[str] | None = None
    if "java" in options.clients:
        classpath = classpath_from(options.java_classpath)
        if classpath is None:
            raise ValueError(f"the java client needs kafka-clients' class path: give "
                             f"--java-classpath or {CLASSPATH_ENV}")
        say("preparing the java client (javac once per class path)")
        java = java_command(classpath)
    run_id = secrets.token_hex(3)
    mock: Any = None
    bootstrap = options.bootstrap
    if bootstrap is None:
        from mockbroker.cluster import ManualClock
        from mockbroker.embedded import MockClusterThread

        clock = ManualClock(int(time.time() * 1000)) if options.clock == "manual" else None
        mock = MockClusterThread(brokers=options.brokers, clock=clock,
                                 kafka_version=options.kafka_version,
                                 min_insync_replicas=options.min_insync_replicas)
        mock.start()
        control = InProcessControl(mock.control)
        bootstrap = mock.bootstrap_servers
        topic = f"check-{options.seed}"
    else:
        if control is None and options.control_url:
            control = HttpControl(options.control_url)
        topic = f"check-{options.seed}-{run_id}"
    try:
        return _run(options, plan, bootstrap, control, topic, run_id, say, java)
    finally:
        if mock is not None:
            mock.stop()


def _workload(options: Options, plan: Plan, ctx: Context, writers: list[threading.Thread],
              readers: list[threading.Thread], faults: FaultRunner | None,
              background: list[threading.Thread], say: Callable[[str], None]) -> None:
    """From the clients' start to the readers' end: the duration, then healing, the
    producers' drain and the readers' stop."""
    end = ctx.hard_deadline - options.drain  # the start plus the duration
    while time.monotonic() < end and not (ctx.writers_done()
                                          and all(not t.is_alive() for t in writers)):
        time.sleep(0.1)
    say("writes stop; faults end")
    ctx.stop_writes.set()
    if faults is not None:
        faults.stop.set()
        if plan.faults:
            background[0].join(JOIN_MARGIN_S * 4)
        faults.heal()
    for thread in writers:
        thread.join(max(0.0, ctx.time_left()) + JOIN_MARGIN_S)
    ctx.wait_writers(max(0.0, ctx.time_left()) + JOIN_MARGIN_S)
    say("readers stop")
    ctx.stop_reads.set()
    for thread in readers:
        thread.join(JOIN_MARGIN_S)
    stuck = [t.name for t in writers + readers if t.is_alive()]
    if stuck:
        ctx.errors.append(f"clients still running after their deadline: {', '.join(stuck)}")


def _create_topic(options: Options, control: Control | None, bootstrap: str,
                  topic: str) -> None:
    configs = {"min.insync.replicas": str(options.min_insync_replicas)}
    if control is not None:
        control.call("create-topic", topic=topic, partitions=options.partitions,
                     replication_factor=options.replication_factor, configs=configs)
        return
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, options.partitions,
                                            options.replication_factor, config=configs)])
    for future in futures.values():
        future.result(30)


def _run(options: Options, plan: Plan, bootstrap: str, control: Control | None,
         topic: str, run_id: str, say: Callable[[str], None],
         java: list[str] | None) -> Result:
    _create_topic(options, control, bootstrap, topic)
    recorder = Recorder(topic, options.partitions)
    ctx = Context(bootstrap, topic, plan, recorder, run_id, java_command=java)
    started = time.monotonic()
    ctx.hard_deadline = started + options.duration + options.drain
    say(f"seed {plan.seed}, faults {plan.mix} ({len(plan.faults)} scheduled), "
        f"{options.duration:g} s, topic {topic} on {bootstrap}")
    writers, readers = start_clients(ctx)
    faults = None
    background: list[threading.Thread] = []
    clock_stop = threading.Event()
    if control is not None:
        faults = FaultRunner(control, plan, topic, recorder, DEFAULT_SESSION_TIMEOUT_MS,
                             DEFAULT_LAG_TIME_MAX_MS)
        if plan.faults:
            background.append(threading.Thread(target=faults.run, args=(started,),
                                               name="check-faults", daemon=True))
        if plan.manual_clock:
            background.append(threading.Thread(target=faults.follow_clock,
                                               args=(clock_stop,), name="check-clock",
                                               daemon=True))
    for thread in background:
        thread.start()
    try:
        _workload(options, plan, ctx, writers, readers, faults, background, say)
        say("final read")
        ctx.hard_deadline = time.monotonic() + options.final_timeout + JOIN_MARGIN_S
        final = final_read(ctx, options.final_timeout)
    finally:  # nothing outlives the run, whatever went wrong
        ctx.stop_writes.set()
        ctx.stop_reads.set()
        clock_stop.set()
        if faults is not None:
            faults.stop.set()
    history = recorder.snapshot()
    history.final = final
    history.meta = {
        "seed": plan.seed, "mix": plan.mix, "plan_digest": plan.digest(),
        "options": {k: v for k, v in asdict(options).items()
                    if k not in ("bootstrap", "control_url", "java_classpath")} | {
            "external": options.bootstrap is not None},
        "topic": topic, "duration_s": round(time.monotonic() - started, 3),
        "cluster": _cluster_view(control, topic),
        "workload_errors": list(ctx.errors),
        "dropped_client_events": recorder.dropped_events,
    }
    anomalies = check(history)
    report = build_report(history, anomalies, plan.to_json())
    report["workload_errors"] = list(ctx.errors)
    return Result(plan, history, anomalies, report, list(ctx.errors))
