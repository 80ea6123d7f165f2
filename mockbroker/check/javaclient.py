"""The Java client (kafka-clients) in the workload of a check run: one JVM, many clients.

Theory of operation: the Java client is optional. It runs when the clients of a run include
"java" and a class path with kafka-clients (and what it needs: slf4j, a binding if wanted)
is given (`--java-classpath`, or MOCKBROKER_CHECK_JAVA_CLASSPATH); nothing is downloaded. The
program is java/CheckClient.java beside this module: `java_command` compiles it with javac
against that class path, once per source and class path, into a cache directory
(MOCKBROKER_CHECK_JAVA_BUILD, else a directory of the system's temp dir), or, without javac,
runs the source file directly (java's source-file mode, Java 11+).

One JVM runs every Java producer and consumer of the plan, each in a thread (`JavaClients`).
The plan goes to its stdin as tab-separated lines (the producers' steps computed here from
the seed, so the Java producers write exactly what plan.py says); then "stop-writes" when
the run tells writers to stop and "stop-reads" when it tells readers to stop; closing stdin
also stops it. The JVM prints one JSON object per event on stdout, stamped with its own
System.nanoTime(); `JavaEvents` turns them into the same Recorder calls the Python clients
make. On Linux System.nanoTime() and time.monotonic() read the same clock
(CLOCK_MONOTONIC), so the events keep the times they happened at, whatever the pipe's
delay: the "hello" line proves it (its time lies between the spawn and its arrival), else
the Java clock is shifted to the hello's arrival and the run says so in a client event.

Two threads here: "java-writers" (among the run's writers) sends stop-writes and ends when
the JVM reports its producers done; "java" (among the readers) owns the process, reads its
stdout, sends stop-reads, and waits for its exit, killing it by its PID if it outlives its
stop timeout. The JVM also halts itself 15 s past its deadline.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Any

from mockbroker.check.history import MODE_SUBSCRIBE, Txn
from mockbroker.check.plan import ConsumerPlan, Plan, ProducerPlan

CLASSPATH_ENV = "MOCKBROKER_CHECK_JAVA_CLASSPATH"
BUILD_ENV = "MOCKBROKER_CHECK_JAVA_BUILD"
SOURCE = Path(__file__).resolve().parent / "java" / "CheckClient.java"
MAIN_CLASS = "CheckClient"
JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
COMPILE_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0  # from stop-reads to the JVM's exit, then SIGKILL
PLAN_TIMEOUT_S = 30.0  # a command waits this long for the plan to be written
CLOCK_SLACK_S = 0.005
STDERR_TAIL = 20


def classpath_from(option: str | None) -> str | None:
    """The class path given on the command line, else by the environment."""
    return option or os.environ.get(CLASSPATH_ENV) or None


def _build_dir(classpath: str) -> Path:
    digest = hashlib.sha256(SOURCE.read_bytes() + b"\0" + classpath.encode()).hexdigest()[:16]
    root = os.environ.get(BUILD_ENV) or os.path.join(
        tempfile.gettempdir(), f"mockbroker-check-java-{os.getuid()}")
    return Path(root) / digest


def java_command(classpath: str) -> list[str]:
    """The command running CheckClient on `classpath` (compiled first if javac is here);
    ValueError when there is no java, or the program does not compile against the class
    path (no kafka-clients on it, say)."""
    java = shutil.which("java")
    if java is None:
        raise ValueError("the java client needs a Java runtime (java) on the PATH")
    javac = shutil.which("javac")
    if javac is None:  # source-file mode: compiled in memory at each start
        return [java, *JVM_OPTIONS, "-cp", classpath, str(SOURCE)]
    target = _build_dir(classpath)
    if not (target / f"{MAIN_CLASS}.class").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
        done = subprocess.run([javac, "-nowarn", "-d", str(scratch), "-cp", classpath,
                               str(SOURCE)], capture_output=True, text=True,
                              timeout=COMPILE_TIMEOUT_S, check=False)
        if done.returncode != 0:
            shutil.rmtree(scratch, ignore_errors=True)
            raise ValueError(f"the java client does not compile against the class path "
                             f"{classpath!r} (it needs kafka-clients):\n"
                             f"{done.stderr.strip()[-2000:]}")
        try:
            scratch.rename(target)
        except OSError:  # another run compiled it meanwhile
            shutil.rmtree(scratch, ignore_errors=True)
    return [java, *JVM_OPTIONS, "-cp", f"{target}{os.pathsep}{classpath}", MAIN_CLASS]


def plan_lines(plan: Plan, bootstrap: str, topic: str, time_left: float,
               producers: list[ProducerPlan], consumers: list[ConsumerPlan],
               transactional_id: dict[str, str], group: dict[str, str]) -> list[str]:
    """The JVM's plan: settings, then each producer and its steps (until its budget is
    spent), then each consumer; "start" ends it."""
    lines = [f"config\tbootstrap\t{bootstrap}", f"config\ttopic\t{topic}",
             f"config\tpartitions\t{plan.partitions}", f"config\ttime_left\t{time_left:.3f}"]
    for p in producers:
        budget = plan.budget(p)
        kind = "txn" if p.transactional else "idem"
        lines.append(f"producer\t{p.name}\t{kind}\t{budget}\t{transactional_id.get(p.name, '-')}")
        values, number = 0, 0
        while values < budget:
            step = plan.step(p, number)
            number += 1
            values += len(step.partitions)
            lines.append(f"step\t{p.name}\t{int(step.commit)}\t{step.pause_ms}\t"
                         + ",".join(map(str, step.partitions)))
    for c in consumers:
        lines.append(f"consumer\t{c.name}\t{c.mode}\t{group.get(c.name, '-')}")
    lines.append("start")
    return lines


class JavaEvents:
    """The JVM's event lines into the Recorder (`line`); `spawned_at` is time.monotonic()
    just before the JVM started, for the clock check of its hello."""

    def __init__(self, recorder: Any, modes: dict[str, str], errors: list[str],
                 spawned_at: float) -> None:
        self.rec = recorder
        self.modes = modes  # consumer -> its mode
        self.errors = errors
        self.spawned_at = spawned_at
        self.shift = 0.0  # seconds added to the JVM's clock
        self.sessions: dict[tuple[str, int], int] = {}
        self.hello = threading.Event()
        self.writers_done = threading.Event()
        self.exited = threading.Event()

    def _at(self, nanos: Any) -> float | None:
        if not isinstance(nanos, int):
            return None
        return float(self.rec.since_start(nanos / 1e9 + self.shift))

    def line(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        try:
            event = json.loads(text)
            kind, name = event["e"], event.get("c", "java")
        except (ValueError, KeyError, TypeError):
            self.rec.client_event("java", f"stdout: {text[:300]}")
            return
        at = self._at(event.get("t"))
        if kind == "write":
            self.rec.write(event["v"], name, event["seq"], event["p"], event.get("txn"), at)
        elif kind == "ack":
            self.rec.ack(event["v"], event.get("o"), event.get("err"), at)
        elif kind == "txn":
            end = self.rec.now() if at is None else at
            self.rec.txn(Txn(event["id"], name, tuple(event["values"]), event["outcome"],
                             self._at(event.get("commit_at")), end, event.get("err")))
        elif kind == "session":
            self.sessions[(name, event["p"])] = self.rec.session(
                name, event["p"], event["mode"], event.get("start"), at)
        elif kind == "revoke":
            self.sessions.pop((name, event["p"]), None)
        elif kind == "read":
            key = (name, event["p"])
            session = self.sessions.get(key)
            if session is None:
                session = self.sessions[key] = self.rec.session(
                    name, event["p"], self.modes.get(name, MODE_SUBSCRIBE), None, at)
            self.rec.read(name, session, event["p"], event["o"], event["v"], at)
        elif kind == "error":
            self.rec.client_event(name, str(event.get("err")), at)
        elif kind == "fatal":
            self.rec.client_event(name, str(event.get("err")), at)
            self.errors.append(f"{name}: {event.get('err')}")
        elif kind == "hello":
            self._calibrate(event.get("t"))
        elif kind == "writers-done":
            self.writers_done.set()
        elif kind == "exit":
            self.exited.set()

    def _calibrate(self, nanos: Any) -> None:
        arrived = time.monotonic()
        if isinstance(nanos, int):
            java = nanos / 1e9
            if not self.spawned_at - CLOCK_SLACK_S <= java <= arrived + CLOCK_SLACK_S:
                self.shift = arrived - java
                self.rec.client_event("java", f"clock: System.nanoTime() is not "
                                              f"time.monotonic(); shifted by {self.shift:.3f} s")
        self.hello.set()


class JavaClients:
    """The plan's Java producers and consumers in one JVM (see the module's docstring)."""

    def __init__(self, ctx: Any, command: list[str]) -> None:
        self.ctx = ctx
        self.command = command
        plan = ctx.plan
        self.producers = [p for p in plan.producers if p.client == "java"]
        self.consumers = [c for c in plan.consumers if c.client == "java"]
        self.events = JavaEvents(ctx.recorder, {c.name: c.mode for c in self.consumers},
                                 ctx.errors, time.monotonic())
        self.proc: subprocess.Popen[str] | None = None
        self.stdin_lock = threading.Lock()
        self.plan_sent = threading.Event()
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)

    def start(self) -> None:
        self.events.spawned_at = time.monotonic()
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, encoding="utf-8", errors="replace",
                                     start_new_session=True)

    def _send(self, line: str) -> None:
        self.plan_sent.wait(PLAN_TIMEOUT_S)
        with self.stdin_lock, contextlib.suppress(OSError, ValueError):
            assert self.proc is not None and self.proc.stdin is not None
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()

    def _write_plan(self) -> None:
        ctx = self.ctx
        transactional_ids = {p.name: ctx.transactional_id(p) for p in self.producers
                             if p.transactional}
        groups = {c.name: f"{c.group}-{ctx.run_id}" for c in self.consumers
                  if c.group is not None}
        lines = plan_lines(ctx.plan, ctx.bootstrap, ctx.topic, max(1.0, ctx.time_left()),
                           self.producers, self.consumers, transactional_ids, groups)
        with self.stdin_lock, contextlib.suppress(OSError, ValueError):
            assert self.proc is not None and self.proc.stdin is not None
            self.proc.stdin.write("\n".join(lines) + "\n")
            self.proc.stdin.flush()
        self.plan_sent.set()

    def _drain(self, stream: IO[str], into: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            for line in stream:
                into(line)

    def _stderr(self, line: str) -> None:
        self.stderr_tail.append(line.rstrip())

    def run_writers(self) -> None:
        """Until the JVM's producers are done: stop-writes when the run says so."""
        done, ctx = self.events.writers_done, self.ctx
        while not done.is_set() and not ctx.stop_writes.is_set() and ctx.time_left() > 0:
            done.wait(0.2)
        if not done.is_set():
            self._send("stop-writes")
        done.wait(max(0.0, ctx.time_left()) + STOP_TIMEOUT_S)

    def run(self) -> None:
        """The process: its plan, its events, its stop and its exit."""
        proc, ctx = self.proc, self.ctx
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        out = threading.Thread(target=self._drain, args=(proc.stdout, self.events.line),
                               name="check-java-stdout", daemon=True)
        err = threading.Thread(target=self._drain, args=(proc.stderr, self._stderr),
                               name="check-java-stderr", daemon=True)
        out.start()
        err.start()
        try:
            self._write_plan()
            while not ctx.stop_reads.is_set() and proc.poll() is None and ctx.time_left() > 0:
                ctx.stop_reads.wait(0.2)
            self._send("stop-reads")
            with self.stdin_lock, contextlib.suppress(OSError, ValueError):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                ctx.errors.append(f"java: still running {STOP_TIMEOUT_S:g} s after "
                                  f"stop-reads; killed (pid {proc.pid})")
                proc.kill()
                proc.wait(5.0)
        finally:
            if proc.poll() is None:  # this thread failed: the JVM goes with it
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(5.0)
            out.join(5.0)
            err.join(2.0)
            self.events.writers_done.set()
        if proc.returncode != 0 or not self.events.exited.is_set():
            tail = " | ".join(list(self.stderr_tail)[-5:])
            ctx.errors.append(f"java: exited with code {proc.returncode}"
                              + (f": {tail}" if tail else ""))
