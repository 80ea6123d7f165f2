"""Broker-bound throughput: raw pre-built requests from several processes against ONE broker.

Run as `make bench` or `.venv/bin/python bench/throughput_broker.py`. Not a test: it
measures, prints a markdown report and writes it to bench/results-throughput-broker.md.

Why raw requests. With real clients (bench/throughput.py) the clients cost more CPU than the
broker, which idles at a fraction of a core, so what the broker itself costs never shows.
Here each client process sends requests built once (Produce) or built with a few struct packs
(Fetch) over plain sockets, pipelined, and reads only the fields it needs from the answers,
so one client core can keep a broker core busy.

What is measured. For each size class, two phases, each for --seconds of wall time:
  produce  --producers processes x --connections sockets each; every socket sends the same
           Produce v7 request (acks=-1, one batch for one partition: partition = socket
           number modulo --partitions) with --inflight requests outstanding, and counts the
           records of every answer without error received inside the window;
  fetch    --consumers processes x --connections sockets each read a topic filled beforehand
           (untimed, at most 4 MiB per partition: librdkafka's mock keeps only 5 MiB)
           with Fetch v11 (no session, max_wait 0, partition_max_bytes 1 MiB), one request
           in flight per socket, wrapping to the log start at the end, and count the records
           of the whole batches received inside the window.
Size classes are record value sizes; a batch holds as many records as fit in 16 KiB (the
Java producer's default batch.size), at least one:
  100 B   163 records per batch (~17 KB batches)
  1 KiB   16 records per batch (~17 KB batches)
  1 MiB   1 record of 1 MiB - 128 B per batch: 1 MiB batches, under Kafka's default
          max.message.bytes (1 MiB + 12), the size of the ">= 100 MB/s ingest" goal
Reported per (target, size, op): broker CPU-seconds per 1M records (schedstat of the broker
process, every thread), MB/s of record batches (10^6 bytes), records/s, and how busy the
broker was (CPU-s per wall second; ~1.0 means it is the bottleneck). Medians of --repeat
repetitions, interleaved target by target so drift of the machine hits both alike.

Targets, in the same run: mockbroker (`python -m mockbroker --brokers 1`, record validation
is always on) and librdkafka's mock cluster (../shared/tools/librdkafka_mock.py --serve
--brokers 1), both with --partitions partitions.

Both keep about the same data. The peer keeps at most 5 MiB per partition by itself, dropping
its oldest messages. mockbroker keeps everything unless told otherwise, so it runs with
Kafka's retention configs set to the same size (RETENTION_OVERRIDES: log.retention.bytes
5 MiB, log.segment.bytes 1 MiB, log.retention.check.interval.ms 50): a partition holds
5-6 MiB plus what 50 ms bring. Without them, memory grows by the produce rate and the broker
pays for first touching every new page (measured here: ~36k minor faults/s at 100 B, about
half of its produce CPU in the kernel), a cost the peer never has. Between phases the
produced data is dropped with DeleteRecords on mockbroker (the peer has no DeleteRecords).

    .venv/bin/python bench/throughput_broker.py [--seconds 2] [--repeat 3]
        [--sizes 100,1024,1048576] [--producers 2] [--consumers 2] [--connections 2]
        [--inflight 4] [--partitions 4] [--targets mockbroker,peer] [--markdown FILE | -]
        [--brokers 1] [--replication-factor 1]

--brokers N --replication-factor R (mockbroker only) measure what replication costs: the
broker process hosts N brokers, the topics have R replicas, and every request goes to the
leader of its partition (read from Metadata); the CPU is that of the whole process, so it
includes the followers' fetches. acks=-1 waits for the ISR, as in Kafka.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import selectors
import signal
import socket
import statistics
import struct
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import processes as common  # bench/processes.py: the brokers started, CPU accounting
from measured import statement  # bench/measured.py: installed wheel or checkout
from processes import log
from raw_requests import (  # bench/raw_requests.py
    BATCH_TARGET,
    FrameSplitter,
    build_record_batch,
    delete_records_request,
    fetch_request_parts,
    parse_fetch,
    produce_error,
    produce_request,
    records_per_batch,
)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MARKDOWN = REPO / "bench" / "results-throughput-broker.md"
PREFILL_PER_PARTITION = 4 * 1024 * 1024
_OFFSET = struct.Struct(">q")  # a Fetch request's fetch offset
_RECORD_COUNT = struct.Struct(">i")  # a record batch's record count, at byte 57
GOAL_CPU_RATIO = 1.5
GOAL_INGEST_MB_S = 100.0
# mockbroker keeps about what the peer keeps (5 MiB per partition); see the docstring
RETENTION_OVERRIDES = ("--override", f"log.retention.bytes={5 * 1024 * 1024}",
                       "--override", f"log.segment.bytes={1024 * 1024}",
                       "--override", "log.retention.check.interval.ms=50")


def size_label(size: int) -> str:
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return f"{size >> 20} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size >> 10} KiB"
    return f"{size} B"


@dataclass
class WorkerResult:
    records: int = 0
    bytes: int = 0
    answers: int = 0
    errors: int = 0
    last_error: int = 0


Address = tuple[str, int]


def leader_of(address: Address | dict[int, Address], partition: int) -> Address:
    """One broker for every partition, or (several brokers) each partition's leader."""
    return address[partition] if isinstance(address, dict) else address


def _connect(address: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(address, timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setblocking(False)
    return sock


def _send_all(sock: socket.socket, data: bytes, deadline: float) -> None:
    """Send on a non-blocking socket, waiting for room (bounded by `deadline`)."""
    view = memoryview(data)
    while view:
        try:
            sent = sock.send(view)
            view = view[sent:]
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TimeoutError("send blocked past the deadline") from None
            selectors.DefaultSelector().select(0.001)  # rare: the socket buffer is full


def worker(op: str, address: Address | dict[int, Address], topic: str, partitions: int, first: int,
           connections: int, inflight: int, payload: Any, start_at: float, stop_at: float,
           results: Any) -> None:
    """One client process: `connections` sockets, each kept busy from start_at to stop_at
    (time.time() values, shared by every process); puts a WorkerResult on `results`."""
    signal.alarm(int(stop_at - time.time()) + 60)  # bounded whatever the broker does
    result = WorkerResult()
    sel = selectors.DefaultSelector()
    socks = []
    state: dict[int, dict[str, Any]] = {}
    for i in range(connections):
        partition = (first + i) % partitions
        sock = _connect(leader_of(address, partition))
        socks.append(sock)
        state[sock.fileno()] = {"partition": partition, "split": FrameSplitter(),
                                "outstanding": 0, "offset": 0, "sock": sock}
    topic_len = len(topic.encode())
    hard_deadline = time.monotonic() + (stop_at - time.time()) + 30

    def send_next(st: dict[str, Any]) -> None:
        if op == "produce":
            data = payload[st["partition"]]
        else:
            head, tail = payload[st["partition"]]
            data = head + _OFFSET.pack(st["offset"]) + tail
        _send_all(st["sock"], data, hard_deadline)
        st["outstanding"] += 1

    while time.time() < start_at:
        time.sleep(min(0.01, max(0.0, start_at - time.time())))
    for st in state.values():
        sel.register(st["sock"], selectors.EVENT_READ, st)
        for _ in range(inflight if op == "produce" else 1):
            send_next(st)
    open_count = len(state)
    while open_count and time.monotonic() < hard_deadline:
        now = time.time()
        for key, _ in sel.select(timeout=0.05):
            st = key.data
            try:
                chunk = st["sock"].recv(1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                raise ConnectionError("the broker closed a connection")
            st["split"].buf += chunk
            for frame in st["split"].frames():
                st["outstanding"] -= 1
                if op == "produce":
                    error = produce_error(frame, topic_len)
                    counted = payload["records"]
                    size = payload["batch_bytes"]
                    if error:
                        counted = size = 0
                else:
                    error, _hw, log_start, counted, next_offset = parse_fetch(frame, topic_len)
                    size = len(frame)
                    st["offset"] = next_offset if next_offset >= 0 else max(log_start, 0)
                if now <= stop_at:
                    result.answers += 1
                    result.records += counted
                    result.bytes += size
                    if error:
                        result.errors += 1
                        result.last_error = error
                if now <= stop_at:
                    send_next(st)
        if now > stop_at:
            open_count = sum(1 for st in state.values() if st["outstanding"] > 0)
    for sock in socks:
        sock.close()
    results.put(result)


# ------------------------------------------------------------------ one-off requests


def exchange(address: tuple[str, int], requests: list[bytes], timeout: float = 30) -> list[bytes]:
    """Send framed requests on a fresh connection and return their answers, in order."""
    sock = socket.create_connection(address, timeout=timeout)
    split = FrameSplitter()
    answers: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        for req in requests:
            sock.sendall(req)
        while len(answers) < len(requests) and time.monotonic() < deadline:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            split.buf += chunk
            answers += split.frames()
    finally:
        sock.close()
    if len(answers) < len(requests):
        raise RuntimeError(f"{len(answers)} of {len(requests)} answers")
    return answers


def prefill(address: Address | dict[int, Address], topic: str, partitions: int, batch: bytes) -> int:
    """Fill every partition with up to PREFILL_PER_PARTITION bytes of `batch`; returns the
    number of records per partition."""
    count = max(1, PREFILL_PER_PARTITION // len(batch))
    topic_len = len(topic.encode())
    for p in range(partitions):
        req = produce_request(topic, p, batch)
        for answer in exchange(leader_of(address, p), [req] * count, timeout=60):
            error = produce_error(answer, topic_len)
            if error:
                raise RuntimeError(f"prefill of {topic}[{p}] failed with error {error}")
    return count * records_per_batch_of(batch)


def partition_leaders(bootstrap: str, topics: list[str]) -> dict[str, dict[int, Address]]:
    """Each topic's partition leaders, from a Metadata request (librdkafka's)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "bench-leaders"})
    metadata = producer.list_topics(timeout=10)
    brokers = {b.id: (b.host, b.port) for b in metadata.brokers.values()}
    return {t: {p.id: brokers[p.leader] for p in metadata.topics[t].partitions.values()}
            for t in topics}


def records_per_batch_of(batch: bytes) -> int:
    return int(_RECORD_COUNT.unpack_from(batch, 57)[0])


# ------------------------------------------------------------------ phases


@dataclass
class Phase:
    target: str
    size: int
    op: str
    rep: int
    secs: float = 0.0
    broker_cpu: float | None = None
    records: int = 0
    bytes: int = 0
    errors: int = 0
    note: str = ""

    @property
    def cpu_per_m(self) -> float | None:
        if self.broker_cpu is None or not self.records:
            return None
        return self.broker_cpu / self.records * 1e6

    @property
    def mb_s(self) -> float:
        return self.bytes / self.secs / 1e6 if self.secs else 0.0

    @property
    def busy(self) -> float | None:
        return None if self.broker_cpu is None or not self.secs else self.broker_cpu / self.secs


def run_phase(ctx: Any, target: common.Target, address: Address | dict[int, Address], op: str, size: int,
              rep: int, topic: str, payloads: Any, args: argparse.Namespace) -> Phase:
    processes = args.producers if op == "produce" else args.consumers
    results = ctx.Queue()
    start_at = time.time() + 1.0  # every process connected and waiting by then
    stop_at = start_at + args.seconds
    procs = []
    for i in range(processes):
        proc = ctx.Process(target=worker, args=(
            op, address, topic, args.partitions, i * args.connections, args.connections,
            args.inflight, payloads, start_at, stop_at, results), daemon=True)
        proc.start()
        procs.append(proc)
    phase = Phase(target.key, size, op, rep)
    while time.time() < start_at:
        time.sleep(min(0.005, max(0.0, start_at - time.time())))
    cpu0 = common.process_cpu_seconds(target.pid, target.cpu_source)
    t0 = time.perf_counter()
    time.sleep(max(0.0, stop_at - time.time()))
    cpu1 = common.process_cpu_seconds(target.pid, target.cpu_source)
    phase.secs = time.perf_counter() - t0
    phase.broker_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    got = 0
    deadline = time.monotonic() + 60
    while got < processes and time.monotonic() < deadline:
        try:
            res: WorkerResult = results.get(timeout=1)
        except Exception:
            if all(not p.is_alive() for p in procs):
                break
            continue
        got += 1
        phase.records += res.records
        phase.bytes += res.bytes
        phase.errors += res.errors
        if res.errors:
            phase.note = f"error code {res.last_error}"
    for proc in procs:
        proc.join(timeout=10)
        if proc.is_alive() and proc.pid is not None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.join(timeout=5)
    if got < processes:
        phase.note = f"{processes - got} client process(es) failed"
    return phase


# ------------------------------------------------------------------ report


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def render(args: argparse.Namespace, phases: list[Phase], labels: dict[str, str],
           notes: list[str]) -> str:
    keys = [k for k in ("mockbroker", "peer") if k in labels]
    where = "one broker" if args.brokers == 1 else \
        f"{args.brokers} brokers, replication factor {args.replication_factor}"
    lines = [f"## Broker-bound throughput (raw requests, {where})", "", statement(), "",
             f"{args.producers} producer / {args.consumers} consumer processes x "
             f"{args.connections} connections, {args.inflight} produce requests in flight per "
             f"connection, {args.partitions} partitions, {args.seconds:g} s per phase, median "
             f"of {args.repeat}. Records of the given value size, {BATCH_TARGET} B batches "
             "(1 record per batch at 1 MiB). CPU: broker process, CPU-seconds per 1M records; "
             "busy: broker CPU-seconds per wall second.", ""]
    head = ["size", "op"]
    for k in keys:
        head += [f"{labels[k]} CPU-s/1M", f"{labels[k]} MB/s", f"{labels[k]} busy"]
    if len(keys) == 2:
        head.append("CPU ratio")
    lines += ["| " + " | ".join(head) + " |",
              "|" + "|".join(["---", "---"] + ["---:"] * (len(head) - 2)) + "|"]
    summary: dict[tuple[str, int, str], dict[str, float | None]] = {}
    for size in args.sizes:
        for op in ("produce", "fetch"):
            cells = [size_label(size), op]
            for k in keys:
                mine = [p for p in phases if (p.target, p.size, p.op) == (k, size, op)]
                s = {"cpu": median([p.cpu_per_m for p in mine]),
                     "mb": median([p.mb_s for p in mine if p.records]),
                     "busy": median([p.busy for p in mine])}
                summary[k, size, op] = s
                cells += [fmt(s["cpu"], 3), fmt(s["mb"], 1), fmt(s["busy"])]
            if len(keys) == 2:
                a, b = summary[keys[0], size, op]["cpu"], summary[keys[1], size, op]["cpu"]
                cells.append(f"{a / b:.2f}x" if a and b else "-")
            lines.append("| " + " | ".join(cells) + " |")
    # each repetition's own CPU figure too: the medians above hide how far a target's cost
    # moves from run to run (the peer's at 1 MiB by up to half)
    lines += ["", "Per repetition (records/s, and broker CPU-s per 1M records):", "",
              "| target | size | op | runs |", "|---|---|---|---|"]
    for k in keys:
        for size in args.sizes:
            for op in ("produce", "fetch"):
                mine = [p for p in phases if (p.target, p.size, p.op) == (k, size, op)]
                runs = ", ".join(f"{p.records / p.secs:,.0f} ({fmt(p.cpu_per_m, 3)})"
                                 + (f" ({p.note})" if p.note else "")
                                 for p in mine if p.secs)
                lines.append(f"| {labels[k]} | {size_label(size)} | {op} | {runs or '-'} |")
    goals = []
    if len(keys) == 2:
        for size in args.sizes:
            for op in ("produce", "fetch"):
                a = summary[keys[0], size, op]["cpu"]
                b = summary[keys[1], size, op]["cpu"]
                if a and b:
                    verdict = "meets" if a / b <= GOAL_CPU_RATIO else "misses"
                    goals.append(f"{size_label(size)} {op}: mockbroker/peer CPU per record "
                                 f"{a / b:.2f}x, {verdict} the {GOAL_CPU_RATIO}x goal")
    big = [s for s in args.sizes if s >= 1 << 20]
    if "mockbroker" in keys and big:
        mb = summary["mockbroker", big[0], "produce"]["mb"]
        if mb is not None:
            verdict = "meets" if mb >= GOAL_INGEST_MB_S else "misses"
            goals.append(f"{size_label(big[0])} produce ingest {mb:.1f} MB/s, {verdict} the "
                         f">= {GOAL_INGEST_MB_S:.0f} MB/s goal")
    if goals:
        lines += ["", "Goals:", ""] + [f"- {g}" for g in goals]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    lines += ["", "Reproduce: `.venv/bin/python " + " ".join(
        ["bench/throughput_broker.py", *args.argv]) + "` (part of `make bench`)."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--seconds", type=float, default=2.0, help="wall time of one phase")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--sizes", default="100,1024,1048576", help="record value sizes, bytes")
    p.add_argument("--producers", type=int, default=2)
    p.add_argument("--consumers", type=int, default=2)
    p.add_argument("--connections", type=int, default=2, help="sockets per client process")
    p.add_argument("--inflight", type=int, default=4, help="produce requests per socket")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--targets", default="mockbroker,peer")
    p.add_argument("--timeout", type=float, default=170.0, help="budget of the phases, s")
    p.add_argument("--markdown", default=str(DEFAULT_MARKDOWN))
    p.add_argument("--brokers", type=int, default=1, help="mockbroker brokers")
    p.add_argument("--replication-factor", type=int, default=1, help="mockbroker topics")
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    args.targets = [t for t in args.targets.split(",") if t]
    if any(t not in ("mockbroker", "peer") for t in args.targets):
        p.error("targets: mockbroker, peer")
    if min(args.producers, args.consumers, args.connections, args.inflight, args.repeat,
           args.partitions) < 1 or args.seconds <= 0 or min(args.sizes, default=0) < 1:
        p.error("counts, sizes and --seconds must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log(statement())
    ctx = mp.get_context("spawn")
    run_id = uuid.uuid4().hex[:6]
    produce_topics = {s: f"raw-produce-{s}-{run_id}" for s in args.sizes}
    fetch_topics = {s: f"raw-fetch-{s}-{run_id}" for s in args.sizes}
    all_topics = sorted([*produce_topics.values(), *fetch_topics.values()])
    targets: list[common.Target] = []
    phases: list[Phase] = []
    notes: list[str] = []
    labels: dict[str, str] = {}

    def on_alarm(_signo: int, _frame: Any) -> None:
        raise TimeoutError("benchmark exceeded its time budget")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(args.timeout + 120))
    try:
        if "mockbroker" in args.targets:
            targets.append(common.start_mockbroker(
                args.brokers, args.partitions, "--replication-factor",
                str(args.replication_factor), *RETENTION_OVERRIDES))
        if "peer" in args.targets:
            if common.PEER_TOOL.is_file():
                targets.append(common.start_peer(1, args.partitions, all_topics))
            else:
                notes.append(f"peer unavailable: {common.PEER_TOOL} not found")
        batches = {s: build_record_batch(s) for s in args.sizes}
        addresses: dict[str, Any] = {}
        leaders: dict[str, dict[int, Address]] = {}  # mockbroker topic -> partition leaders

        def where(key: str, topic: str) -> Any:
            return leaders[topic] if key == "mockbroker" and leaders else addresses[key]
        for t in targets:
            t.cpu_source = common.cpu_source(t.pid) if t.pid else None
            host, port = t.bootstrap.split(",")[0].rsplit(":", 1)
            addresses[t.key] = (host, int(port))
            labels[t.key] = t.key
            common.prepare_topics(t, all_topics, args.partitions, 1, admin_create=False)
            if t.key == "mockbroker" and args.brokers > 1:
                leaders.update(partition_leaders(t.bootstrap, all_topics))
            for s in args.sizes:
                per_partition = prefill(where(t.key, fetch_topics[s]), fetch_topics[s],
                                        args.partitions,
                                        batches[s])
                log(f"[{t.key}] {fetch_topics[s]}: {per_partition} records per partition")
            if t.note:
                notes.append(f"peer: {t.note}")
            if t.key == "mockbroker":
                notes.append("mockbroker: retention as the peer's (log.retention.bytes 5 MiB, "
                             "log.segment.bytes 1 MiB, checked every 50 ms)")
        deadline = time.monotonic() + args.timeout
        for rep in range(1, args.repeat + 1):
            if time.monotonic() >= deadline:
                notes.append(f"time budget reached after {rep - 1} of {args.repeat} "
                             "repetitions")
                break
            for t in targets:
                for s in args.sizes:
                    topic = produce_topics[s]
                    address = where(t.key, topic)
                    payloads: dict[Any, Any] = {
                        p: produce_request(topic, p, batches[s]) for p in range(args.partitions)}
                    payloads["records"] = records_per_batch(s)
                    payloads["batch_bytes"] = len(batches[s])
                    phase = run_phase(ctx, t, address, "produce", s, rep, topic, payloads, args)
                    phases.append(phase)
                    if t.key == "mockbroker":  # the peer caps its partitions and lacks it
                        for leader in {leader_of(address, p) for p in range(args.partitions)}:
                            exchange(leader, [delete_records_request(topic, args.partitions)])
                    topic = fetch_topics[s]
                    address = where(t.key, topic)
                    parts = {p: fetch_request_parts(topic, p) for p in range(args.partitions)}
                    phases.append(run_phase(ctx, t, address, "fetch", s, rep, topic, parts,
                                            args))
                    log(f"rep {rep} {t.key} {size_label(s)}: produce "
                        f"{phases[-2].mb_s:.1f} MB/s busy {fmt(phases[-2].busy)}, fetch "
                        f"{phases[-1].mb_s:.1f} MB/s busy {fmt(phases[-1].busy)}")
    except TimeoutError as exc:
        notes.append(str(exc))
        log(str(exc))
    finally:
        signal.alarm(0)
        for t in targets:
            t.stop()
    for p in phases:
        if p.note:
            notes.append(f"{p.target} {size_label(p.size)} {p.op} rep {p.rep}: {p.note}")
    report = render(args, phases, labels, notes)
    print(report, end="")
    if args.markdown != "-":
        Path(args.markdown).write_text(report)
        log(f"written to {args.markdown}")
    return 0 if phases and not any(p.note for p in phases) else 1


if __name__ == "__main__":
    sys.exit(main())
