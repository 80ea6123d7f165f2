"""A long hostile run against mockbroker's CLI: mutated frames over many short connections,
with the broker process's RSS printed before, during and after.

Usage: .venv/bin/python bench/hostile_soak.py [--frames N] [--warmup N] [--senders 48]
       [--seconds S] [--seed N] [--brokers 3] [--report-every S] [--valid-share F]
       [--expiry short|kafka] [--override KEY=VALUE ...]

Theory of operation: the broker runs as its own process (`python -m mockbroker`, free ports,
its control API on), so its RSS (VmRSS of /proc/PID/status) is its alone. Three topics are
created with a CreateTopics request (the broker keeps 256 KiB per partition replica,
RETENTION, so stored data is bounded as a disk would bound it and the RSS shows the state
kept for clients; and with `--expiry short`, the default, Kafka's day- and week-long expiry
of idle producers and committed offsets is shortened to a minute, so those tables reach
their steady state within the run); then `--senders` connections at a time send the frames
of tests/support/hostile.py (every advertised API drawn from its schema, plain Produce
requests that append, Fetch requests that open and close fetch sessions, most of
them mutated) until `--frames` are sent or `--seconds` pass. A warm-up of `--warmup` frames
comes first, so "before" is the RSS of a broker that has loaded what any traffic loads (the
codec's per-API readers, the internal topics); then the RSS is printed every
`--report-every` seconds with the frames and connections so far, and at the end the range
of the second half's samples (flat: a narrow range, not a climb) and the sizes of the
broker's tables from the control API's /state. The senders run in this process (one core);
the broker in its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import struct
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.append(str(REPO))  # tests.support, after an installed mockbroker (bench/measured.py)
import processes  # bench/processes.py: starting and stopping the broker process  # noqa: E402
from kafka_protocol_codec import decode_response, encode_request  # noqa: E402

from tests.support.hostile import HostileFrames, Tally, run_senders  # noqa: E402

# stored data is bounded as a broker's disk is, by retention, so what the RSS shows is the
# state kept per connection, client id, group, producer...: 256 KiB per partition replica
RETENTION = ("log.retention.bytes=262144", "log.segment.bytes=65536",
             "log.retention.check.interval.ms=1000")
# Kafka's expiry schedules shortened (--expiry short), so that what Kafka keeps for a day or
# a week (idle producers' state, committed offsets and their groups) reaches its steady state
# within minutes; --expiry kafka keeps Kafka's defaults
SHORT_EXPIRY = ("producer.id.expiration.ms=60000",
                "producer.id.expiration.check.interval.ms=10000",
                "offsets.retention.minutes=1", "offsets.retention.check.interval.ms=10000")

READY = re.compile(r"READY bootstrap=(\S+) control=(\S+)")
TOPICS = ("alpha", "beta", "gamma")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _request(port: int, api_key: int, version: int, body: dict[str, Any]) -> Any:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        payload = encode_request(api_key, version, body, correlation_id=1, client_id="soak")
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", _exactly(sock, 4))[0]
        return decode_response(api_key, version, _exactly(sock, size)).body


def _exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def prepare(port: int, partitions: int, replication: int
            ) -> tuple[list[tuple[int, int, int]], list[uuid.UUID], dict[int, list[tuple[str, int]]]]:
    """Create the topics; the broker's advertised API versions, the topics' ids and, per
    broker port, the partitions it leads."""
    versions = _request(port, 18, 3, {"client_software_name": "hostile-soak",
                                      "client_software_version": "1"})
    advertised = [(k.api_key, k.min_version, k.max_version) for k in versions.api_keys]
    _request(port, 19, 5, {"topics": [
        {"name": name, "num_partitions": partitions, "replication_factor": replication,
         "assignments": [], "configs": []} for name in TOPICS], "timeout_ms": 10000,
        "validate_only": False})
    meta = _request(port, 3, 12, {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}
                                             for name in TOPICS]})
    ports = {b.node_id: b.port for b in meta.brokers}
    leaders: dict[int, list[tuple[str, int]]] = {}
    for topic in meta.topics:
        for part in topic.partitions:
            leaders.setdefault(ports[part.leader_id], []).append((topic.name,
                                                                  part.partition_index))
    ids = {t.name: t.topic_id for t in meta.topics}
    return advertised, [ids[name] for name in TOPICS], leaders


def state_sizes(control: str) -> dict[str, int]:
    """Sizes of the broker's tables, from the control API."""
    with urllib.request.urlopen(f"{control}/state", timeout=30) as answer:
        state = json.load(answer)
    telemetry = state.get("telemetry", {})
    return {"topics": len(state.get("topics", {})), "groups": len(state.get("groups", {})),
            "share_groups": len(state.get("share_groups", {})),
            "producers": len(state.get("producers", [])),
            "transactions": len(state.get("transactions", {})),
            "connections": len(state.get("connections", [])),
            "telemetry_clients": len(telemetry.get("clients", [])),
            "quota_throttles": len(state.get("quotas", {}).get("throttles", []))}


async def soak(args: argparse.Namespace) -> int:
    expiry = SHORT_EXPIRY if args.expiry == "short" else ()
    overrides = [arg for value in (*RETENTION, *expiry, *args.override)
                 for arg in ("--override", value)]
    command = processes.mockbroker_command(args.brokers, 1, "--log-level", "ERROR", *overrides)
    proc, bootstrap, control = _start(command)
    try:
        ports = [int(address.rsplit(":", 1)[1]) for address in bootstrap.split(",")]
        advertised, topic_ids, leaders = prepare(ports[0], 3, min(3, args.brokers))
        source = HostileFrames(args.seed, TOPICS, advertised, topic_ids=topic_ids,
                               leaders=leaders, valid_share=args.valid_share)
        started = rss_mb(proc.pid)
        print(f"broker pid {proc.pid}: RSS at start {started:.1f} MB", flush=True)
        tally = Tally()
        await run_senders(source, ports, frames=args.warmup, senders=args.senders,
                          seconds=args.seconds, tally=tally)
        before = rss_mb(proc.pid)
        print(f"after a warm-up of {tally.frames} frames over {tally.connections} "
              f"connections: RSS {before:.1f} MB (before)", flush=True)
        begun = last = time.monotonic()
        warm_frames, warm_connections = tally.frames, tally.connections
        samples = [(0.0, 0, before)]

        def progress(tally: Tally) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last >= args.report_every:
                last = now
                rss = rss_mb(proc.pid)
                samples.append((now - begun, tally.frames - warm_frames, rss))
                print(f"{now - begun:7.0f} s  frames {tally.frames - warm_frames:9d}  "
                      f"connections {tally.connections - warm_connections:8d}  "
                      f"RSS {rss:6.1f} MB", flush=True)

        await run_senders(source, ports, frames=args.frames, senders=args.senders,
                          seconds=args.seconds, tally=tally, on_progress=progress)
        elapsed = time.monotonic() - begun
        await asyncio.sleep(1)
        after = rss_mb(proc.pid)
        frames = tally.frames - warm_frames
        connections = tally.connections - warm_connections
        print(f"done: {frames} frames over {connections} connections in {elapsed:.0f} s "
              f"({frames / max(elapsed, 1e-9):.0f} frames/s); broker closed "
              f"{tally.closed_by_broker} connections, {tally.answers} answers read, "
              f"{tally.timeouts} client timeouts, {tally.refused} refused", flush=True)
        half = [rss for t, _, rss in samples if t >= elapsed / 2] or [after]
        print(f"RSS before {before:.1f} MB, after {after:.1f} MB "
              f"(second half of the run: {min(half):.1f}-{max(half):.1f} MB)", flush=True)
        print("frames by kind: " + json.dumps(dict(sorted(tally.kinds.items()))), flush=True)
        print("broker tables: " + json.dumps(state_sizes(control)), flush=True)
        return 0
    finally:
        processes.stop_process(proc)


def _start(command: list[str]) -> tuple[Any, str, str]:
    import subprocess

    from measured import child_env  # bench/measured.py: the package the broker imports

    proc = subprocess.Popen(command, cwd=REPO, env=child_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = processes.read_line(proc, 60)
    match = READY.match(line)
    if match is None:
        processes.stop_process(proc)
        raise RuntimeError(f"mockbroker did not start: {line!r}")
    return proc, match.group(1), match.group(2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=300_000)
    parser.add_argument("--warmup", type=int, default=20_000)
    parser.add_argument("--senders", type=int, default=48)
    parser.add_argument("--seconds", type=float, default=3600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--report-every", type=float, default=30)
    parser.add_argument("--valid-share", type=float, default=0.2,
                        help="frames sent unmutated (default 0.2)")
    parser.add_argument("--expiry", choices=("short", "kafka"), default="short",
                        help="Kafka's expiry schedules shortened (default: "
                             + " ".join(SHORT_EXPIRY) + ") or Kafka's defaults")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a broker property for mockbroker's --override (repeatable), "
                             "after the retention ones: " + " ".join(RETENTION))
    return asyncio.run(soak(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
