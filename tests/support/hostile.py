"""Hostile traffic for the soak and fuzz tests: requests a fuzzer would start from, mutated as
a fuzzer mutates them, sent over many short connections.

Theory of operation: `HostileFrames` (seeded, so a run can be replayed) builds each request
afresh: a request of any API the broker advertises, its body drawn from the API's schema
with identities (client ids, group ids, transactional ids, member ids, producer ids) drawn
from a space far larger than the run so every table keyed by them sees new keys all the
time, and topic names mostly those of the cluster under test (so requests reach partitions)
and now and then new ones; or, as often, a request shaped to reach the stores: a plain Produce
(acks 1 or all, one CreateTime batch per partition, plain, idempotent or transactional) to
partitions the receiving broker mostly leads (`leaders`), which it appends, or a Fetch that
opens,
continues or closes a fetch session and reads stored batches by reference, or a request
that makes the broker keep something under a name the client chose (a group joined, an
offset committed, a transactional id, a telemetry client instance). Then most frames
are mutated: bytes set, inserted or deleted, a stretch overwritten with a huge or negative
length, the frame cut short (down to nothing), two requests spliced, or the API key or
version changed; some go out unchanged. A frame's size prefix always says its true size,
except in `garbage` frames, which may announce more than follows.

`send_connection` sends one connection's frames: all at once then an end of stream (the
broker answers what it can and closes), or one at a time waiting for each answer, or all at
once then a reset (the client going away under a parked request). Every wait is bounded; it
counts what happened in `Tally`. `run_senders` runs `senders` such connections at a time
until `frames` frames are sent or `seconds` pass.
"""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_protocol_codec import CodecError, encode_request
from kafka_protocol_codec.api import api
from kafka_protocol_codec.records import RecordSpec, build_batch
from kafka_protocol_codec.schema import F, in_range
from kafka_protocol_codec.structs import default_value

_SIZE = struct.Struct(">i")
LOOPBACK = "127.0.0.1"
HUGE = (0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0x7FFF, 0xFFFF, 0x0FFFFFFF)
KEEP_OUT = frozenset((20, 21, 45, 57))
# linger 0: close() sends a reset
_RESET = struct.pack("ii", 1, 0)


def framed(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def _field_on_wire(f: F, version: int, flexible: bool) -> bool:
    if not in_range(version, f.versions):
        return False
    if f.tag is not None:
        return flexible and in_range(version, f.tagged)
    return True


@dataclass
class Tally:
    """What a run did, summed over its connections."""

    connections: int = 0
    frames: int = 0
    bytes_sent: int = 0
    answers: int = 0  # whole response frames read
    closed_by_broker: int = 0  # the broker ended the connection (end of stream or reset)
    refused: int = 0  # could not connect
    timeouts: int = 0  # the client gave up waiting and closed
    kinds: dict[str, int] = field(default_factory=dict)  # frames by how they were made

    def add(self, kind: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


class HostileFrames:
    """Seeded source of hostile request frames (see the module docstring)."""

    def __init__(self, seed: int, topics: Sequence[str], advertised: Sequence[tuple[int, int, int]],
                 *, partitions: int = 3, topic_ids: Sequence[uuid.UUID] = (),
                 leaders: dict[int, list[tuple[str, int]]] | None = None,
                 new_topic_share: float = 0.02, valid_share: float = 0.2) -> None:
        self.rng = random.Random(seed)
        self.topics = list(topics)
        # port -> the (topic, partition)s the broker there leads: Produce and Fetch requests
        # for a connection to it name those mostly, so they reach the log
        self.leaders = leaders or {}
        self.port: int | None = None  # where the frames being made go (run_senders sets it)
        self.topic_ids = dict(zip(topics, topic_ids, strict=False))
        self.partitions = partitions
        self.new_topic_share = new_topic_share
        self.valid_share = valid_share  # frames sent as built, not mutated
        # not DeleteTopics, DeleteRecords, AlterPartitionReassignments or UpdateFeatures as
        # drawn requests: the run keeps the topics it aims at (mutations may still make them)
        self.apis = [(key, low, high) for key, low, high in advertised
                     if key not in KEEP_OUT]
        self._advertised = {key: (low, high) for key, low, high in advertised}
        self._correlation = 0
        rng = self.rng
        plain = build_batch([RecordSpec(key=b"k", value=b"v" * 20, timestamp=1000)])
        self._batches: list[Callable[[], bytes]] = [
            lambda: plain,
            lambda: build_batch([RecordSpec(value=b"x" * rng.randrange(1, 200))]),
            lambda: build_batch([RecordSpec(value=b"i")], producer_id=rng.randrange(1 << 40),
                                producer_epoch=rng.randrange(3),
                                base_sequence=rng.choice((0, 0, 1, 1000))),
            lambda: build_batch([RecordSpec(value=b"t")], producer_id=rng.randrange(1 << 40),
                                producer_epoch=0, base_sequence=0, transactional=True),
        ]

    # -- identities -------------------------------------------------------------------------

    def _ident(self, prefix: str) -> str:
        return f"{prefix}-{self.rng.getrandbits(48):012x}"

    def topic(self) -> str:
        if not self.topics or self.rng.random() < self.new_topic_share:
            return self._ident("hostile-topic")
        return self.rng.choice(self.topics)

    def _string(self, name: str) -> str | None:
        rng = self.rng
        if "topic" in name or name in ("name", "topic_name"):
            return self.topic()
        if "group" in name:
            return self._ident("group")
        if "transactional" in name:
            return self._ident("txn")
        if "member" in name or "instance" in name:
            return rng.choice(("", self._ident("member")))
        if "client" in name:
            return self._ident("client")
        return rng.choice(("", "x", self._ident("s"), "é" * rng.randrange(4)))

    def _int(self, kind: str, name: str) -> int:
        rng = self.rng
        bits = {"int8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32,
                "int64": 64}[kind]
        if "producer_id" in name:
            return rng.choice((-1, rng.randrange(1 << 40)))
        if "partition" in name or name == "index":
            return rng.randrange(-1, self.partitions + 1)
        if "timeout" in name or "wait" in name:
            return rng.choice((0, 10, 100, 6000, 30000))
        roll = rng.random()
        if roll < 0.6:
            value = rng.choice((0, 1, 2, 3, -1))
        elif roll < 0.9:
            value = rng.randrange(1 << min(bits - 1, 20))
        else:
            value = rng.randrange(-(1 << (bits - 1)), 1 << (bits - 1))
        if kind.startswith("uint"):
            value %= 1 << bits
        return value

    # -- bodies from the schema -------------------------------------------------------------

    def _value(self, f: F, version: int, flexible: bool) -> Any:
        kind = f.element_type
        if f.is_struct:
            return self._struct(f.fields, version, flexible)
        if kind == "string":
            return self._string(f.name)
        if kind == "bool":
            return self.rng.random() < 0.5
        if kind == "float64":
            return self.rng.random()
        if kind == "uuid":
            if self.topic_ids and "topic" in f.name and self.rng.random() < 0.8:
                return self.rng.choice(list(self.topic_ids.values()))
            return uuid.UUID(int=self.rng.getrandbits(128))
        if kind == "bytes":
            return self.rng.randbytes(self.rng.randrange(0, 40))
        if kind == "records":
            return self.rng.choice(self._batches)()
        return self._int(kind, f.name)

    def _struct(self, fields: tuple[F, ...], version: int, flexible: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields:
            if not _field_on_wire(f, version, flexible):
                out[f.name] = default_value(f)
            elif in_range(version, f.nullable) and self.rng.random() < 0.1:
                out[f.name] = None
            elif f.is_array:
                out[f.name] = [self._value(f, version, flexible)
                               for _ in range(self.rng.choice((0, 1, 1, 2, 3)))]
            else:
                out[f.name] = self._value(f, version, flexible)
        return out

    def _next_correlation(self) -> int:
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        return self._correlation

    def schema_request(self) -> bytes:
        key, low, high = self.rng.choice(self.apis)
        version = self.rng.randint(low, high)
        spec = api(key)
        message = spec.request
        body = self._struct(message.fields, version, in_range(version, message.flexible))
        try:
            return encode_request(key, version, body, correlation_id=self._next_correlation(),
                                  client_id=self._ident("client"))
        except (CodecError, ValueError, TypeError, OverflowError):
            return self.produce_request()

    # -- requests shaped for the fast paths ---------------------------------------------------

    def _targets(self) -> dict[str, list[int]]:
        """Topics and partitions for a Produce or Fetch: mostly some the broker the frames
        go to leads, else any."""
        rng = self.rng
        led = self.leaders.get(self.port) if self.port is not None else None
        chosen: dict[str, list[int]] = {}
        for _ in range(rng.choice((1, 1, 1, 2))):
            if led and rng.random() < 0.8:
                name, index = rng.choice(led)
            else:
                name, index = self.topic(), rng.randrange(self.partitions)
            if index not in chosen.setdefault(name, []):
                chosen[name].append(index)
        return chosen

    def produce_request(self) -> bytes:
        """A Produce that appends when its partitions exist and are led here."""
        rng = self.rng
        version = rng.choice((3, 7, 8, 9, 10, 11))
        topics = [{"name": name, "partition_data": [
            {"index": index, "records": rng.choice(self._batches)()} for index in parts]}
            for name, parts in self._targets().items()]
        body = {"transactional_id": rng.choice((None, None, None, self._ident("txn"))),
                "acks": rng.choice((1, -1, -1, 0)), "timeout_ms": 1000, "topic_data": topics}
        return encode_request(0, version, body, correlation_id=self._next_correlation(),
                              client_id=self._ident("producer"))

    def fetch_request(self) -> bytes:
        """A Fetch that opens (session 0, epoch 0), continues or closes a fetch session, or
        fetches without one, reading from offset 0 with a short wait."""
        rng = self.rng
        version = rng.choice((4, 7, 11, 12, 13, 15, 16))
        by_id = version >= 13
        session_id, epoch = rng.choice(((0, 0), (0, 0), (0, -1), (rng.randrange(1, 5000), 1),
                                        (rng.randrange(1, 5000), -1),
                                        (rng.randrange(1, 5000), 0)))
        topics = []
        for name, parts in self._targets().items():
            topic_id = self.topic_ids.get(name, uuid.UUID(int=0)) if by_id else uuid.UUID(int=0)
            topics.append({"topic": name, "topic_id": topic_id, "partitions": [
                {"partition": index, "fetch_offset": rng.choice((0, 0, 5, 1 << 40)),
                 "partition_max_bytes": 1 << 20, "log_start_offset": -1,
                 "current_leader_epoch": -1, "last_fetched_epoch": -1}
                for index in parts]})
        body = {"replica_id": -1, "max_wait_ms": rng.choice((0, 0, 10, 50)), "min_bytes": 1,
                "max_bytes": 1 << 24, "isolation_level": rng.choice((0, 1)),
                "session_id": session_id, "session_epoch": epoch, "topics": topics,
                "forgotten_topics_data": [], "rack_id": ""}
        return encode_request(1, version, body, correlation_id=self._next_correlation(),
                              client_id=self._ident("consumer"))

    def _version(self, key: int, low: int, high: int) -> int | None:
        """A version of `key` in [low, high] the broker advertises, None if none."""
        advertised = self._advertised.get(key)
        if advertised is None:
            return None
        low, high = max(low, advertised[0]), min(high, advertised[1])
        return self.rng.randint(low, high) if low <= high else None

    def session_request(self) -> bytes:
        """A request that makes the broker keep something for a name the client chose: a
        JoinGroup (v3, no member id needed) or a KIP-848 ConsumerGroupHeartbeat joining a
        new group, a simple OffsetCommit to one, an InitProducerId with a new transactional
        id, a GetTelemetrySubscriptions for a new client instance."""
        rng = self.rng
        kind = rng.choice(("join", "consumer-join", "commit", "init-producer", "telemetry"))
        group = self._ident("group")
        key, body, version = 11, {}, self._version(11, 3, 3)
        if kind == "consumer-join":
            key, version = 68, self._version(68, 0, 0)
            body = {"group_id": group, "member_id": "", "member_epoch": 0, "instance_id": None,
                    "rack_id": None, "rebalance_timeout_ms": 30000, "server_assignor": None,
                    "subscribed_topic_names": [self.topic()], "topic_partitions": []}
        elif kind == "commit":
            key, version = 8, self._version(8, 2, 7)
            body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                    "retention_time_ms": -1, "group_instance_id": None, "topics": [
                        {"name": self.topic(), "partitions": [
                            {"partition_index": rng.randrange(self.partitions),
                             "committed_offset": rng.randrange(100), "committed_metadata": "",
                             "committed_leader_epoch": -1}]}]}
        elif kind == "init-producer":
            key, version = 22, self._version(22, 0, 4)
            body = {"transactional_id": rng.choice((None, self._ident("txn"))),
                    "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1}
        elif kind == "telemetry":
            key, version = 71, self._version(71, 0, 0)
            body = {"client_instance_id": uuid.UUID(int=0)}
        else:
            body = {"group_id": group, "session_timeout_ms": rng.choice((6000, 30000)),
                    "rebalance_timeout_ms": 10000, "member_id": "", "protocol_type": "consumer",
                    "protocols": [{"name": "range", "metadata": b""}]}
        if version is None:
            return self.produce_request()
        return encode_request(key, version, body, correlation_id=self._next_correlation(),
                              client_id=self._ident("client"))

    # -- mutation -------------------------------------------------------------------------------

    def mutate(self, body: bytes) -> tuple[str, bytes]:
        rng = self.rng
        data = bytearray(body)
        kind = rng.choice(("set", "set", "insert", "delete", "huge", "cut", "cut", "splice",
                           "api", "version", "none"))
        if kind == "set" and data:
            for _ in range(rng.randrange(1, 5)):
                data[rng.randrange(len(data))] = rng.choice((0, 0xFF, 0x7F, 0x80,
                                                             rng.randrange(256)))
        elif kind == "insert":
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.randbytes(rng.randrange(1, 8))
        elif kind == "delete" and data:
            at = rng.randrange(len(data))
            del data[at:at + rng.randrange(1, 8)]
        elif kind == "huge" and len(data) >= 4:
            at = rng.randrange(len(data) - 3)
            data[at:at + 4] = struct.pack(">I", rng.choice(HUGE))
        elif kind == "cut":
            del data[rng.randrange(min(len(data) + 1, 12) if rng.random() < 0.3
                                   else len(data) + 1):]
        elif kind == "splice":
            other = self.base()
            data = data[:rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1):]
        elif kind == "api" and len(data) >= 2:
            data[0:2] = struct.pack(">h", rng.choice((0, 1, 3, 18, rng.randrange(-5, 100))))
        elif kind == "version" and len(data) >= 4:
            data[2:4] = struct.pack(">h", rng.randrange(-2, 20))
        return kind, bytes(data)

    def base(self) -> bytes:
        roll = self.rng.random()
        if roll < 0.3:
            return self.produce_request()
        if roll < 0.55:
            return self.fetch_request()
        if roll < 0.65:
            return self.session_request()
        return self.schema_request()

    def frame(self) -> tuple[str, bytes]:
        """One framed request: (how it was made, bytes)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.04:  # garbage: any bytes, a size prefix that may promise more
            size = rng.choice((0, 1, 2, 3, 7, 8, 9, 12, rng.randrange(64)))
            junk = rng.randbytes(size)
            if rng.random() < 0.3:
                return "garbage-short", _SIZE.pack(size + rng.randrange(1, 100)) + junk
            return "garbage", framed(junk)
        body = self.base()
        if roll < 0.04 + self.valid_share:
            return "valid", framed(body)
        kind, mutated = self.mutate(body)
        return kind, framed(mutated)


def leaders_by_port(cluster: Any, topics: Sequence[str]) -> dict[int, list[tuple[str, int]]]:
    """For HostileFrames(leaders=...): port -> the (topic, partition)s its broker leads, from
    a Cluster's image (in-process tests)."""
    out: dict[int, list[tuple[str, int]]] = {}
    for name in topics:
        for index, part in cluster.image.topics[name].partitions.items():
            node = cluster.brokers.get(part.leader)
            if node is not None:
                out.setdefault(node.port, []).append((name, index))
    return out


async def send_connection(port: int, frames: list[tuple[str, bytes]], mode: str, tally: Tally,
                          *, deadline: float = 2.0, host: str = LOOPBACK) -> None:
    """One connection: send `frames` as `mode` says ("eof": all, then end of stream, read
    to the end; "each": one at a time, each answer awaited; "reset": all, then a reset
    after a short wait). Every wait is bounded by `deadline` seconds."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), deadline)
    except (OSError, TimeoutError):
        tally.refused += 1
        return
    tally.connections += 1
    try:
        async with asyncio.timeout(deadline):
            if mode == "each":
                for kind, data in frames:
                    writer.write(data)
                    tally.frames += 1
                    tally.bytes_sent += len(data)
                    tally.add(kind)
                    await writer.drain()
                    if not await _read_one(reader, tally):
                        return
                return
            for kind, data in frames:
                tally.frames += 1
                tally.bytes_sent += len(data)
                tally.add(kind)
            writer.write(b"".join(data for _, data in frames))
            await writer.drain()
            if mode == "reset":
                await asyncio.sleep(0.005)
                _reset(writer)
                return
            if writer.can_write_eof():
                writer.write_eof()
            while await _read_one(reader, tally):
                pass
    except TimeoutError:
        tally.timeouts += 1
    except (ConnectionError, OSError):
        tally.closed_by_broker += 1
    finally:
        writer.close()


async def _read_one(reader: asyncio.StreamReader, tally: Tally) -> bool:
    """Read one whole answer (True), or find the connection ended (False)."""
    try:
        prefix = await reader.readexactly(4)
        await reader.readexactly(_SIZE.unpack(prefix)[0])
    except (asyncio.IncompleteReadError, ConnectionError):
        tally.closed_by_broker += 1
        return False
    tally.answers += 1
    return True


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
        except OSError:
            pass
    writer.transport.abort()


async def run_senders(source: HostileFrames, ports: Sequence[int], *, frames: int,
                      senders: int, seconds: float, tally: Tally | None = None,
                      per_connection: tuple[int, int] = (1, 4),
                      on_progress: Callable[[Tally], None] | None = None) -> Tally:
    """`senders` connections at a time, each to a port of `ports` with 1..4 frames, until
    `frames` frames are sent or `seconds` have passed."""
    tally = tally if tally is not None else Tally()
    stop_at = time.monotonic() + seconds
    rng = source.rng
    planned = 0

    async def sender() -> None:
        nonlocal planned
        while planned < frames and time.monotonic() < stop_at:
            count = min(rng.randint(*per_connection), frames - planned)
            planned += count
            port = source.port = rng.choice(ports)
            batch = [source.frame() for _ in range(count)]
            mode = rng.choice(("eof", "eof", "eof", "each", "reset"))
            await send_connection(port, batch, mode, tally)
            if on_progress is not None:
                on_progress(tally)

    await asyncio.gather(*(sender() for _ in range(senders)))
    return tally
