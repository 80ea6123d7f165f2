"""One adapter per real client (aiokafka, kafka-python, confluent-kafka, kcat).

Each adapter does the same four things with that client's default settings and no
api_version pinning: read cluster metadata, create a topic (where the client has an admin
API), produce a list of messages, and read a topic back from the beginning. Results are
normalised into the small dataclasses below so tests can compare clients exactly.

Every wait is bounded: consumers stop at the expected count or at a deadline, subprocesses
have timeouts, and clients are always closed before the helper returns (a client that
outlives the cluster only logs reconnect noise, but it would hide real errors).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any

CONSUME_TIMEOUT = 30.0  # seconds; a generous bound, normally reached in well under a second
SUBPROCESS_TIMEOUT = 60.0
CODECS = ("gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class Msg:
    """A message to produce. timestamp None: the client stamps CreateTime itself."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp: int | None = None


@dataclass(frozen=True)
class Delivered:
    partition: int
    offset: int


@dataclass(frozen=True)
class Consumed:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int
    create_time: bool | None  # None: the client does not say which timestamp type

    @property
    def msg(self) -> Msg:
        return Msg(self.key, self.value, self.headers, self.timestamp)


@dataclass(frozen=True)
class PartitionMeta:
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_epoch: int | None = None  # None: the client does not expose it


@dataclass
class ClusterMeta:
    brokers: dict[int, tuple[str, int]]
    controller_id: int | None
    cluster_id: str | None
    topics: dict[str, dict[int, PartitionMeta]] = field(default_factory=dict)


def _headers(raw: Any) -> tuple[tuple[str, bytes], ...]:
    return tuple((k, bytes(v) if v is not None else None) for k, v in (raw or ()))


class Client:
    name = ""
    codecs: tuple[str, ...] = CODECS
    has_admin = True
    sets_timestamps = True
    reports_offsets = True

    def metadata(self, boot: str) -> ClusterMeta:
        raise NotImplementedError

    def create_topic(self, boot: str, name: str, partitions: int) -> None:
        raise NotImplementedError

    def produce(self, boot: str, topic: str, msgs: list[Msg],
                compression: str | None = None, idempotent: bool = False
                ) -> list[Delivered] | None:
        """Produce at acks=all in list order; the delivery (partition, offset) of each
        message in the same order, or None when the client cannot report it. `idempotent`
        turns the client's idempotent producer on (off by default in all four)."""
        raise NotImplementedError

    def consume(self, boot: str, topic: str, partitions: int, count: int,
                timeout: float = CONSUME_TIMEOUT) -> list[Consumed]:
        """Read all partitions from the beginning until `count` messages arrived (or the
        deadline passed), then briefly longer so duplicates would show."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


# -- kafka-python -----------------------------------------------------------------------------

class KafkaPythonClient(Client):
    name = "kafka-python"

    def metadata(self, boot: str) -> ClusterMeta:
        from kafka import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=boot)
        try:
            cluster = admin.describe_cluster()
            names = admin.list_topics()
            topics = admin.describe_topics(names) if names else []
        finally:
            admin.close()
        meta = ClusterMeta(
            brokers={b["broker_id"]: (b["host"], b["port"]) for b in cluster["brokers"]},
            controller_id=cluster["controller_id"], cluster_id=cluster["cluster_id"])
        for t in topics:
            assert t["error_code"] == 0, t
            meta.topics[t["name"]] = {
                p["partition_index"]: PartitionMeta(p["leader_id"], tuple(p["replica_nodes"]),
                                                    tuple(p["isr_nodes"]), p["leader_epoch"])
                for p in t["partitions"]}
        return meta

    def create_topic(self, boot: str, name: str, partitions: int) -> None:
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic

        admin = KafkaAdminClient(bootstrap_servers=boot)
        try:
            admin.create_topics([NewTopic(name, partitions, 3)])
        finally:
            admin.close()

    def produce(self, boot: str, topic: str, msgs: list[Msg],
                compression: str | None = None, idempotent: bool = False
                ) -> list[Delivered]:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=boot, acks="all",
                                 compression_type=compression,
                                 enable_idempotence=idempotent)
        try:
            futures = [producer.send(topic, key=m.key, value=m.value, headers=list(m.headers),
                                     timestamp_ms=m.timestamp) for m in msgs]
            producer.flush(timeout=CONSUME_TIMEOUT)
            out = []
            for f in futures:
                md = f.get(timeout=CONSUME_TIMEOUT)
                out.append(Delivered(md.partition, md.offset))
            return out
        finally:
            producer.close(timeout=10)

    def consume(self, boot: str, topic: str, partitions: int, count: int,
                timeout: float = CONSUME_TIMEOUT) -> list[Consumed]:
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=boot, group_id=None)
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            consumer.seek_to_beginning()
            out: list[Consumed] = []
            deadline = time.monotonic() + timeout
            grace: float | None = None
            while time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=100).values():
                    out.extend(kafka_python_record(r) for r in records)
                if len(out) >= count:
                    grace = grace or time.monotonic() + 0.2
                    if time.monotonic() > grace:
                        break
            return out
        finally:
            consumer.close()


def kafka_python_record(r: Any) -> Consumed:
    return Consumed(r.partition, r.offset, r.key, r.value, _headers(r.headers), r.timestamp,
                    r.timestamp_type == 0)


# -- aiokafka ---------------------------------------------------------------------------------

def _run(coro: Any, timeout: float) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


class AiokafkaClient(Client):
    name = "aiokafka"

    def metadata(self, boot: str) -> ClusterMeta:
        return _run(self._metadata(boot), CONSUME_TIMEOUT)

    async def _metadata(self, boot: str) -> ClusterMeta:
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(bootstrap_servers=boot)
        await admin.start()
        try:
            cluster = await admin.describe_cluster()
            names = await admin.list_topics()
            topics = await admin.describe_topics(names) if names else []
        finally:
            await admin.close()
        meta = ClusterMeta(
            brokers={b["node_id"]: (b["host"], b["port"]) for b in cluster["brokers"]},
            controller_id=cluster["controller_id"], cluster_id=cluster["cluster_id"])
        for t in topics:
            assert t["error_code"] == 0, t
            meta.topics[t["topic"]] = {
                p["partition"]: PartitionMeta(p["leader"], tuple(p["replicas"]),
                                              tuple(p["isr"]))
                for p in t["partitions"]}
        return meta

    def create_topic(self, boot: str, name: str, partitions: int) -> None:
        _run(self._create_topic(boot, name, partitions), CONSUME_TIMEOUT)

    async def _create_topic(self, boot: str, name: str, partitions: int) -> None:
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        admin = AIOKafkaAdminClient(bootstrap_servers=boot)
        await admin.start()
        try:
            resp = await admin.create_topics([NewTopic(name, partitions, 3)])
        finally:
            await admin.close()
        errors = [(t[0], t[1]) for t in resp.topic_errors if t[1] != 0]
        assert not errors, f"CreateTopics failed: {resp}"

    def produce(self, boot: str, topic: str, msgs: list[Msg],
                compression: str | None = None, idempotent: bool = False
                ) -> list[Delivered]:
        return _run(self._produce(boot, topic, msgs, compression, idempotent), CONSUME_TIMEOUT)

    async def _produce(self, boot: str, topic: str, msgs: list[Msg],
                       compression: str | None, idempotent: bool) -> list[Delivered]:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=boot, acks="all",
                                    compression_type=compression,
                                    enable_idempotence=idempotent)
        await producer.start()
        try:
            futures = [await producer.send(topic, key=m.key, value=m.value,
                                           headers=list(m.headers), timestamp_ms=m.timestamp)
                       for m in msgs]
            await producer.flush()
            return [Delivered(md.partition, md.offset) for md in [await f for f in futures]]
        finally:
            await producer.stop()

    def consume(self, boot: str, topic: str, partitions: int, count: int,
                timeout: float = CONSUME_TIMEOUT) -> list[Consumed]:
        return _run(self._consume(boot, topic, partitions, count, timeout), timeout + 10)

    async def _consume(self, boot: str, topic: str, partitions: int, count: int,
                       timeout: float) -> list[Consumed]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(bootstrap_servers=boot, group_id=None)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            await consumer.seek_to_beginning()
            out: list[Consumed] = []
            deadline = time.monotonic() + timeout
            grace: float | None = None
            while time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=100)
                for records in batch.values():
                    out.extend(Consumed(r.partition, r.offset, r.key, r.value,
                                        _headers(r.headers), r.timestamp,
                                        r.timestamp_type == 0) for r in records)
                if len(out) >= count:
                    grace = grace or time.monotonic() + 0.2
                    if time.monotonic() > grace:
                        break
            return out
        finally:
            await consumer.stop()


# -- confluent-kafka --------------------------------------------------------------------------

def confluent_read_values(config: dict[str, Any], topic: str, count: int,
                          timeout: float) -> list[bytes]:
    """The values a confluent-kafka consumer with `config` (group and offset reset
    included) reads from `topic`, until `count` arrived or `timeout` seconds passed."""
    from confluent_kafka import Consumer

    consumer = Consumer(config)
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


def close_confluent(client: Any) -> None:
    close = getattr(client, "close", None)
    if close is not None:
        close()


class ConfluentClient(Client):
    name = "confluent-kafka"

    def metadata(self, boot: str) -> ClusterMeta:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": boot})
        md = admin.list_topics(timeout=CONSUME_TIMEOUT)
        meta = ClusterMeta(
            brokers={b.id: (b.host, b.port) for b in md.brokers.values()},
            controller_id=md.controller_id, cluster_id=md.cluster_id)
        for name, t in md.topics.items():
            assert t.error is None, t.error
            meta.topics[name] = {
                p.id: PartitionMeta(p.leader, tuple(p.replicas), tuple(p.isrs))
                for p in t.partitions.values()}
        return meta

    def create_topic(self, boot: str, name: str, partitions: int) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": boot})
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions,
                                                replication_factor=3)],
                                      request_timeout=CONSUME_TIMEOUT)
        futures[name].result(timeout=CONSUME_TIMEOUT)  # raises KafkaException on error

    def produce(self, boot: str, topic: str, msgs: list[Msg],
                compression: str | None = None, idempotent: bool = False
                ) -> list[Delivered]:
        from confluent_kafka import Producer

        config: dict[str, Any] = {"bootstrap.servers": boot, "acks": "all"}
        if idempotent:
            config["enable.idempotence"] = True
        if compression is not None:
            config["compression.type"] = compression
        producer = Producer(config)
        results: dict[int, Delivered] = {}
        errors: list[Any] = []

        def report(index: int) -> Any:
            def on_delivery(err: Any, m: Any) -> None:
                if err is not None:
                    errors.append(err)
                else:
                    results[index] = Delivered(m.partition(), m.offset())
            return on_delivery

        try:
            for i, m in enumerate(msgs):
                kwargs: dict[str, Any] = {"key": m.key, "value": m.value,
                                          "headers": list(m.headers), "on_delivery": report(i)}
                if m.timestamp is not None:
                    kwargs["timestamp"] = m.timestamp
                while True:
                    try:
                        producer.produce(topic, **kwargs)
                        break
                    except BufferError:  # local queue full: serve delivery reports first
                        producer.poll(0.1)
                producer.poll(0)
            left = producer.flush(CONSUME_TIMEOUT)
        finally:
            close_confluent(producer)
        assert left == 0, f"{left} messages still undelivered"
        assert not errors, errors[:5]
        return [results[i] for i in range(len(msgs))]

    def consume(self, boot: str, topic: str, partitions: int, count: int,
                timeout: float = CONSUME_TIMEOUT) -> list[Consumed]:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        errors: list[Any] = []
        # A group.id is mandatory for the Python Consumer; with assign() and no commits the
        # group coordinator is never needed.
        consumer = Consumer({"bootstrap.servers": boot, "group.id": "mockbroker-tests",
                             "enable.auto.commit": False, "error_cb": errors.append})
        try:
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                             for p in range(partitions)])
            out: list[Consumed] = []
            deadline = time.monotonic() + timeout
            grace: float | None = None
            while time.monotonic() < deadline:
                for m in consumer.consume(num_messages=1000, timeout=0.1):
                    if m.error() is not None:
                        errors.append(m.error())
                        continue
                    out.append(confluent_record(m))
                if len(out) >= count:
                    grace = grace or time.monotonic() + 0.2
                    if time.monotonic() > grace:
                        break
        finally:
            consumer.close()
        assert not errors, errors[:5]
        return out


def confluent_record(m: Any) -> Consumed:
    from confluent_kafka import TIMESTAMP_CREATE_TIME

    ts_type, ts = m.timestamp()
    return Consumed(m.partition(), m.offset(), m.key(), m.value(), _headers(m.headers()), ts,
                    ts_type == TIMESTAMP_CREATE_TIME)


# -- kcat -------------------------------------------------------------------------------------

def find_kcat() -> str | None:
    return shutil.which("kcat") or shutil.which("kafkacat")


# kcat's consumer output: fixed fields, then key and value by their lengths, so any bytes
# (other than a newline) round-trip exactly.
KCAT_FORMAT = "%p\\t%o\\t%T\\t%K\\t%S\\t%h\\t%k%s\\n"


class KcatClient(Client):
    name = "kcat"
    has_admin = False
    sets_timestamps = False
    reports_offsets = False

    def __init__(self, path: str) -> None:
        self.path = path

    def _run(self, args: list[str], data: bytes | None = None) -> bytes:
        proc = subprocess.run([self.path, *args], input=data, capture_output=True,
                              timeout=SUBPROCESS_TIMEOUT, check=False)
        assert proc.returncode == 0, (
            f"kcat {' '.join(args)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
        assert b"ERROR" not in proc.stderr, proc.stderr.decode()[-2000:]
        return proc.stdout

    def metadata(self, boot: str) -> ClusterMeta:
        import json

        md = json.loads(self._run(["-L", "-J", "-b", boot, "-m", "10"]))
        brokers = {}
        for b in md["brokers"]:
            host, port = b["name"].rsplit(":", 1)
            brokers[b["id"]] = (host, int(port))
        meta = ClusterMeta(brokers=brokers, controller_id=md["controllerid"], cluster_id=None)
        for t in md["topics"]:
            assert "error" not in t, t
            meta.topics[t["topic"]] = {
                p["partition"]: PartitionMeta(p["leader"],
                                              tuple(r["id"] for r in p["replicas"]),
                                              tuple(r["id"] for r in p["isrs"]))
                for p in t["partitions"]}
        return meta

    def produce(self, boot: str, topic: str, msgs: list[Msg],
                compression: str | None = None, idempotent: bool = False) -> None:
        """All messages must share one header list (kcat's -H applies to every message),
        have no timestamp, and keys/values without ':' or newlines."""
        headers = msgs[0].headers if msgs else ()
        lines = []
        for m in msgs:
            assert m.headers == headers and m.timestamp is None
            assert m.key is not None and m.value is not None
            assert b":" not in m.key and b"\n" not in m.key + m.value
            lines.append(m.key + b":" + m.value + b"\n")
        args = ["-P", "-b", boot, "-t", topic, "-K:", "-X", "acks=all"]
        if idempotent:
            args += ["-X", "enable.idempotence=true"]
        for name, value in headers:
            args += ["-H", f"{name}={value.decode()}"]
        if compression is not None:
            args += ["-z", compression]
        self._run(args, b"".join(lines))
        return None

    def consume(self, boot: str, topic: str, partitions: int, count: int,
                timeout: float = CONSUME_TIMEOUT) -> list[Consumed]:
        # -e: exit once every partition is at its end; -q: no informational lines.
        out = self._run(["-C", "-b", boot, "-t", topic, "-o", "beginning", "-e", "-q",
                         "-f", KCAT_FORMAT])
        return parse_kcat(out)


def parse_kcat(out: bytes) -> list[Consumed]:
    records = []
    for line in out.split(b"\n"):
        if not line:
            continue
        part, offset, ts, klen, vlen, hdrs, rest = line.split(b"\t", 6)
        klen_i, vlen_i = int(klen), int(vlen)
        key = rest[:klen_i] if klen_i >= 0 else None
        value = rest[max(klen_i, 0):max(klen_i, 0) + vlen_i] if vlen_i >= 0 else None
        assert len(rest) == max(klen_i, 0) + max(vlen_i, 0), line
        headers = tuple((h.split(b"=", 1)[0].decode(), h.split(b"=", 1)[1])
                        for h in hdrs.split(b",") if h)
        records.append(Consumed(int(part), int(offset), key, value, headers, int(ts), None))
    return records


# -- a producer that keeps going in the background (leader-election tests) -----------------

class BackgroundProducer:
    """Produces numbered messages from a thread until stopped (bounded in count and time)."""

    def __init__(self, send: Any, flush: Any, *, per_tick: int = 10, tick: float = 0.01,
                 max_messages: int = 20000, max_seconds: float = 20.0) -> None:
        self._send, self._flush = send, flush
        self.per_tick, self.tick = per_tick, tick
        self.max_messages, self.max_seconds = max_messages, max_seconds
        self.sent = 0
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="bg-producer", daemon=True)

    def start(self) -> BackgroundProducer:
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            end = time.monotonic() + self.max_seconds
            while (not self.stop_event.is_set() and self.sent < self.max_messages
                   and time.monotonic() < end):
                for _ in range(self.per_tick):
                    self._send(self.sent)
                    self.sent += 1
                time.sleep(self.tick)
            self._flush()
        except BaseException as exc:  # surfaced by join()
            self.error = exc

    def join(self, timeout: float = 60.0) -> None:
        self.stop_event.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "background producer did not finish"
        if self.error is not None:
            raise self.error
