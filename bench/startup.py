"""Start-up benchmark: how fast mockbroker is ready, in each way it is used.

    .venv/bin/python bench/startup.py [--runs N] [--write README.md]

Measures, each as a median over fresh runs (measurements, not test assertions):

- CLI: process start to the READY line (`python -m mockbroker --brokers 3`), timed from
  just before the spawn to the line arriving on the pipe; `python -c pass` for scale.
- import: `import mockbroker` in a fresh interpreter (lazy: the package's __init__ only),
  and `from mockbroker import MockCluster` (the whole simulator: codec, cluster model,
  handlers, asyncio), timed inside the interpreter with perf_counter.
- in-process start: `await MockCluster(brokers=3).start()` on a running loop (the first one
  in a process, then warm ones), `MockClusterThread(brokers=3).start()` (a new thread and
  loop each time), and MockCluster with the HTTP control API (control_port=0).
- reset: the `reset` verb on a 3-broker cluster holding 10 topics x 3 partitions with data,
  committed offsets and a group, as measured by the verb itself (`elapsed_ms`) and as the
  pytest fixture calls it (a blocking call from another thread, so a thread hop included);
  also with one stopped broker to bring back.

With --write the results replace README.md's text between `<!-- startup:start -->` and
`<!-- startup:end -->`. Every wait on a subprocess is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
READY_TIMEOUT = 30.0
TARGETS = {"ready": 0.300, "import": 0.100, "start": 0.050, "reset": 0.010}  # seconds
START, END = "<!-- startup:start -->", "<!-- startup:end -->"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKBROKER_")}
    env["PYTHONPATH"] = str(REPO)
    return env


def time_ready() -> float:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "--brokers", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=_env(), cwd=REPO)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()),  # type: ignore[union-attr]
                              daemon=True)
    reader.start()
    reader.join(READY_TIMEOUT)
    elapsed = time.perf_counter() - start
    proc.terminate()
    try:
        proc.wait(timeout=READY_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=READY_TIMEOUT)
    if not line or not line[0].startswith("READY "):
        raise RuntimeError(f"no READY line: {line}")
    return elapsed


def time_python_pass() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=READY_TIMEOUT)
    return time.perf_counter() - start


def time_import(statement: str) -> float:
    code = ("import time; t = time.perf_counter(); " + statement +
            "; print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, timeout=READY_TIMEOUT, env=_env(), cwd=REPO)
    return float(out.stdout.strip())


async def _in_process(runs: int) -> dict[str, list[float]]:
    from mockbroker import MockCluster

    out: dict[str, list[float]] = {"first": [], "warm": [], "http": []}
    for i in range(runs + 1):
        start = time.perf_counter()
        cluster = await MockCluster(brokers=3).start()
        out["first" if i == 0 else "warm"].append(time.perf_counter() - start)
        await cluster.stop()
    for _ in range(runs):
        start = time.perf_counter()
        cluster = await MockCluster(brokers=3, control_port=0).start()
        out["http"].append(time.perf_counter() - start)
        await cluster.stop()
    return out


def time_thread_start(runs: int) -> list[float]:
    from mockbroker import MockClusterThread

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        cluster = MockClusterThread(brokers=3).start()
        times.append(time.perf_counter() - start)
        cluster.stop()
    return times


def time_resets(runs: int) -> dict[str, list[float]]:
    from confluent_kafka import Producer

    from mockbroker import MockClusterThread

    out: dict[str, list[float]] = {"verb": [], "fixture": [], "stopped": []}
    with MockClusterThread(brokers=3) as mock:
        for i in range(runs):
            for t in range(10):
                mock.control.create_topic(f"t{t}", partitions=3)
            producer = Producer({"bootstrap.servers": mock.bootstrap_servers, "linger.ms": 5,
                                 "log.connection.close": False})
            for n in range(300):
                producer.produce(f"t{n % 10}", b"x" * 100, partition=n % 3)
            producer.flush(30)
            mock.call(lambda: [mock.cluster.groups.offsets.commit("g", f"t{t}", p, 5)
                               for t in range(10) for p in range(3)])
            start = time.perf_counter()
            result = mock.control.reset()
            out["fixture"].append(time.perf_counter() - start)
            out["verb"].append(result["elapsed_ms"] / 1000)
            mock.control.stop_broker(i % 3)
            out["stopped"].append(mock.control.reset()["elapsed_ms"] / 1000)
    return out


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _fmt(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds >= 0.001 else f"{seconds * 1000:.3f} ms"


def measure(runs: int, progress: Callable[[str], None]) -> list[tuple[str, str, str, str]]:
    rows: list[tuple[str, str, str, str]] = []

    def row(what: str, values: list[float], target: str | None = None) -> None:
        med = _median(values)
        verdict = ""
        if target is not None:
            verdict = f"≤ {_fmt(TARGETS[target])}: " + ("met" if med <= TARGETS[target]
                                                       else "**missed**")
        rows.append((what, _fmt(med), f"{_fmt(min(values))} to {_fmt(max(values))}", verdict))
        progress(f"{what}: median {_fmt(med)}")

    time_ready()  # warm the disk cache: the first spawn reads every module from disk
    row("CLI: process start to READY (3 brokers)", [time_ready() for _ in range(runs)],
        "ready")
    row("`python -c pass` (for scale)", [time_python_pass() for _ in range(runs)])
    row("`import mockbroker`", [time_import("import mockbroker") for _ in range(runs)],
        "import")
    row("`from mockbroker import MockCluster` (whole simulator)",
        [time_import("from mockbroker import MockCluster") for _ in range(runs)])
    in_process = asyncio.run(_in_process(runs))
    row("in-process `MockCluster(brokers=3).start()`, first in the process",
        in_process["first"])
    row("in-process `MockCluster(brokers=3).start()`, warm", in_process["warm"], "start")
    row("`MockClusterThread(brokers=3).start()` (new thread and loop)",
        time_thread_start(runs), "start")
    row("`MockCluster(brokers=3, control_port=0).start()` (HTTP control API up; the "
        "first one imports aiohttp)", in_process["http"])
    resets = time_resets(runs)
    row("`reset` verb (10 topics x 3 partitions with data, offsets)", resets["verb"],
        "reset")
    row("`reset` as the pytest fixture calls it (blocking, from the test's thread)",
        resets["fixture"], "reset")
    row("`reset` with a stopped broker to restart", resets["stopped"], "reset")
    return rows


def render(rows: list[tuple[str, str, str, str]], runs: int) -> str:
    lines = [f"Medians of {runs} runs on {platform.python_implementation()} "
             f"{platform.python_version()}, {os.cpu_count()} CPUs "
             f"(`make bench` runs `bench/startup.py`; measurements, not test assertions):",
             "", "| what | median | range | target |", "|---|---:|---:|---|"]
    lines += [f"| {what} | {med} | {span} | {verdict} |" for what, med, span, verdict in rows]
    return "\n".join(lines) + "\n"


def write(path: Path, text: str) -> None:
    readme = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + r"\n.*?" + re.escape(END), re.S)
    if not pattern.search(readme):
        raise SystemExit(f"{path}: no {START} ... {END} section")
    path.write_text(pattern.sub(lambda _: f"{START}\n{text}{END}", readme), encoding="utf-8")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--write", type=Path, metavar="README", help="update the README section")
    args = p.parse_args()
    rows = measure(args.runs, lambda text: print(text, file=sys.stderr, flush=True))
    text = render(rows, args.runs)
    print(text)
    if args.write:
        write(args.write, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
