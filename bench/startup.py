"""Start-up benchmark: how fast mockbroker is ready, in each way it is used, beside a peer.

    .venv/bin/python bench/startup.py [--runs N] [--write README.md]

Measures, each as a median over fresh runs (measurements, not test assertions):

- CLI: process start to the READY line (`python -m mockbroker --brokers 3`), timed from
  just before the spawn to the line arriving on the pipe; `python -c pass` for scale. The
  peer, measured in the same run and interleaved with it: librdkafka's mock cluster hosted
  by ../shared/tools/librdkafka_mock.py --serve (a Python process that loads librdkafka
  through ctypes), process start to its BOOTSTRAP line.
- import: `import mockbroker` in a fresh interpreter (lazy: the package's __init__ only),
  `import kafka_protocol_codec` (the codec alone; construct, the generator's dependency, is
  never imported at run time), and `from mockbroker import MockCluster` (the whole
  simulator: codec, cluster model, handlers, asyncio), timed inside the interpreter with
  perf_counter.
- in-process start: `await MockCluster(brokers=3).start()`, the first one in a fresh process
  that has imported mockbroker (it imports the generated codec modules the start itself uses:
  metadata records, broker heartbeats), then warm ones; the peer's counterpart is rd_kafka_new plus
  rd_kafka_mock_cluster_new(3 brokers) in a fresh process that has loaded librdkafka.
  `MockClusterThread(brokers=3).start()` (a new thread and loop each time), and MockCluster
  with the HTTP control API (control_port=0).
- reset: the `reset` verb on a 3-broker cluster holding 10 topics x 3 partitions with data,
  committed offsets and a group, as measured by the verb itself (`elapsed_ms`) and as the
  pytest fixture calls it (a blocking call from another thread, so a thread hop included);
  also with one stopped broker to bring back.

Child processes run with bytecode caching on (PYTHONDONTWRITEBYTECODE is dropped from their
environment), as an installed package runs: the warm-up spawn writes the caches, every
measured one reads them. With --write the results replace README.md's text between
`<!-- startup:start -->` and `<!-- startup:end -->`. Every wait on a subprocess is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from measured import child_env, statement  # bench/measured.py: installed wheel or checkout
from readme_section import write_section  # bench/readme_section.py

REPO = Path(__file__).resolve().parents[1]
PEER_TOOL = REPO / ".." / "shared" / "tools" / "librdkafka_mock.py"
READY_TIMEOUT = 30.0
TARGETS = {"ready": 0.120, "import": 0.100, "first": 0.005, "start": 0.050, "reset": 0.010}  # seconds
START, END = "<!-- startup:start -->", "<!-- startup:end -->"


def _env() -> dict[str, str]:
    return child_env({k: v for k, v in os.environ.items()
                      if not k.startswith("MOCKBROKER_") and k != "PYTHONDONTWRITEBYTECODE"})


def _first_line(cmd: list[str]) -> tuple[float, str]:
    """Seconds from spawning `cmd` to its first stdout line, and the line; the process is
    then stopped (stdin closed, then SIGTERM, then SIGKILL), every wait bounded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=_env(), cwd=REPO)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()),  # type: ignore[union-attr]
                              daemon=True)
    reader.start()
    reader.join(READY_TIMEOUT)
    elapsed = time.perf_counter() - start
    proc.stdin.close()  # type: ignore[union-attr]
    proc.terminate()
    try:
        proc.wait(timeout=READY_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=READY_TIMEOUT)
    return elapsed, line[0] if line else ""


def time_ready() -> float:
    elapsed, line = _first_line([sys.executable, "-m", "mockbroker", "--brokers", "3"])
    if not line.startswith("READY "):
        raise RuntimeError(f"no READY line: {line!r}")
    return elapsed


def time_peer_ready() -> float:
    elapsed, line = _first_line([sys.executable, str(PEER_TOOL), "--serve", "--brokers", "3",
                                 "--partitions", "1", "--topics", ""])
    if not line.startswith("BOOTSTRAP "):
        raise RuntimeError(f"librdkafka mock did not start: {line!r}")
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


# A fresh interpreter: the whole simulator's import, then the first and a second start.
FIRST_START = """
import asyncio, json, time
t = time.perf_counter()
from mockbroker import MockCluster
imported = time.perf_counter() - t
async def main():
    out = []
    for _ in range(2):
        t = time.perf_counter()
        cluster = await MockCluster(brokers=3).start()
        out.append(time.perf_counter() - t)
        await cluster.stop()
    return out
first, second = asyncio.run(main())
print(json.dumps({"import": imported, "first": first, "second": second}))
"""

# The peer's counterpart: load librdkafka (as the peer tool does), then create a client
# handle and a 3-broker mock cluster, the first and a second time.
PEER_FIRST_START = """
import ctypes, importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location("librdkafka_mock", sys.argv[1])
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)
t = time.perf_counter()
lib = tool._load_librdkafka()
loaded = time.perf_counter() - t
def start():
    t = time.perf_counter()
    conf = lib.rd_kafka_conf_new()
    err = ctypes.create_string_buffer(512)
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, 512)
    rk = lib.rd_kafka_new(0, conf, err, 512)
    mock = lib.rd_kafka_mock_cluster_new(rk, 3)
    assert mock and lib.rd_kafka_mock_cluster_bootstraps(mock)
    elapsed = time.perf_counter() - t
    lib.rd_kafka_mock_cluster_destroy(mock)
    lib.rd_kafka_destroy(rk)
    return elapsed
first = start()
print(json.dumps({"import": loaded, "first": first, "second": start()}))
"""


def _child_json(args: list[str]) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", *args], check=True, capture_output=True,
                         text=True, timeout=READY_TIMEOUT, env=_env(), cwd=REPO)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def time_first_start() -> dict[str, float]:
    return _child_json([FIRST_START])


def time_peer_first_start() -> dict[str, float]:
    return _child_json([PEER_FIRST_START, str(PEER_TOOL)])


async def _in_process(runs: int) -> dict[str, list[float]]:
    from mockbroker import MockCluster

    out: dict[str, list[float]] = {"warm": [], "http": []}
    for i in range(runs + 1):
        start = time.perf_counter()
        cluster = await MockCluster(brokers=3).start()
        if i > 0:  # the first one in this process is measured by time_first_start
            out["warm"].append(time.perf_counter() - start)
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
            del producer  # closed now: a live client could auto-create topics after the reset
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


Row = tuple[str, str, str, str, str]


def measure(runs: int, progress: Callable[[str], None]) -> list[Row]:
    rows: list[Row] = []
    peer = PEER_TOOL.is_file()
    if not peer:
        progress(f"peer unavailable: {PEER_TOOL} not found; measuring mockbroker alone")

    def row(what: str, values: list[float], target: str | None = None,
            peer_values: list[float] | None = None) -> None:
        med = _median(values)
        verdict = ""
        if target is not None:
            verdict = f"≤ {_fmt(TARGETS[target])}: " + ("met" if med <= TARGETS[target]
                                                       else "**missed**")
        versus = ""
        if peer_values:
            peer_med = _median(peer_values)
            versus = f"{_fmt(peer_med)} (ours {med / peer_med:.2f}x)"
        rows.append((what, _fmt(med), f"{_fmt(min(values))} to {_fmt(max(values))}", verdict,
                     versus))
        progress(f"{what}: median {_fmt(med)}" + (f"; peer {versus}" if versus else ""))

    time_ready()  # warm the disk and bytecode caches: the first spawn compiles and reads all
    ready: list[float] = []
    peer_ready: list[float] = []
    if peer:
        time_peer_ready()
    for _ in range(runs):  # interleaved, so load from elsewhere falls on both alike
        ready.append(time_ready())
        if peer:
            peer_ready.append(time_peer_ready())
    row("CLI: process start to READY (3 brokers); peer: process start to BOOTSTRAP", ready,
        "ready", peer_ready)
    row("`python -c pass` (for scale)", [time_python_pass() for _ in range(runs)])
    row("`import mockbroker`", [time_import("import mockbroker") for _ in range(runs)], "import")
    row("`import kafka_protocol_codec` (the codec alone)",
        [time_import("import kafka_protocol_codec") for _ in range(runs)])
    firsts = [time_first_start() for _ in range(runs)]
    peer_firsts = [time_peer_first_start() for _ in range(runs)] if peer else []
    row("`from mockbroker import MockCluster` (whole simulator); peer: loading librdkafka",
        [f["import"] for f in firsts], None, [f["import"] for f in peer_firsts])
    row("in-process `MockCluster(brokers=3).start()`, first in the process; peer: "
        "rd_kafka_new + rd_kafka_mock_cluster_new(3), first in the process",
        [f["first"] for f in firsts], "first", [f["first"] for f in peer_firsts])
    in_process = asyncio.run(_in_process(runs))
    row("in-process `MockCluster(brokers=3).start()`, warm; peer: the same, second",
        in_process["warm"], "start", [f["second"] for f in peer_firsts])
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


def render(rows: list[Row], runs: int) -> str:
    lines = [statement(), "", f"Medians of {runs} runs on {platform.python_implementation()} "
             f"{platform.python_version()}, {os.cpu_count()} CPUs, bytecode caches warm "
             f"(`make bench` runs `bench/startup.py`; measurements, not test assertions). "
             f"Peer: librdkafka's mock cluster, measured in the same run:",
             "", "| what | median | range | target | peer (librdkafka mock) |",
             "|---|---:|---:|---|---:|"]
    lines += [f"| {what} | {med} | {span} | {verdict} | {versus} |"
              for what, med, span, verdict, versus in rows]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--write", type=Path, metavar="README", help="update the README section")
    args = p.parse_args()
    print(statement(), file=sys.stderr, flush=True)
    rows = measure(args.runs, lambda text: print(text, file=sys.stderr, flush=True))
    text = render(rows, args.runs)
    print(text)
    if args.write:
        write_section(args.write, START, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
