"""Where a plain Produce request's broker CPU goes over a socket, step by step.

Run as `.venv/bin/python bench/lane_steps.py [--requests 30000] [--rounds 3]`. Not a test
and not part of `make bench`: an analysis, as bench/produce_replay.py is in-process.

It starts the CLI broker (one broker, one partition, retention as bench/throughput_broker.py
sets it) once per step, with the plain Produce lane (handlers/produce_lane.py) cut short
after that step, and drives one connection that keeps 4 Produce v7 requests in flight (the
100 B request of bench/throughput_broker.py: 163 records, 17.9 KB). For each it reports the
broker's CPU per request, and its user and system parts. The steps:

- canned: the lane answers every frame at once with an answer built from the request
  header alone; what is left is the connection, the read callback and the write;
- parse: the compiled parse (kafka_protocol_codec.plain_produce), then that answer;
- check: the parse, the lane's partition table and check_produced_records on every batch,
  then that answer (nothing is appended);
- full: the lane as it is.

The cut-short lane runs in the broker process: this script is its own launcher
(`--serve STEP`, then the CLI's arguments), which replaces PlainProduceLane.answer before
the CLI starts. Rounds take turns over the steps, so a busy machine slows them alike.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from processes import (
    Target,
    cpu_source,
    prepare_topics,
    process_cpu_seconds,
    start_mockbroker,
)
from raw_requests import FrameSplitter, build_record_batch, produce_error, produce_request

STEPS = ("canned", "parse", "check", "full")
TOPIC = "lane-steps"
INFLIGHT = 4
WARM_REQUESTS = 2000
RETENTION = ("--override", "log.retention.bytes=5242880", "--override",
             "log.segment.bytes=1048576", "--override", "log.retention.check.interval.ms=50")
DRIVE_TIMEOUT_S = 120.0


# -- the broker side: the CLI with the lane cut short ------------------------------------------

def serve(step: str, cli_args: list[str]) -> int:
    """Replace PlainProduceLane.answer by `step`'s, then run the CLI as __main__ does."""
    import gc

    gc.disable()  # as mockbroker/__main__.py: the CLI turns collection on after READY
    from kafka_protocol_codec.plain_produce import (
        encode_plain_produce_response,
        parse_plain_produce,
    )

    from mockbroker import compile_cache
    from mockbroker.cluster.log.produce_path import check_produced_records
    from mockbroker.handlers import produce_lane

    compile_cache.install()
    full = produce_lane.PlainProduceLane.answer

    def canned(lane: Any, frame: Any, advertised: Any) -> Any:
        version = int.from_bytes(frame[2:4], "big")
        correlation_id = int.from_bytes(frame[4:8], "big")
        return encode_plain_produce_response(version, correlation_id, [(TOPIC, [(0, 0, 0)])]), ""

    def parsed_answer(parsed: Any) -> Any:
        version, correlation_id, client_id, _acks, _timeout, topics = parsed
        answers = [(name, [(index, 0, 0) for index, _ in partitions])
                   for name, partitions in topics]
        return encode_plain_produce_response(version, correlation_id, answers), client_id

    def parse(lane: Any, frame: Any, advertised: Any) -> Any:
        parsed = parse_plain_produce(frame)
        return None if parsed is None else parsed_answer(parsed)

    def check(lane: Any, frame: Any, advertised: Any) -> Any:
        parsed = parse_plain_produce(frame)
        table = lane._entries()
        if parsed is None or table is None:
            return None
        now = lane.cluster.clock.now_ms()
        for name, partitions in parsed[5]:
            for index, records in partitions:
                entry = lane._entry(table, name, index)
                if entry is None or type(check_produced_records(
                        records, entry.config, now, topic=name, partition=index)) is not tuple:
                    return None
        return parsed_answer(parsed)

    answers = {"canned": canned, "parse": parse, "check": check, "full": full}
    produce_lane.PlainProduceLane.answer = answers[step]  # type: ignore[method-assign]
    from mockbroker.cli import main

    return main(cli_args)


# -- the driving side ----------------------------------------------------------------------

def host_port(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


def drive(address: tuple[str, int], request: bytes, count: int) -> None:
    """`count` requests on one connection, INFLIGHT at a time, every answer read and
    checked (error code 0: a refused request would measure the general path's error)."""
    deadline = time.monotonic() + DRIVE_TIMEOUT_S
    with socket.create_connection(address, timeout=DRIVE_TIMEOUT_S) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        splitter = FrameSplitter()
        sent = answered = 0
        while sent < min(INFLIGHT, count):
            sock.sendall(request)
            sent += 1
        while answered < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{answered} of {count} answers in {DRIVE_TIMEOUT_S} s")
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError(f"the broker closed the connection after {answered} answers")
            splitter.buf += chunk
            for frame in splitter.frames():
                error = produce_error(frame, len(TOPIC))
                if error:
                    raise RuntimeError(f"a Produce answer with error code {error}")
                answered += 1
                if sent < count:
                    sock.sendall(request)
                    sent += 1


def user_system_ticks(pid: int) -> tuple[int, int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def measure(step: str, requests: int, request: bytes) -> tuple[float, float, float]:
    """(CPU, user, system) µs per request of one broker run with the lane cut at `step`."""
    target: Target = start_mockbroker(1, 1, *RETENTION, launcher=(__file__, "--serve", step))
    try:
        assert target.pid is not None
        address = host_port(target.bootstrap)
        prepare_topics(target, [TOPIC], 1, 1, admin_create=False)  # a Metadata creates it
        drive(address, request, WARM_REQUESTS)
        source = cpu_source(target.pid)
        cpu0, ticks0 = process_cpu_seconds(target.pid, source), user_system_ticks(target.pid)
        drive(address, request, requests)
        cpu1, ticks1 = process_cpu_seconds(target.pid, source), user_system_ticks(target.pid)
    finally:
        target.stop()
    if cpu0 is None or cpu1 is None:
        raise RuntimeError("the broker's CPU time cannot be read here")
    tick = os.sysconf("SC_CLK_TCK")
    per = 1e6 / requests
    return ((cpu1 - cpu0) * per, (ticks1[0] - ticks0[0]) / tick * per,
            (ticks1[1] - ticks0[1]) / tick * per)


def span(values: list[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}" if len(values) > 1 else f"{values[0]:.1f}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        if len(argv) < 2 or argv[1] not in STEPS:
            raise SystemExit(f"--serve needs one of {', '.join(STEPS)}")
        return serve(argv[1], argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=30000, help="measured, per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs of every step, in turns")
    parser.add_argument("--size", type=int, default=100, help="record value size (bytes)")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.rounds < 1 or args.size < 1:
        parser.error("--requests, --rounds and --size must be at least 1")
    request = produce_request(TOPIC, 0, build_record_batch(args.size))
    results: dict[str, list[tuple[float, float, float]]] = {step: [] for step in STEPS}
    for round_ in range(1, args.rounds + 1):
        for step in STEPS:
            results[step].append(measure(step, args.requests, request))
            cpu, user, system = results[step][-1]
            print(f"round {round_} {step}: {cpu:.1f} µs CPU per request "
                  f"(user {user:.1f}, system {system:.1f})", file=sys.stderr, flush=True)
    print(f"| lane cut after | CPU µs per request (median, range of {args.rounds}) | user | "
          "system |")
    print("|---|---:|---:|---:|")
    for step in STEPS:
        cpu, user, system = ([r[i] for r in results[step]] for i in range(3))
        print(f"| {step} | {statistics.median(cpu):.1f} ({span(cpu)}) | "
              f"{statistics.median(user):.1f} | {statistics.median(system):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
