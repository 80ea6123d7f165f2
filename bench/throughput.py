"""Throughput benchmark: mockbroker against librdkafka's mock cluster, with real clients.

Run as `make bench` (after bench/codec.py) or `.venv/bin/python bench/throughput.py`.
Not a test: it measures, prints a markdown report and writes it to
bench/results-throughput.md.

What is measured. For each client (confluent-kafka, aiokafka): produce N messages of SIZE
bytes (acks=all, linger 5 ms) to a fresh topic of 8 partitions on a 3-broker cluster, then
read them back with a consumer that is manually assigned all partitions from offset 0 (no
consumer group: mockbroker has none yet), until all N are seen. Each (client, op) phase is
timed from its first request to its last acknowledgement / message; client start-up and the
first metadata round trip are outside the timed window. During that window the broker
process's CPU time (user+system, every thread) is sampled before and after, and reported as
CPU-seconds per 1M messages; likewise the benchmark's own process (the clients).

Two settings depart from the clients' defaults, for both targets alike:
  - messages are spread round-robin over the partitions (explicit partition), not by the
    client's partitioner: librdkafka's sticky partitioner can put more than 5 MiB into one
    partition, and the peer then drops that partition's oldest data, so offset 0 is gone;
  - the confluent consumer runs with fetch.queue.backoff.ms=10 instead of 1000 (see
    CONFLUENT_FETCH_QUEUE_BACKOFF_MS): with the default, both targets' consume times are
    mostly librdkafka's own 1 s pause once its prefetch queue passes 100000 messages.

CPU time comes from /proc/PID/task/*/schedstat (nanoseconds, summed over threads) where
available, else from /proc/PID/stat utime+stime (10 ms ticks: too coarse here, where a
phase costs the broker a few tens of milliseconds), else psutil.

Targets, in the same run by default:
  mockbroker  `python -m mockbroker --brokers 3 --port 0 --partitions 8` as a subprocess;
              topics are auto-created by the first Metadata request, with 8 partitions.
  peer        librdkafka's mock cluster, hosted by ../shared/tools/librdkafka_mock.py
              (ctypes, its own process); topics are pre-created by the host. If the tool is
              absent, the peer is reported unavailable and mockbroker is measured alone.
  --bootstrap any running cluster instead (topics are created with AdminClient when the
              cluster supports CreateTopics, else by auto-creation); --broker-pid PID
              measures that broker's CPU too.

Repetitions are interleaved (rep 1 of every target, then rep 2, ...) so drift of the machine
hits both targets alike; the table shows medians. Also measured: mockbroker's CLI start-up,
from Popen to reading its READY line (median of 5; target <= 0.3 s).

    .venv/bin/python bench/throughput.py [--n 200000] [--size 100] [--repeat 7]
        [--targets mockbroker,peer] [--clients confluent,aiokafka] [--bootstrap H:P,...]
        [--broker-pid PID] [--timeout 280] [--phase-timeout 60] [--markdown FILE | -]
        [--profile FILE]

--profile FILE attaches py-spy (if installed) to the mockbroker subprocess for the whole run
and writes collapsed stacks to FILE, plus a summary of the hottest functions on stderr.
Throughput measured with the profiler attached is somewhat lower.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from client_phases import (
    CONFLUENT_FETCH_QUEUE_BACKOFF_MS,
    PHASES,
    Outcome,
)
from measured import child_env, statement  # bench/measured.py: wheel or checkout
from processes import (
    PEER_TOOL,
    REPO,
    Meter,
    Target,
    cpu_source,
    log,
    mockbroker_command,
    prepare_topics,
    read_line,
    start_mockbroker,
    start_peer,
    stop_process,
)

DEFAULT_MARKDOWN = REPO / "bench" / "results-throughput.md"
CLIENTS = ("confluent", "aiokafka")
OPS = ("produce", "consume")
STARTUP_TARGET_S = 0.3
def measure_startup(runs: int, brokers: int, partitions: int) -> tuple[list[float], list[float]]:
    """Wall seconds from Popen to the READY line, `runs` times; and for scale, the same
    interpreter's bare start-up (`python -c pass`)."""
    ready: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(mockbroker_command(brokers, partitions), cwd=REPO,
                                env=child_env(),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        try:
            line = read_line(proc, 15)
            elapsed = time.perf_counter() - t0
        finally:
            stop_process(proc)
        if line.startswith("READY "):
            ready.append(elapsed)
        else:
            log(f"startup run: no READY line (got {line!r})")
    bare: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=False, timeout=15)
        bare.append(time.perf_counter() - t0)
    return ready, bare


@dataclass
class Run:
    target: str
    client: str
    op: str
    rep: int
    want: int
    got: int = 0
    secs: float = 0.0
    broker_cpu: float | None = None
    client_cpu: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.got == self.want and self.secs > 0

    @property
    def rate(self) -> float:
        return self.got / self.secs if self.secs > 0 else 0.0


def run_phase(target: Target, client: str, op: str, rep: int, topic: str, want: int,
              args: argparse.Namespace, overall_deadline: float) -> Run:
    run = Run(target.key, client, op, rep, want)
    meter = Meter(target.pid, target.cpu_source)
    deadline = min(overall_deadline, time.monotonic() + args.phase_timeout)
    gc.collect()
    try:
        run.got = PHASES[client, op](target.bootstrap, topic, want, args.size,
                                     target.partitions[topic], meter, deadline)
    except Outcome as exc:
        run.got, run.error = exc.count, str(exc)
    except Exception as exc:
        run.error = f"{type(exc).__name__}: {exc}"
    meter.stop()  # no-op unless the phase ended early
    run.secs, run.broker_cpu, run.client_cpu = meter.secs, meter.broker_cpu, meter.client_cpu
    cpu = "" if run.broker_cpu is None else f", broker CPU {run.broker_cpu:.2f} s"
    status = "" if run.ok else f"  FAILED ({run.got}/{want}: {run.error})"
    log(f"[{target.key}] rep {rep} {client:<9} {op:<7} {run.got} msgs in {run.secs:6.2f} s"
        f" = {run.rate / 1000:7.1f}k msg/s{cpu}, client CPU {run.client_cpu:.2f} s{status}")
    return run


# ------------------------------------------------------------------ report


def median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fmt_rate(value: float | None) -> str:
    return "failed" if value is None else f"{value:,.0f}"


def fmt_num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def summarize(runs: list[Run], target: str, client: str, op: str) -> dict[str, Any]:
    ok = [r for r in runs if r.target == target and r.client == client and r.op == op and r.ok]
    every = [r for r in runs if r.target == target and r.client == client and r.op == op]
    cpu = [r.broker_cpu / r.got * 1e6 for r in ok if r.broker_cpu is not None]
    busy = [r.broker_cpu / r.secs for r in ok if r.broker_cpu is not None]
    return {
        "rate": median_or_none([r.rate for r in ok]),
        "broker_cpu_per_m": median_or_none(cpu),
        "broker_busy": median_or_none(busy),
        "client_cpu_per_m": median_or_none([r.client_cpu / r.got * 1e6 for r in ok]),
        "reps": [r.rate if r.ok else None for r in every],
    }


def versions() -> str:
    out = []
    for dist in ("confluent-kafka", "aiokafka"):
        try:
            out.append(f"{dist} {importlib_metadata.version(dist)}")
        except importlib_metadata.PackageNotFoundError:
            pass
    try:
        import confluent_kafka

        out.append(f"librdkafka {confluent_kafka.libversion()[0]}")
    except ImportError:
        pass
    return ", ".join(out)


def load_note() -> str:
    """The 1-minute load average when the report is made: other work skews the figures."""
    try:
        with open("/proc/loadavg") as f:
            return f" (load average {f.read().split()[0]})"
    except (OSError, IndexError):
        return ""


def render(args: argparse.Namespace, targets: list[Target], runs: list[Run],
           startup: tuple[list[float], list[float]] | None, notes: list[str]) -> str:
    keys = [t.key for t in targets]
    labels = {t.key: t.label for t in targets}
    pairs = [(c, o) for c in args.clients for o in OPS]
    compare = keys == ["mockbroker", "peer"]
    lines = [
        "## Throughput",
        "",
        statement(),
        "",
        f"{args.n:,} messages of {args.size} B per phase, acks=all, linger 5 ms, "
        f"{args.partitions} partitions (messages spread round-robin), {args.brokers} brokers; "
        "consumers assigned all partitions from offset 0 (no group; confluent with "
        f"fetch.queue.backoff.ms={CONFLUENT_FETCH_QUEUE_BACKOFF_MS}). Medians of "
        f"{args.repeat} interleaved repetitions; {os.cpu_count()} CPUs{load_note()}, Python "
        f"{platform.python_version()}, {versions()}.",
        "",
    ]
    for t in targets:
        if t.note:
            lines.append(f"- {t.label}: {t.note}")
    if any(t.note for t in targets):
        lines.append("")

    summary = {(k, c, o): summarize(runs, k, c, o) for k in keys for c, o in pairs}
    head = ["client", "op"] + [f"{labels[k]} msgs/s" for k in keys]
    if compare:
        head.append("ratio (mockbroker/peer)")
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join(
        ["---", "---"] + ["---:"] * (len(head) - 2)) + "|"]
    for c, o in pairs:
        cells = [c, o] + [fmt_rate(summary[k, c, o]["rate"]) for k in keys]
        if compare:
            mb, peer = summary["mockbroker", c, o]["rate"], summary["peer", c, o]["rate"]
            cells.append("n/a" if mb is None or peer is None else f"{mb / peer:.2f}")
        lines.append("| " + " | ".join(cells) + " |")

    sources = sorted({t.cpu_source for t in targets if t.cpu_source})
    lines += ["", "Broker CPU-seconds per 1M messages (user+system time of the broker process, "
              f"all threads, over the timed window, from {' / '.join(sources) or 'n/a'}; "
              "busy = CPU-seconds per wall second, 1.00 = one core):", ""]
    head = ["client", "op"]
    for k in keys:
        head += [f"{labels[k]} CPU-s/1M", f"{labels[k]} busy"]
    lines += ["| " + " | ".join(head) + " |",
              "|" + "|".join(["---", "---"] + ["---:"] * (len(head) - 2)) + "|"]
    for c, o in pairs:
        cells = [c, o]
        for k in keys:
            s = summary[k, c, o]
            cells += [fmt_num(s["broker_cpu_per_m"]), fmt_num(s["broker_busy"])]
        lines.append("| " + " | ".join(cells) + " |")

    lines += ["", "Per repetition (msgs/s) and the benchmark client's own CPU-seconds per 1M "
              "messages:", "", "| target | client | op | runs (msgs/s) | client CPU-s/1M |",
              "|---|---|---|---|---:|"]
    for k in keys:
        for c, o in pairs:
            s = summary[k, c, o]
            reps = ", ".join("failed" if r is None else f"{r:,.0f}" for r in s["reps"]) or "-"
            lines.append(f"| {labels[k]} | {c} | {o} | {reps} | "
                         f"{fmt_num(s['client_cpu_per_m'])} |")

    if startup is not None:
        ready, bare = startup
        lines.append("")
        if ready:
            med = statistics.median(ready)
            verdict = "meets" if med <= STARTUP_TARGET_S else "misses"
            lines.append(
                f"mockbroker CLI start to READY ({args.brokers} brokers): median "
                f"**{med:.3f} s** of {len(ready)} (min {min(ready):.3f}, max {max(ready):.3f}); "
                f"{verdict} the {STARTUP_TARGET_S} s target. For scale, `python -c pass` "
                f"takes {statistics.median(bare):.3f} s here.")
        else:
            lines.append("mockbroker CLI start to READY: no run printed READY.")
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    command = " ".join(["bench/throughput.py", *args.argv])
    lines += ["", f"Reproduce: `.venv/bin/python {command}` (part of `make bench`)."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ profiling


def start_profiler(pid: int, path: str) -> subprocess.Popen[bytes] | None:
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(exe).exists():
        log("py-spy not found (pip install py-spy); not profiling")
        return None
    proc = subprocess.Popen([exe, "record", "--pid", str(pid), "--format", "raw", "--rate",
                             "1000", "--nonblocking", "--output", path],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # let it attach before the first phase
    return proc


def stop_profiler(proc: subprocess.Popen[bytes], path: str) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGINT)  # py-spy writes its output on SIGINT
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            stop_process(proc)
    try:
        text = Path(path).read_text()
    except OSError:
        log("py-spy wrote no profile")
        return
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]  # per function
        total += count
        self_time[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    if not total:
        return
    log(f"\npy-spy: {total} samples in {path} (self time of Runner.run is uvloop's native "
        "code, epoll waits included; `py-spy record --native` splits it)\n  top self time:")
    for frame, count in self_time.most_common(20):
        log(f"  {100 * count / total:5.1f}%  {frame}")
    log("  top inclusive time:")
    for frame, count in inclusive.most_common(25):
        log(f"  {100 * count / total:5.1f}%  {frame}")


# ------------------------------------------------------------------ main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--n", type=int, default=200_000, help="messages per phase (default 200000)")
    p.add_argument("--size", type=int, default=100, help="message value size in bytes")
    p.add_argument("--repeat", type=int, default=7, help="repetitions per phase (default 7)")
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--targets", default="mockbroker,peer",
                   help="comma-separated: mockbroker, peer (ignored with --bootstrap)")
    p.add_argument("--clients", default=",".join(CLIENTS),
                   help="comma-separated: confluent, aiokafka")
    p.add_argument("--bootstrap", default=None,
                   help="measure this running cluster (host:port,...) instead of starting any")
    p.add_argument("--broker-pid", type=int, default=None,
                   help="with --bootstrap: PID of the broker process, to measure its CPU")
    p.add_argument("--startup-runs", type=int, default=5,
                   help="CLI start-up measurements (0 to skip)")
    p.add_argument("--timeout", type=float, default=280.0,
                   help="time budget of the throughput phases, s (default 280)")
    p.add_argument("--phase-timeout", type=float, default=60.0,
                   help="bound of one phase, s (default 60)")
    p.add_argument("--markdown", default=str(DEFAULT_MARKDOWN),
                   help="write the report here too ('-' not to write)")
    p.add_argument("--profile", default=None,
                   help="py-spy the mockbroker subprocess; collapsed stacks to this file")
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.clients = [c for c in args.clients.split(",") if c]
    args.targets = [t for t in args.targets.split(",") if t]
    for c in args.clients:
        if c not in CLIENTS:
            p.error(f"unknown client {c!r}; choose from {', '.join(CLIENTS)}")
    for t in args.targets:
        if t not in ("mockbroker", "peer"):
            p.error(f"unknown target {t!r}; choose from mockbroker, peer")
    if args.n < 1 or args.repeat < 1 or args.size < 0:
        p.error("--n and --repeat must be positive, --size non-negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log(statement())
    run_id = uuid.uuid4().hex[:6]
    topics = {(c, rep): f"bench-{c}-{rep}-{run_id}" for c in args.clients
              for rep in range(1, args.repeat + 1)}
    notes: list[str] = []
    targets: list[Target] = []
    runs: list[Run] = []
    profiler: subprocess.Popen[bytes] | None = None
    startup = None

    # Guard for the whole process: phases are bounded one by one; this catches the rest.
    def on_alarm(_signo: int, _frame: Any) -> None:
        raise TimeoutError("benchmark exceeded its time budget")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(args.timeout + 120 + 20 * args.startup_runs))
    try:
        if args.bootstrap:
            targets.append(Target("cluster", "cluster", args.bootstrap, args.broker_pid,
                                  note=f"bootstrap {args.bootstrap}"))
        else:
            if "mockbroker" in args.targets and args.startup_runs > 0:
                log(f"measuring mockbroker start-up ({args.startup_runs} runs)")
                startup = measure_startup(args.startup_runs, args.brokers, args.partitions)
            if "mockbroker" in args.targets:
                targets.append(start_mockbroker(args.brokers, args.partitions))
            if "peer" in args.targets:
                if PEER_TOOL.is_file():
                    targets.append(start_peer(args.brokers, args.partitions,
                                              sorted(topics.values())))
                else:
                    msg = (f"peer unavailable: {PEER_TOOL} not found; "
                           "measuring mockbroker alone")
                    log(msg)
                    notes.append(msg)
        if not targets:
            log("nothing to measure")
            return 2
        for t in targets:
            t.cpu_source = cpu_source(t.pid) if t.pid else None
            log(f"[{t.key}] bootstrap {t.bootstrap}" + (f" pid {t.pid}" if t.pid else "")
                + (f", CPU from {t.cpu_source}" if t.cpu_source else ""))
            prepare_topics(t, sorted(topics.values()), args.partitions, min(3, args.brokers),
                           admin_create=t.key == "cluster")
        if args.profile:
            mb = next((t for t in targets if t.key == "mockbroker"), None)
            if mb is not None and mb.pid is not None:
                profiler = start_profiler(mb.pid, args.profile)
                notes.append("py-spy was attached to mockbroker during this run")

        deadline = time.monotonic() + args.timeout
        done_reps = 0
        for rep in range(1, args.repeat + 1):
            if time.monotonic() >= deadline:
                notes.append(f"time budget ({args.timeout:.0f} s) reached after {done_reps} "
                             f"of {args.repeat} repetitions")
                break
            for t in targets:
                for client in args.clients:
                    topic = topics[client, rep]
                    produced = run_phase(t, client, "produce", rep, topic, args.n, args,
                                         deadline)
                    runs.append(produced)
                    if produced.got:
                        runs.append(run_phase(t, client, "consume", rep, topic, produced.got,
                                              args, deadline))
                    else:
                        runs.append(Run(t.key, client, "consume", rep, 0,
                                        error="nothing produced"))
            done_reps = rep
    except TimeoutError as exc:
        notes.append(str(exc))
        log(str(exc))
    finally:
        signal.alarm(0)
        if profiler is not None and args.profile:
            stop_profiler(profiler, args.profile)
        for t in targets:
            t.stop()

    failed = [r for r in runs if not r.ok]
    for r in failed:
        notes.append(f"{r.target} {r.client} {r.op} rep {r.rep} failed: {r.got}/{r.want}, "
                     f"{r.error}")
    report = render(args, targets, runs, startup, notes)
    print(report, end="")
    if args.markdown != "-":
        Path(args.markdown).write_text(report)
        log(f"written to {args.markdown}")
    return 1 if failed or not runs else 0


if __name__ == "__main__":
    sys.exit(main())
