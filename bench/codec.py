"""Codec benchmark: our compiled construct codec against kafka-python 3 and kio.

Run as `make bench` (`.venv/bin/python bench/codec.py`). A fixed corpus of realistic messages
is encoded and decoded by both codecs in the same process; each figure is the best of several
timeit repeats, in microseconds per operation. The repeats of all codecs on a message are
interleaved (each codec's first repeat, then each one's second, ...) and timed in the thread's
CPU time, so a busy shared machine slows every codec alike instead of whichever ran while it
was busy. Every peer's encoding of each message is
checked against ours byte for byte. The output is two markdown tables (decode, encode) ready
to paste into the README. kio (a dev extra on CPython 3.11) is reported as unavailable when
it cannot be imported.

    .venv/bin/python bench/codec.py [--budget SECONDS] [--repeat N] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import importlib
import io
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
from measured import statement  # bench/measured.py: installed wheel or checkout
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


def _sized(fn: Callable[[], Any], target_s: float) -> tuple[timeit.Timer, int]:
    """A CPU-time timer of fn and the number of calls that take about target_s."""
    timer = timeit.Timer(fn, timer=time.thread_time)
    loops = 1
    while True:
        elapsed = timer.timeit(loops)
        if elapsed >= target_s / 4 or loops >= 1 << 22:
            break
        loops *= 4 if elapsed < target_s / 40 else 2
    return timer, max(1, int(loops * target_s / max(elapsed, 1e-9)))


def ns_per_op_interleaved(
    fns: dict[str, Callable[[], Any]], *, repeat: int, target_s: float
) -> dict[str, float]:
    """Best of `repeat` loops of about target_s per function, in ns per call; the functions
    take turns, one loop each per round."""
    sized = {name: _sized(fn, target_s) for name, fn in fns.items()}
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, (timer, loops) in sized.items():
            # (timeit switches the garbage collector off while it times)
            best[name] = min(best[name], timer.timeit(loops) / loops * 1e9)
    return best


# kio (native readers and writers for Kafka's protocol types) is an optional peer: its class
# for each benchmark message lives in `kio.schema.<api>.v<version>.<kind>`.
KIO_APIS = {0: "Produce", 1: "Fetch", 3: "Metadata", 8: "OffsetCommit", 11: "JoinGroup"}


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def kio_version() -> str | None:
    """kio's version, or None when it cannot be imported."""
    try:
        import kio  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return None
    return _version("kio")


def kio_codec(m: Message) -> tuple[Callable[[bytes], Any], Callable[[Any], bytes]] | None:
    """kio's (decode, encode) for a benchmark message, or None when kio is unavailable."""
    if kio_version() is None:
        return None
    from kio.serial import entity_reader, entity_writer

    api_name = KIO_APIS[m.key]
    module = importlib.import_module(f"kio.schema.{_snake(api_name)}.v{m.version}.{m.kind}")
    cls = getattr(module, f"{api_name}{m.kind.title()}")
    read = entity_reader(cls)
    write = entity_writer(cls)

    def decode(data: bytes) -> Any:
        return read(data, 0)[0]

    def encode(obj: Any) -> bytes:
        out = io.BytesIO()
        write(out, obj)
        return out.getvalue()

    return decode, encode


@dataclass
class Peer:
    decode_ns: float
    encode_ns: float
    identical: bool  # its encoding equals ours byte for byte


@dataclass
class Row:
    label: str
    size: int
    ours_decode: float
    ours_encode: float
    peers: dict[str, Peer | None]  # by name in PEERS; None when that peer is unavailable


PEERS = ("kafka-python", "kio")


def _codec(m: Message) -> Any:
    spec = api(m.key)
    return spec.request_codec(m.version) if m.kind == "request" else spec.response_codec(m.version)


def bench_message(m: Message, *, repeat: int, target_s: float) -> Row:
    codec = _codec(m)
    # Every codec decodes immutable bytes, as frames arrive from a socket (decoding a bytearray
    # costs our codec a copy).
    ours_bytes = bytes(codec.encode(m.value))
    full = codec.decode(ours_bytes)
    assert codec.encode(full) == ours_bytes

    fns: dict[str, Callable[[], Any]] = {
        "ours decode": lambda: codec.decode(ours_bytes),
        "ours encode": lambda: codec.encode(full),
    }
    identical: dict[str, bool] = {}
    peer_cls = PEER.get((m.key, m.kind))
    if peer_cls is not None:
        peer_obj = peer_object(m.key, m.kind, m.version, full)
        version = m.version
        fns["kafka-python decode"] = lambda: peer_cls.decode(ours_bytes, version=version)
        fns["kafka-python encode"] = lambda: peer_obj.encode(version=version)
        identical["kafka-python"] = bytes(peer_obj.encode(version=version)) == ours_bytes
    kio = kio_codec(m)
    if kio is not None:
        kio_decode, kio_encode = kio
        # kio's object is its own decoding of our bytes; encoding it must give them back.
        kio_obj = kio_decode(ours_bytes)
        fns["kio decode"] = lambda: kio_decode(ours_bytes)
        fns["kio encode"] = lambda: kio_encode(kio_obj)
        identical["kio"] = kio_encode(kio_obj) == ours_bytes
    ns = ns_per_op_interleaved(fns, repeat=repeat, target_s=target_s)
    peers: dict[str, Peer | None] = dict.fromkeys(PEERS)
    for name, same in identical.items():
        peers[name] = Peer(ns[f"{name} decode"], ns[f"{name} encode"], same)
    ours_dec, ours_enc = ns["ours decode"], ns["ours encode"]
    return Row(m.label, len(ours_bytes), ours_dec, ours_enc, peers)


def _us(ns: float | None) -> str:
    return "n/a" if ns is None else f"{ns / 1000:,.2f}"


def _ratio(peer: float | None, ours: float) -> str:
    return "n/a" if peer is None else f"{peer / ours:.2f}x"


def render(rows: list[Row]) -> str:
    """Two markdown tables, decode then encode: µs per operation and peer / ours ratios."""
    lines: list[str] = []
    for op in ("decode", "encode"):
        heads = "".join(f" {name} µs | ratio |" for name in PEERS)
        lines += [
            f"| {op} | bytes | ours µs |{heads}",
            "|---|---:|---:|" + "---:|---:|" * len(PEERS),
        ]
        for r in rows:
            ours = r.ours_decode if op == "decode" else r.ours_encode
            cells = f"| {r.label} | {r.size:,} | {_us(ours)} |"
            for name in PEERS:
                peer = r.peers[name]
                ns = (
                    None if peer is None else (peer.decode_ns if op == "decode" else peer.encode_ns)
                )
                cells += f" {_us(ns)} | {_ratio(ns, ours)} |"
            lines.append(cells)
        lines.append("")
    return "\n".join(lines).rstrip()


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
    print(statement(), file=sys.stderr, flush=True)

    has_kio = kio_version() is not None
    timings = sum(2 + 2 * ((m.key, m.kind) in PEER) + 2 * has_kio for m in CORPUS)
    # Each timing costs about (repeat + 1) loops of target_s (sizing included).
    target_s = max(0.01, args.budget / timings / (args.repeat + 1))

    started = time.perf_counter()
    rows = [bench_message(m, repeat=args.repeat, target_s=target_s) for m in CORPUS]
    took = time.perf_counter() - started

    kio = kio_version()
    env = (
        f"{statement()} "
        f"Python {platform.python_version()} ({platform.machine()}), "
        f"construct {_version('construct')}, kafka-python {_version('kafka-python')}, "
        f"kio {kio or 'unavailable (not importable)'}; best of {args.repeat} repeats, "
        f"µs per operation; ratio = peer / ours (> 1 means ours is faster)."
    )
    notes = []
    for r in rows:
        for name in PEERS:
            peer = r.peers[name]
            if peer is None:
                if name != "kio" or kio is not None:
                    notes.append(f"NOTE: {r.label}: no {name} class to compare with.")
            elif not peer.identical:
                notes.append(f"NOTE: {r.label}: {name}'s encoding differs from ours.")
    if not notes:
        available = [p for p in PEERS if p != "kio" or kio is not None]
        notes.append(f"All encodings are byte-identical to {' and '.join(available)}'s.")
    text = "\n".join([render(rows), "", env, *notes])
    print(text)
    print(f"\n(timing took {took:.1f} s)", file=sys.stderr)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
