"""Codec benchmark: our compiled construct codec against kafka-python 3's protocol classes.

Run as `make bench` (`.venv/bin/python bench/codec.py`). A fixed corpus of realistic messages
is encoded and decoded by both codecs in the same process; each figure is the best of several
timeit repeats, in nanoseconds per operation. Before timing, the two encodings of every
message are checked to be byte-identical. The output is a markdown table ready to paste into
the README. kio is included when importable (it is not installable here).

    .venv/bin/python bench/codec.py [--budget SECONDS] [--repeat N] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from kafka_protocol_codec import api

# The kafka-python adapter is shared with the golden tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "protocol"))
from peer import PEER, peer_object

# ------------------------------------------------------------------ corpus


def record_batch(size: int, *, base_offset: int = 0, value_size: int = 1000) -> bytes:
    """One uncompressed RecordBatch v2 of about `size` bytes (real header and CRC-32C)."""
    count = max(1, -(-size // (value_size + 30)))  # records of ~value_size + 30 bytes
    try:
        from kafka_protocol_codec.records import RecordSpec, build_batch

        specs = [
            RecordSpec(
                key=f"key-{i:06d}".encode(),
                value=bytes([i % 251]) * value_size,
                headers=[("trace", b"abc")],
                timestamp=1_700_000_000_000 + i,
            )
            for i in range(count)
        ]
        return bytes(build_batch(specs, base_offset=base_offset))
    except ImportError:  # records.py without build_batch: kafka-python's builder
        from kafka.record.default_records import DefaultRecordBatchBuilder

        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=0,
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=1 << 24,
        )
        for i in range(count):
            builder.append(
                i,
                timestamp=1_700_000_000_000 + i,
                key=f"key-{i:06d}".encode(),
                value=bytes([i % 251]) * value_size,
                headers=[("trace", b"abc")],
            )
        batch = bytearray(builder.build())
        batch[0:8] = base_offset.to_bytes(8, "big")
        return bytes(batch)


def produce_v9() -> dict[str, Any]:
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [
            {"name": "orders", "partition_data": [{"index": 3, "records": record_batch(16 * 1024)}]}
        ],
    }


def fetch_v12() -> dict[str, Any]:
    partitions = [
        {
            "partition_index": p,
            "error_code": 0,
            "high_watermark": 100_000 + p,
            "last_stable_offset": 100_000 + p,
            "log_start_offset": 0,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": record_batch(64 * 1024, base_offset=1000 * p),
        }
        for p in range(10)
    ]
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 12345,
        "responses": [{"topic": "orders", "partitions": partitions}],
    }


def metadata_v12() -> dict[str, Any]:
    brokers = [
        {
            "node_id": b,
            "host": f"broker-{b}.kafka.svc.cluster.local",
            "port": 9092,
            "rack": f"zone-{b}",
        }
        for b in range(3)
    ]
    topics = []
    for t in range(100):
        partitions = [
            {
                "error_code": 0,
                "partition_index": p,
                "leader_id": p % 3,
                "leader_epoch": 5 + p,
                "replica_nodes": [p % 3, (p + 1) % 3, (p + 2) % 3],
                "isr_nodes": [p % 3, (p + 1) % 3, (p + 2) % 3],
                "offline_replicas": [],
            }
            for p in range(10)
        ]
        topics.append(
            {
                "error_code": 0,
                "name": f"service.events.topic-{t:03d}",
                "topic_id": uuid.UUID(int=(t + 1) * 0x1234567890ABCDEF),
                "is_internal": False,
                "partitions": partitions,
                "topic_authorized_operations": -2147483648,
            }
        )
    return {
        "throttle_time_ms": 0,
        "brokers": brokers,
        "cluster_id": "MkU3OEVBNTcwNTJENDM2Qk",
        "controller_id": 1,
        "topics": topics,
    }


SUBSCRIPTION = b"\x00\x03" + b"\x00\x00\x00\x02\x00\x06orders\x00\x08payments" + b"\xff" * 8


def join_group_v9_request() -> dict[str, Any]:
    return {
        "group_id": "billing-service",
        "session_timeout_ms": 45000,
        "rebalance_timeout_ms": 300000,
        "member_id": "consumer-billing-1-5f3e0c1a",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [
            {"name": "cooperative-sticky", "metadata": SUBSCRIPTION},
            {"name": "range", "metadata": SUBSCRIPTION},
        ],
        "reason": None,
    }


def join_group_v9_response() -> dict[str, Any]:
    members = [
        {
            "member_id": f"consumer-billing-{i}-5f3e0c1a",
            "group_instance_id": None,
            "metadata": SUBSCRIPTION,
        }
        for i in range(10)
    ]
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "generation_id": 42,
        "protocol_type": "consumer",
        "protocol_name": "cooperative-sticky",
        "leader": members[0]["member_id"],
        "skip_assignment": False,
        "member_id": members[0]["member_id"],
        "members": members,
    }


def offset_commit_v8() -> dict[str, Any]:
    topics = [
        {
            "name": f"service.events.topic-{t:03d}",
            "partitions": [
                {
                    "partition_index": p,
                    "committed_offset": 1_000_000 + p,
                    "committed_leader_epoch": 5,
                    "committed_metadata": "",
                }
                for p in range(10)
            ],
        }
        for t in range(5)
    ]
    return {
        "group_id": "billing-service",
        "generation_id_or_member_epoch": 42,
        "member_id": "consumer-billing-1-5f3e0c1a",
        "group_instance_id": None,
        "topics": topics,
    }


@dataclass
class Message:
    label: str
    key: int
    version: int
    kind: str
    value: dict[str, Any]


CORPUS = [
    Message("Produce v9 request (1 x 16 KiB batch)", 0, 9, "request", produce_v9()),
    Message("Fetch v12 response (10 x 64 KiB)", 1, 12, "response", fetch_v12()),
    Message(
        "Metadata v12 response (100 topics x 10 partitions)", 3, 12, "response", metadata_v12()
    ),
    Message("JoinGroup v9 request", 11, 9, "request", join_group_v9_request()),
    Message("JoinGroup v9 response (10 members)", 11, 9, "response", join_group_v9_response()),
    Message(
        "OffsetCommit v8 request (5 topics x 10 partitions)", 8, 8, "request", offset_commit_v8()
    ),
]

# ------------------------------------------------------------------ timing


def ns_per_op(fn: Callable[[], Any], *, repeat: int, target_s: float) -> float:
    """Best of `repeat` runs of a loop sized to take about target_s, in ns per call."""
    timer = timeit.Timer(fn)
    loops = 1
    while True:
        elapsed = timer.timeit(loops)
        if elapsed >= target_s / 4 or loops >= 1 << 22:
            break
        loops *= 4 if elapsed < target_s / 40 else 2
    loops = max(1, int(loops * target_s / max(elapsed, 1e-9)))
    # (timeit switches the garbage collector off while it times)
    return min(timer.repeat(repeat=repeat, number=loops)) / loops * 1e9


@dataclass
class Row:
    label: str
    size: int
    ours_decode: float
    peer_decode: float | None
    ours_encode: float
    peer_encode: float | None
    identical: bool | None


def _codec(m: Message) -> Any:
    spec = api(m.key)
    return spec.request_codec(m.version) if m.kind == "request" else spec.response_codec(m.version)


def bench_message(m: Message, *, repeat: int, target_s: float) -> Row:
    codec = _codec(m)
    # Both codecs decode immutable bytes, as frames arrive from a socket (decoding a bytearray
    # costs our codec a copy).
    ours_bytes = bytes(codec.encode(m.value))
    full = codec.decode(ours_bytes)
    assert codec.encode(full) == ours_bytes

    peer_cls = PEER.get((m.key, m.kind))
    identical = None
    peer_dec = peer_enc = None
    if peer_cls is not None:
        peer_obj = peer_object(m.key, m.kind, m.version, full)
        peer_bytes = bytes(peer_obj.encode(version=m.version))
        identical = peer_bytes == ours_bytes
        version = m.version
        peer_dec = ns_per_op(
            lambda: peer_cls.decode(ours_bytes, version=version), repeat=repeat, target_s=target_s
        )
        peer_enc = ns_per_op(
            lambda: peer_obj.encode(version=version), repeat=repeat, target_s=target_s
        )
    ours_dec = ns_per_op(lambda: codec.decode(ours_bytes), repeat=repeat, target_s=target_s)
    ours_enc = ns_per_op(lambda: codec.encode(full), repeat=repeat, target_s=target_s)
    return Row(m.label, len(ours_bytes), ours_dec, peer_dec, ours_enc, peer_enc, identical)


def _ns(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def _ratio(peer: float | None, ours: float) -> str:
    return "n/a" if peer is None else f"{peer / ours:.2f}x"


def render(rows: list[Row]) -> str:
    lines = [
        "| message | bytes | ours decode ns | kafka-python decode ns | ratio "
        "| ours encode ns | kafka-python encode ns | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.label} | {r.size:,} | {_ns(r.ours_decode)} | {_ns(r.peer_decode)} "
            f"| {_ratio(r.peer_decode, r.ours_decode)} | {_ns(r.ours_encode)} "
            f"| {_ns(r.peer_encode)} | {_ratio(r.peer_encode, r.ours_encode)} |"
        )
    return "\n".join(lines)


def _version(dist: str) -> str:
    try:
        return importlib_metadata.version(dist)
    except importlib_metadata.PackageNotFoundError:
        return "not installed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--budget",
        type=float,
        default=24.0,
        help="approximate total seconds of timing (default 24)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="timeit repeats (best is kept)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)

    timings = sum(4 if (m.key, m.kind) in PEER else 2 for m in CORPUS)
    # Each timing costs about (repeat + 1) loops of target_s (sizing included).
    target_s = max(0.01, args.budget / timings / (args.repeat + 1))

    started = time.perf_counter()
    rows = [bench_message(m, repeat=args.repeat, target_s=target_s) for m in CORPUS]
    took = time.perf_counter() - started

    try:
        import kio  # type: ignore[import-not-found]  # noqa: F401

        kio_note = "kio: installed, but not benchmarked yet (add it to bench/codec.py)"
    except ImportError:
        kio_note = "kio: not installed"

    env = (
        f"Python {platform.python_version()} ({platform.machine()}), "
        f"construct {_version('construct')}, kafka-python {_version('kafka-python')}; "
        f"best of {args.repeat} repeats, ns per operation; ratio = kafka-python / ours "
        f"(> 1 means ours is faster)."
    )
    notes = []
    for r in rows:
        if r.identical is False:
            notes.append(f"NOTE: {r.label}: kafka-python's encoding differs from ours.")
        elif r.identical is None:
            notes.append(f"NOTE: {r.label}: no kafka-python class to compare with.")
    if not notes:
        notes.append("All encodings are byte-identical to kafka-python's.")
    text = "\n".join([render(rows), "", env, *notes, kio_note])
    print(text)
    print(f"\n(timing took {took:.1f} s)", file=sys.stderr)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
