"""What the throughput benchmarks share: the brokers they start and the CPU they measure.

bench/throughput.py (real clients) and bench/throughput_broker.py (raw requests) both start
mockbroker's CLI and the peer (librdkafka's mock cluster, hosted by
../shared/tools/librdkafka_mock.py in a process of its own) as subprocesses, and both charge
a phase the broker process's CPU time, read where it is finest: /proc/PID/task/*/schedstat
(nanoseconds, every thread), else /proc/PID/stat (10 ms ticks), else psutil. `Meter` times
one phase from its first request to its last answer and samples that CPU at both ends.
"""

from __future__ import annotations

import gc
import os
import re
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from measured import REPO, child_env  # bench/measured.py: the package the children import

PEER_TOOL = REPO / ".." / "shared" / "tools" / "librdkafka_mock.py"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ CPU accounting

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _schedstat_seconds(pid: int) -> float | None:
    """On-CPU time of every live thread of `pid`, from /proc/PID/task/*/schedstat (ns)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    total = 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # a thread that just ended
    return total / 1e9


def _stat_seconds(pid: int) -> float | None:
    """utime+stime of the whole process from /proc/PID/stat (clock ticks, 10 ms here)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # The command name (field 2) may contain spaces: split after its ")".
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def _psutil_seconds(pid: int) -> float | None:
    try:
        import psutil

        times = psutil.Process(pid).cpu_times()
        return float(times.user + times.system)
    except Exception:
        return None


CPU_SOURCES: list[tuple[str, Callable[[int], float | None]]] = [
    ("/proc/PID/task/*/schedstat (ns)", _schedstat_seconds),
    ("/proc/PID/stat utime+stime (clock ticks)", _stat_seconds),
    ("psutil", _psutil_seconds),
]


def cpu_source(pid: int) -> str | None:
    """The first CPU-time source that works for `pid`; later reads use the same one."""
    for name, read in CPU_SOURCES:
        if read(pid) is not None:
            return name
    return None


def process_cpu_seconds(pid: int | None, source: str | None) -> float | None:
    """CPU seconds (user+system, every thread) of a process, or None when unknown.

    schedstat is preferred: it has nanosecond resolution, where utime+stime count 10 ms
    ticks, too coarse for phases in which the broker uses a few tens of milliseconds."""
    if pid is None or source is None:
        return None
    return dict(CPU_SOURCES)[source](pid)


def self_cpu_seconds() -> float:
    """CPU time of this process, every thread (librdkafka's included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Meter:
    """The timed window of one phase: wall time, broker CPU and client CPU deltas."""

    def __init__(self, broker_pid: int | None, source: str | None) -> None:
        self.broker_pid = broker_pid
        self.source = source
        self._t0: float | None = None
        self._b0: float | None = None
        self._c0 = 0.0
        self._stopped = False
        self.secs = 0.0
        self.broker_cpu: float | None = None
        self.client_cpu = 0.0

    def start(self) -> None:
        self._b0 = process_cpu_seconds(self.broker_pid, self.source)
        self._c0 = self_cpu_seconds()
        self._t0 = time.perf_counter()

    def stop(self) -> None:
        if self._t0 is None or self._stopped:
            return
        self._stopped = True
        self.secs = time.perf_counter() - self._t0
        self.client_cpu = self_cpu_seconds() - self._c0
        b1 = process_cpu_seconds(self.broker_pid, self.source)
        self.broker_cpu = None if b1 is None or self._b0 is None else b1 - self._b0


# ------------------------------------------------------------------ processes


def read_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    """The first line `proc` writes to stdout, or '' on timeout or EOF (bounded)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return ""
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return ""
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
    return buf.split(b"\n", 1)[0].decode(errors="replace").strip()


def stop_process(proc: subprocess.Popen[bytes], *, close_stdin: bool = False) -> None:
    """Stop a process this script started, by its PID: stdin EOF or SIGTERM, then SIGKILL."""
    if close_stdin and proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    if proc.stdout is not None:
        proc.stdout.close()


def tail(path: str, chars: int = 1500) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()[-chars:]
    except OSError:
        return ""


def mockbroker_command(brokers: int, partitions: int, *extra: str,
                       launcher: Sequence[str] = ("-m", "mockbroker")) -> list[str]:
    """The CLI's command line; `launcher`: what runs it (a script that wraps the CLI)."""
    return [sys.executable, *launcher, "--brokers", str(brokers), "--port", "0",
            "--partitions", str(partitions), *extra]


@dataclass
class Target:
    key: str  # "mockbroker", "peer" or "cluster"
    label: str  # column heading
    bootstrap: str
    pid: int | None  # the broker process whose CPU is measured
    proc: subprocess.Popen[bytes] | None = None
    close_stdin: bool = False
    stderr_path: str | None = None
    note: str = ""
    cpu_source: str | None = None
    partitions: dict[str, int] = field(default_factory=dict)  # topic -> partition count

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, close_stdin=self.close_stdin)
            self.proc = None
        if self.stderr_path:
            try:
                os.unlink(self.stderr_path)
            except OSError:
                pass
            self.stderr_path = None


def _start(key: str, name: str, log_prefix: str, cmd: list[str],
           ready: Callable[[str], re.Match[str] | None], *, cwd: Path | None = None,
           close_stdin: bool = False) -> tuple[Target, re.Match[str]]:
    """Start a broker process (stderr to a temporary file, removed by Target.stop) and read
    its first stdout line, which `ready` must match; its group 1 is the bootstrap."""
    err = tempfile.NamedTemporaryFile(prefix=log_prefix, suffix=".log", delete=False)
    proc = subprocess.Popen(cmd, cwd=cwd, env=child_env(),
                            stdin=subprocess.PIPE if close_stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=err)
    err.close()
    target = Target(key, key, "", proc.pid, proc, close_stdin=close_stdin,
                    stderr_path=err.name)
    line = read_line(proc, 30)
    match = ready(line)
    if not match:
        target.stop()
        raise RuntimeError(f"{name} did not start: {line!r} {tail(err.name)}")
    target.bootstrap = match.group(1)
    return target, match


_MOCKBROKER_READY = re.compile(r"READY bootstrap=(\S+)(?: control=\S+)?")
_PEER_READY = re.compile(r"BOOTSTRAP (\S+) LIBRDKAFKA (\S+) PARTITIONS (\S+)")


def start_mockbroker(brokers: int, partitions: int, *extra: str,
                     launcher: Sequence[str] = ("-m", "mockbroker")) -> Target:
    target, _ = _start("mockbroker", "mockbroker", "mockbroker-bench-",
                       mockbroker_command(brokers, partitions, *extra, launcher=launcher),
                       _MOCKBROKER_READY.fullmatch, cwd=REPO)
    return target


def start_peer(brokers: int, partitions: int, topics: list[str]) -> Target:
    target, match = _start("peer", "librdkafka mock", "librdkafka-mock-",
                           [sys.executable, str(PEER_TOOL), "--serve", "--brokers", str(brokers),
                            "--partitions", str(partitions), "--topics", ",".join(topics)],
                           _PEER_READY.match, close_stdin=True)
    target.note = f"librdkafka {match.group(2)} mock cluster"
    return target


# ------------------------------------------------------------------ topics


def prepare_topics(target: Target, topics: list[str], partitions: int, replication: int,
                   *, admin_create: bool) -> None:
    """Make every topic exist before any timing; record its partition count.

    mockbroker: auto-created by a Metadata request (the broker runs with --partitions 8).
    peer: pre-created by its host. Another cluster: CreateTopics when it works, else
    auto-creation."""
    from confluent_kafka import KafkaException, Producer

    if admin_create:
        try:
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": target.bootstrap})
            futures = admin.create_topics([NewTopic(t, partitions, replication) for t in topics],
                                          operation_timeout=10, request_timeout=15)
            for name, fut in futures.items():
                try:
                    fut.result(timeout=20)
                except Exception as exc:  # exists already, or CreateTopics unsupported
                    log(f"[{target.key}] create_topics {name}: {exc}; relying on auto-creation")
            del admin
        except Exception as exc:
            log(f"[{target.key}] AdminClient.create_topics failed ({exc}); "
                "relying on auto-creation")
    producer = Producer({"bootstrap.servers": target.bootstrap, "client.id": "bench-prepare"})
    try:
        for topic in topics:
            deadline = time.monotonic() + 20
            count = 0
            while time.monotonic() < deadline:
                try:
                    md = producer.list_topics(topic, timeout=5)
                except KafkaException as exc:
                    log(f"[{target.key}] metadata for {topic}: {exc}")
                    time.sleep(0.2)
                    continue
                meta = md.topics.get(topic)
                if meta is not None and meta.error is None and meta.partitions and all(
                        p.leader >= 0 for p in meta.partitions.values()):
                    count = len(meta.partitions)
                    break
                time.sleep(0.1)
            if not count:
                raise RuntimeError(f"topic {topic} did not become available on {target.key}")
            if count != partitions:
                log(f"[{target.key}] WARNING: {topic} has {count} partitions, not {partitions}")
            target.partitions[topic] = count
    finally:
        producer.flush(1)
        del producer
        gc.collect()
