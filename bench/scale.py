"""Scale benchmark: Metadata of a 10,000-partition topic, and memory per stored message.

    .venv/bin/python bench/scale.py [--requests 50] [--messages 1000000] [--write README.md]

Measurements, not test assertions; each figure is printed next to the same figure of the
peer, librdkafka's mock cluster (hosted by ../shared/tools/librdkafka_mock.py in its own
process), measured in the same run. Both targets run as subprocesses on 127.0.0.1.

- Metadata latency: a 3-broker cluster holding one topic of 10,000 partitions
  (replication factor 3). A raw client (the codec plus a socket, no client library) sends
  Metadata v1, v9 and v12 to the first broker, once for all topics and once naming the
  topic, and times each request from just before the frame is written to the moment the
  whole response frame is read (its decoding is not timed). p50 and p90 over `--requests`
  requests after a few warm-ups, and the broker's CPU time per request (from
  /proc/PID/task/*/schedstat, which load on the machine disturbs less than wall time).
- Memory per stored message: a 1-broker cluster with a topic of 32 partitions; the raw
  client produces `--messages` records of 100 B (no key, no compression, acks=1) in
  batches of `--batch-records` records, one batch per partition per Produce request as a
  client's sender does, 5 requests in flight. The broker's RSS growth (VmRSS, after a
  warm-up produce) is divided by the payload bytes (records x 100 B); so are the batch's
  own bytes (record framing and the 61-byte batch header), the floor for any broker that
  keeps batches as sent. The peer keeps at most 5 MiB per
  partition, hence 32 partitions (about 3 MiB each for 1M records).

With --write the results replace README.md's text between `<!-- scale:start -->` and
`<!-- scale:end -->`. Every wait is bounded; both subprocesses are stopped by their PID.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import select
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_protocol_codec import decode_response, encode_request
from kafka_protocol_codec.records import RecordSpec, build_batch
from measured import REPO, child_env, statement, use_checkout_modules  # bench/measured.py
from readme_section import write_section  # bench/readme_section.py

use_checkout_modules()  # tests.support, without the checkout's mockbroker/ shadowing the wheel
from tests.support.rawclient import RawClient  # noqa: E402

PEER_TOOL = REPO.parent / "shared" / "tools" / "librdkafka_mock.py"
START_TIMEOUT = 60.0
REQUEST_TIMEOUT = 60.0
BIG_TOPIC, BIG_PARTITIONS = "scale-10k", 10_000
STORE_TOPIC, STORE_PARTITIONS = "scale-store", 32
VALUE_SIZE = 100
VERSIONS = (1, 9, 12)
WARMUPS = 5
IN_FLIGHT = 5
TARGETS = {"metadata_p90_ms": 50.0, "rss_ratio": 1.2}
METADATA, PRODUCE, CREATE_TOPICS, API_VERSIONS = 3, 0, 19, 18
START, END = "<!-- scale:start -->", "<!-- scale:end -->"
_SIZE = struct.Struct(">i")


# -- the two targets, as subprocesses -----------------------------------------------------

@dataclass
class Target:
    name: str
    proc: subprocess.Popen[str]
    ports: list[int]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _first_line(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith(prefix):
                return line
        if proc.poll() is not None:
            break
    proc.kill()
    proc.wait(timeout=10)
    raise RuntimeError(f"no {prefix!r} line from {proc.args}")


def _ports(bootstrap: str) -> list[int]:
    return [int(hp.rsplit(":", 1)[1]) for hp in bootstrap.split(",")]


def start_mockbroker(brokers: int) -> Target:
    env = child_env({k: v for k, v in os.environ.items() if not k.startswith("MOCKBROKER_")})
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "--brokers", str(brokers),
                             "--port", "0", "--no-auto-create-topics"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, cwd=REPO)
    line = _first_line(proc, "READY ")
    bootstrap = re.search(r"bootstrap=(\S+)", line)
    assert bootstrap is not None, line
    return Target("mockbroker", proc, _ports(bootstrap.group(1)))


def start_peer(brokers: int, partitions: int, topic: str) -> Target | None:
    if not PEER_TOOL.exists():
        return None
    proc = subprocess.Popen([sys.executable, str(PEER_TOOL), "--serve", "--brokers",
                             str(brokers), "--partitions", str(partitions), "--topics", topic],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        line = _first_line(proc, "BOOTSTRAP ")
    except RuntimeError:
        return None
    return Target("librdkafka mock", proc, _ports(line.split()[1]))


# -- measures -------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """On-CPU time of every thread of `pid` (ns resolution, from schedstat)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / 1e9


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


async def exchange(client: RawClient, api_key: int, version: int, body: dict[str, Any],
                   correlation_id: int) -> tuple[float, bytes]:
    """(seconds from writing the request to having read the response frame, the frame)."""
    frame = encode_request(api_key, version, body, correlation_id=correlation_id,
                           client_id="bench-scale")
    data = _SIZE.pack(len(frame)) + frame
    start = time.perf_counter()
    await client.send_raw(data)
    response = await client.read_frame(timeout=REQUEST_TIMEOUT)
    return time.perf_counter() - start, response


def metadata_body(version: int, one_topic: bool) -> dict[str, Any]:
    if one_topic:
        return {"topics": [{"name": BIG_TOPIC}], "allow_auto_topic_creation": True}
    return {"topics": None, "allow_auto_topic_creation": True}


async def create_topic(port: int, name: str, partitions: int, replication: int) -> None:
    async with await RawClient.connect(port) as client:
        body = {"topics": [{"name": name, "num_partitions": partitions,
                            "replication_factor": replication, "assignments": [],
                            "configs": []}], "timeout_ms": 30000}
        answer = await client.request(CREATE_TOPICS, 4, body, timeout=REQUEST_TIMEOUT)
        if answer.topics[0].error_code != 0:
            raise RuntimeError(f"CreateTopics {name}: error {answer.topics[0].error_code}")


async def partition_count(client: RawClient, topic: str) -> int:
    answer = await client.request(METADATA, 1, {"topics": [{"name": topic}]},
                                  timeout=REQUEST_TIMEOUT)
    return sum(len(t.partitions) for t in answer.topics if t.error_code == 0)


@dataclass
class LatencyRow:
    version: int
    one_topic: bool
    p50: float
    p90: float
    cpu_per_request: float


async def metadata_latency(target: Target, requests: int) -> list[LatencyRow]:
    rows = []
    async with await RawClient.connect(target.ports[0]) as client:
        for _ in range(100):  # bounded: the topic must be visible on this broker
            if await partition_count(client, BIG_TOPIC) == BIG_PARTITIONS:
                break
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError(f"{target.name}: {BIG_TOPIC} never showed {BIG_PARTITIONS}")
        correlation = 1000
        for version in VERSIONS:
            for one_topic in (False, True):
                body = metadata_body(version, one_topic)
                times = []
                for i in range(WARMUPS + requests):
                    correlation += 1
                    if i == WARMUPS:
                        cpu_start = cpu_seconds(target.proc.pid)
                    elapsed, frame = await exchange(client, METADATA, version, body,
                                                    correlation)
                    if i >= WARMUPS:
                        times.append(elapsed)
                cpu = (cpu_seconds(target.proc.pid) - cpu_start) / requests
                answer = decode_response(METADATA, version, frame).body
                count = sum(len(t.partitions) for t in answer.topics if t.name == BIG_TOPIC)
                if count != BIG_PARTITIONS:
                    raise RuntimeError(f"{target.name} v{version}: {count} partitions")
                rows.append(LatencyRow(version, one_topic, percentile(times, 0.5),
                                       percentile(times, 0.9), cpu))
    return rows


async def produce_version(client: RawClient) -> int:
    answer = await client.request(API_VERSIONS, 0, {}, timeout=REQUEST_TIMEOUT)
    for api in answer.api_keys:
        if api.api_key == PRODUCE:
            return min(api.max_version, 9)
    raise RuntimeError("no Produce in ApiVersions")


@dataclass
class MemoryRow:
    messages: int
    batch_records: int
    rss_growth: int
    seconds: float
    batch_bytes: int  # one batch as sent and stored

    @property
    def encoding(self) -> float:
        """Stored batch bytes per payload byte: the floor of any broker that keeps batches."""
        return self.batch_bytes / (self.batch_records * VALUE_SIZE)

    @property
    def ratio(self) -> float:
        return self.rss_growth / (self.messages * VALUE_SIZE)


async def produce(client: RawClient, version: int, batch: bytes, requests: int,
                  first_correlation: int) -> None:
    """`requests` Produce requests, each one batch for each partition, IN_FLIGHT at once."""
    body = {"acks": 1, "timeout_ms": 30000, "transactional_id": None,
            "topic_data": [{"name": STORE_TOPIC, "partition_data": [
                {"index": p, "records": batch} for p in range(STORE_PARTITIONS)]}]}
    frame = encode_request(PRODUCE, version, body, correlation_id=0, client_id="bench-scale")
    pending: list[int] = []
    for n in range(requests):
        correlation = first_correlation + n
        # the same request each time, with its own correlation id (bytes 4-7 of the header)
        await client.send_raw(_SIZE.pack(len(frame)) + frame[:4] + struct.pack(">i", correlation)
                              + frame[8:])
        pending.append(correlation)
        if len(pending) >= IN_FLIGHT or n == requests - 1:
            while pending:
                response = decode_response(PRODUCE, version,
                                           await client.read_frame(timeout=REQUEST_TIMEOUT))
                if response.correlation_id != pending.pop(0):
                    raise RuntimeError("responses out of order")
                for topic in response.body.responses:
                    for part in topic.partition_responses:
                        if part.error_code != 0:
                            raise RuntimeError(f"Produce error {part.error_code}")


async def stored_memory(target: Target, messages: int, batch_records: int) -> MemoryRow:
    value = bytes(range(VALUE_SIZE))
    batch = build_batch([RecordSpec(value=value) for _ in range(batch_records)])
    per_request = batch_records * STORE_PARTITIONS
    requests = max(1, messages // per_request)
    async with await RawClient.connect(target.ports[0]) as client:
        for _ in range(100):
            if await partition_count(client, STORE_TOPIC) == STORE_PARTITIONS:
                break
            await asyncio.sleep(0.1)
        version = await produce_version(client)
        await produce(client, version, batch, max(1, requests // 100), 1)  # warm-up
        await asyncio.sleep(0.5)
        before = rss_bytes(target.proc.pid)
        start = time.perf_counter()
        await produce(client, version, batch, requests, 10_000)
        seconds = time.perf_counter() - start
        await asyncio.sleep(0.5)
        after = rss_bytes(target.proc.pid)
    return MemoryRow(requests * per_request, batch_records, after - before, seconds,
                     len(batch))


# -- the run --------------------------------------------------------------------------------

def run(args: argparse.Namespace, progress: Callable[[str], None]) -> str:
    latency: dict[str, list[LatencyRow] | None] = {}
    memory: dict[str, list[MemoryRow] | None] = {}
    starters: dict[str, Callable[[int, int, str], Target | None]] = {
        "mockbroker": lambda brokers, _partitions, _topic: start_mockbroker(brokers),
        "librdkafka mock": start_peer}
    for name, starter in starters.items():
        target = starter(3, BIG_PARTITIONS, BIG_TOPIC)
        if target is None:
            latency[name] = None
            progress(f"{name}: unavailable")
            continue
        try:
            if name == "mockbroker":
                asyncio.run(create_topic(target.ports[0], BIG_TOPIC, BIG_PARTITIONS, 3))
            latency[name] = asyncio.run(metadata_latency(target, args.requests))
            progress(f"{name}: metadata measured")
        finally:
            target.stop()
    for name, starter in starters.items():
        rows: list[MemoryRow] = []
        for batch_records in args.batch_records:
            target = starter(1, STORE_PARTITIONS, STORE_TOPIC)
            if target is None:
                break
            try:
                if name == "mockbroker":
                    asyncio.run(create_topic(target.ports[0], STORE_TOPIC, STORE_PARTITIONS, 1))
                rows.append(asyncio.run(stored_memory(target, args.messages, batch_records)))
                progress(f"{name}: {batch_records} records/batch: "
                         f"x{rows[-1].ratio:.2f} of the payload")
            finally:
                target.stop()
        memory[name] = rows or None
    return render(latency, memory, args)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def render(latency: dict[str, list[LatencyRow] | None],
           memory: dict[str, list[MemoryRow] | None], args: argparse.Namespace) -> str:
    ours, peer = latency.get("mockbroker") or [], latency.get("librdkafka mock")
    lines = [statement(), "",
             f"Python {platform.python_version()}, {os.cpu_count()} CPUs; `make bench` runs "
             "`bench/scale.py` (measurements, not test assertions). Peer: librdkafka's mock "
             "cluster" + ("" if peer else " (unavailable in this run)") + ".", "",
             f"Metadata, one topic of {BIG_PARTITIONS:,} partitions on 3 brokers (RF 3), "
             f"raw client over loopback, request written to response frame read, "
             f"{args.requests} requests:", "",
             "| request | mockbroker p50 | p90 | broker CPU/request | peer p50 | peer p90 "
             f"| p90 ≤ {TARGETS['metadata_p90_ms']:.0f} ms |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for i, row in enumerate(ours):
        what = f"Metadata v{row.version}, " + ("the topic named" if row.one_topic
                                                else "all topics")
        other = peer[i] if peer else None
        verdict = "met" if row.p90 * 1000 <= TARGETS["metadata_p90_ms"] else "**missed**"
        lines.append(f"| {what} | {_ms(row.p50)} | {_ms(row.p90)} | "
                     f"{_ms(row.cpu_per_request)} | "
                     f"{_ms(other.p50) if other else 'n/a'} | "
                     f"{_ms(other.p90) if other else 'n/a'} | {verdict} |")
    payload = args.messages * VALUE_SIZE
    lines += ["", f"Memory: {args.messages:,} records of {VALUE_SIZE} B "
              f"({payload / 1e6:.0f} MB of payload) produced to {STORE_PARTITIONS} partitions "
              "of one broker; the broker's RSS growth / payload bytes, after the batch bytes "
              "themselves / payload bytes:", "",
              "| records per batch | batch bytes | mockbroker | peer | target |",
              "|---:|---:|---:|---:|---|"]
    ours_mem, peer_mem = memory.get("mockbroker") or [], memory.get("librdkafka mock")
    for i, row in enumerate(ours_mem):
        other = peer_mem[i] if peer_mem and i < len(peer_mem) else None
        verdict = ("≤ 1.2x: " + ("met" if row.ratio <= TARGETS["rss_ratio"] else "**missed**")
                   if row.batch_records >= 100 else "")
        lines.append(f"| {row.batch_records} | {row.encoding:.2f}x | {row.ratio:.2f}x | "
                     f"{f'{other.ratio:.2f}x' if other else 'n/a'} | {verdict} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=50)
    p.add_argument("--messages", type=int, default=1_000_000)
    p.add_argument("--batch-records", type=lambda s: [int(x) for x in s.split(",")],
                   default=[150, 10], help="records per batch, comma separated "
                   "(150: a Java producer's 16 KiB batch.size)")
    p.add_argument("--write", type=Path, metavar="README", help="update the README section")
    args = p.parse_args()
    print(statement(), file=sys.stderr, flush=True)
    text = run(args, lambda line: print(line, file=sys.stderr, flush=True))
    print(text)
    if args.write:
        write_section(args.write, START, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
