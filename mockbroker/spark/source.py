"""A PySpark data source for Kafka (and so for mockbroker): batch and streaming, read and write.

Spark's own Kafka connector lives in JVM jars (spark-sql-kafka, kafka-clients) that the pyspark
wheel does not ship. This module gives the same thing through Spark 4's Python Data Source API
(`pyspark.sql.datasource`), with confluent-kafka doing the Kafka I/O inside Spark's Python
workers. Option names, the row schema and the offsets JSON are those of the JVM connector, so a
pipeline written against `register(spark)`'s format name runs unchanged on `format("kafka")`
where the JVM connector exists.

    from mockbroker.spark import local_session, register
    spark = local_session()
    fmt = register(spark)                      # "mockkafka"; the name is a parameter
    df = (spark.read.format(fmt).option("kafka.bootstrap.servers", boot)
          .option("subscribe", "events").load())

Theory of operation:

- **Options.** Spark hands a data source its options with lower-cased keys; `KafkaOptions.parse`
  looks every option up case-insensitively and validates it without touching the network, so a
  missing bootstrap, a missing or doubled subscription or a malformed offsets JSON fails at
  `load()` (in `schema()`) with a `KafkaSourceError` naming the option. `kafka.*` options go to
  the client with the prefix stripped (librdkafka property names are lower-case already).
- **Planning runs on the driver.** The batch reader's `partitions()` and the stream reader's
  offset methods resolve topics and offsets through a confluent `AdminClient` (Metadata and
  ListOffsets); an unknown topic, an offsets JSON naming a partition that does not exist or not
  naming all of them, or a starting offset past the end fail there, still before any task runs.
- **One Spark partition per Kafka partition offset range.** An `OffsetRange` is (topic,
  partition, start, end) with `end` exclusive. A worker's `read()` creates its consumer lazily
  (clients cannot be pickled), assigns the range's start and consumes until it sees an offset
  >= end or a partition-EOF at or past end (offsets can have gaps: transaction markers, aborted
  records under read_committed). Rows go back to Spark as Arrow record batches.
- **Micro-batch streaming.** Offsets are the JVM connector's JSON, `{"topic": {"0": 23}}`, which
  Spark writes into the checkpoint's offset log, so a restarted query resumes exactly at the
  next offset of every partition: nothing lost, nothing twice. `latestOffset(start, limit)`
  reads the partitions' end offsets, starts partitions that appeared since at their earliest
  offset, and applies `maxOffsetsPerTrigger` as `ReadMaxRows`, split over partitions in
  proportion to their backlog (the JVM connector's rule). With `Trigger.AvailableNow`,
  `prepareForTriggerAvailableNow` pins the end offsets at that moment.
- **Writing.** Batch and streaming writers take Arrow batches and produce each row with a
  confluent `Producer` (idempotent, murmur2 partitioner: the Java client's defaults), created
  lazily and cached per worker process like the JVM connector's producer cache; each task
  flushes before it commits and fails on any delivery error: at-least-once, like the JVM sink. Columns: value (required), key, topic (or the `topic` option, which wins),
  partition, headers.

`local_session()` starts a loopback-only local session (SPARK_LOCAL_IP=127.0.0.1, the current
Python for the workers) after `check_java()`, which names the package to install when Java 17+
is missing. Options, offsets and the Java check need no pyspark: they are in
mockbroker.spark.options.
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

try:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        DataSourceStreamArrowWriter,
        DataSourceStreamReader,
        InputPartition,
        WriterCommitMessage,
    )
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("mockbroker.spark needs the [spark] extra: "
                      "pip install 'mockbroker[spark]' (pyspark 4.3, pandas, confluent-kafka)"
                      ) from exc

from mockbroker.spark.options import (
    EARLIEST,
    LATEST,
    JavaMissingError,
    KafkaOptions,
    KafkaSourceError,
    Offsets,
    TopicPartition,
    check_java,
    from_json_offsets,
    rate_limit,
    to_json_offsets,
)

__all__ = ["DEFAULT_FORMAT", "JavaMissingError", "KafkaDataSource", "KafkaOptions",
           "KafkaSourceError", "check_java", "kafka_schema", "local_session", "register"]

DEFAULT_FORMAT = "mockkafka"
ARROW_BATCH_ROWS = 8192
HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()),
                                     StructField("value", BinaryType())]))


def kafka_schema(include_headers: bool = False) -> StructType:
    """The JVM connector's read schema; `headers` only with includeHeaders=true, as there."""
    fields = [("key", BinaryType()), ("value", BinaryType()), ("topic", StringType()),
              ("partition", IntegerType()), ("offset", LongType()),
              ("timestamp", TimestampType()), ("timestampType", IntegerType())]
    schema = StructType([StructField(name, kind) for name, kind in fields])
    return schema.add("headers", HEADERS_TYPE) if include_headers else schema


# -- the local session ------------------------------------------------------------------------

def local_session(app_name: str = "mockbroker", cores: int = 2,
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """A loopback-only local SparkSession whose Python workers run this interpreter.

    Sets SPARK_LOCAL_IP=127.0.0.1 and PYSPARK_PYTHON / PYSPARK_DRIVER_PYTHON (unless already
    set), no UI, and few shuffle partitions (a test-sized default). Checks Java first."""
    check_java()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stopTimeout": "30s",
    }
    settings.update(conf or {})
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def register(spark: SparkSession, name: str = DEFAULT_FORMAT) -> str:
    """Register the data source under `name` (not "kafka": the JVM connector's) and return it."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
        raise ValueError(f"illegal data source name {name!r}")
    source = type(f"KafkaDataSource_{re.sub(r'[^A-Za-z0-9_]', '_', name)}", (KafkaDataSource,),
                  {"name": classmethod(lambda cls: name), "__module__": __name__})
    spark.dataSource.register(source)
    return name


# -- clients (created lazily, never pickled) ---------------------------------------------------

class _Admin:
    """The driver's metadata and offset queries; the AdminClient is made on first use."""

    def __init__(self, opts: KafkaOptions) -> None:
        self.opts = opts
        self._client: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts, "_client": None}

    def client(self) -> Any:
        if self._client is None:
            from confluent_kafka.admin import AdminClient

            self._client = AdminClient(self.opts.client_config("admin"))
        return self._client

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count (partitions 0..n-1)."""
        from confluent_kafka import KafkaException

        try:
            meta = self.client().list_topics(timeout=self.opts.timeout_s)
        except KafkaException as exc:
            raise KafkaSourceError(f"cannot reach kafka.bootstrap.servers="
                                   f"{self.opts.bootstrap}: {exc}") from exc
        return {name: len(t.partitions) for name, t in meta.topics.items() if t.error is None}

    def partitions(self) -> list[TopicPartition]:
        """The subscribed partitions; an unknown topic is a KafkaSourceError."""
        return self.opts.resolve_partitions(self.topics())

    def list_offsets(self, tps: Sequence[TopicPartition], which: int) -> Offsets:
        """Earliest (-2) or latest (-1) offset of each partition, honouring isolation.level.

        A partition whose leader just moved answers FENCED_LEADER_EPOCH or NOT_LEADER (the
        client's metadata is stale) and librdkafka's admin call does not retry: such partitions
        are asked again, after a metadata refresh, until timeout_s."""
        from confluent_kafka import IsolationLevel, KafkaException
        from confluent_kafka import TopicPartition as CTopicPartition
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

        offset_spec: Any = OffsetSpec
        spec = offset_spec.earliest() if which == EARLIEST else offset_spec.latest()
        level = (IsolationLevel.READ_COMMITTED if self.opts.read_committed
                 else IsolationLevel.READ_UNCOMMITTED)
        out: Offsets = {}
        pending = list(tps)
        deadline = time.monotonic() + self.opts.timeout_s
        for attempt in range(1, 1000):  # bounded by the deadline long before 1000
            request = {CTopicPartition(t, p): spec for t, p in pending}
            futures = self.client().list_offsets(request, isolation_level=level,
                                                 request_timeout=self.opts.timeout_s) \
                if request else {}
            retry: list[TopicPartition] = []
            for ctp, future in futures.items():
                try:
                    out[(ctp.topic, ctp.partition)] = future.result().offset
                except KafkaException as exc:
                    err = exc.args[0]
                    if time.monotonic() > deadline or not (
                            err.retriable() or err.name() in _STALE_LEADER):
                        raise KafkaSourceError(f"ListOffsets {ctp.topic}-{ctp.partition} "
                                               f"failed: {err}") from exc
                    retry.append((ctp.topic, ctp.partition))
            if not retry:
                break
            pending = retry
            time.sleep(min(0.05 * attempt, 0.5))
            self.client().list_topics(timeout=self.opts.timeout_s)  # refresh leaders
        return out

    def resolve(self, tps: Sequence[TopicPartition], wanted: Offsets) -> Offsets:
        """Replace -2/-1 in `wanted` by the partitions' earliest/latest offsets."""
        earliest = self.list_offsets([tp for tp in tps if wanted[tp] == EARLIEST], EARLIEST)
        latest = self.list_offsets([tp for tp in tps if wanted[tp] == LATEST], LATEST)
        return {tp: earliest.get(tp, latest.get(tp, wanted[tp])) for tp in tps}


_STALE_LEADER = {"FENCED_LEADER_EPOCH", "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE",
                 "UNKNOWN_LEADER_EPOCH", "REPLICA_NOT_AVAILABLE"}


def _consumer(opts: KafkaOptions) -> Any:
    from confluent_kafka import Consumer

    conf = opts.client_config("consumer")
    conf.setdefault("group.id", f"{opts.group_id_prefix}-{uuid.uuid4()}")
    conf.update({"enable.auto.commit": False, "enable.partition.eof": True,
                 "auto.offset.reset": "earliest" if not opts.fail_on_data_loss else "error"})
    conf.setdefault("isolation.level", "read_uncommitted")
    conf.setdefault("fetch.wait.max.ms", 100)
    return Consumer(conf)


# -- reading -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """One Spark partition: offsets [start, end) of one Kafka partition."""

    topic: str
    partition: int
    start: int
    end: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", None)


def plan_ranges(start: Offsets, end: Offsets) -> list[OffsetRange]:
    """Non-empty ranges, in topic-partition order; a partition whose end is below its start
    (the log was truncated, or the topic recreated) is a KafkaSourceError."""
    ranges = []
    for tp in sorted(end):
        begin = start.get(tp, end[tp])
        if end[tp] < begin:
            raise KafkaSourceError(f"{tp[0]}-{tp[1]}: end offset {end[tp]} is below the start "
                                   f"offset {begin} (data loss: was the topic recreated?)")
        if end[tp] > begin:
            ranges.append(OffsetRange(tp[0], tp[1], begin, end[tp]))
    return ranges


_READ_ERRORS = {"_AUTO_OFFSET_RESET", "OFFSET_OUT_OF_RANGE", "UNKNOWN_TOPIC_OR_PART",
                "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC", "TOPIC_AUTHORIZATION_FAILED"}


def read_range(opts: KafkaOptions, rng: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Consume [start, end) of one partition as Arrow batches of the source's schema."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka import TopicPartition as CTopicPartition

    schema = to_arrow_schema(kafka_schema(opts.include_headers), timezone="UTC")
    consumer = _consumer(opts)
    try:
        consumer.assign([CTopicPartition(rng.topic, rng.partition, rng.start)])
        cols: list[list[Any]] = [[] for _ in schema.names]
        position = rng.start
        deadline = time.monotonic() + opts.poll_timeout_s
        while position < rng.end:
            if time.monotonic() > deadline:
                raise KafkaSourceError(
                    f"{rng.topic}-{rng.partition}: no progress for {opts.poll_timeout_s:.0f} s "
                    f"at offset {position} of [{rng.start}, {rng.end}) "
                    "(kafkaConsumer.pollTimeoutMs)")
            # consume() waits for num_messages or the timeout; a range's last message, a
            # message past it or partition-EOF ends the wait early
            wanted = max(1, min(ARROW_BATCH_ROWS - len(cols[0]), rng.end - position))
            for msg in consumer.consume(num_messages=wanted, timeout=0.5):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if msg.offset() >= rng.end:
                            position = rng.end
                        continue
                    if err.fatal() or err.name() in _READ_ERRORS:
                        raise KafkaException(err)
                    continue  # transient (a broker went away, leadership moved): retried
                offset = msg.offset()
                if offset >= rng.end:
                    position = rng.end
                    break
                position = offset + 1
                deadline = time.monotonic() + opts.poll_timeout_s
                ts_type, ts = msg.timestamp()
                row = [msg.key(), msg.value(), rng.topic, rng.partition, offset, ts * 1000,
                       1 if ts_type == 2 else 0]  # confluent: 1 CreateTime, 2 LogAppendTime
                if opts.include_headers:
                    headers = msg.headers()
                    row.append([{"key": k, "value": v} for k, v in headers] if headers else None)
                for col, value in zip(cols, row, strict=True):
                    col.append(value)
                if len(cols[0]) >= ARROW_BATCH_ROWS:
                    yield _record_batch(cols, schema)
                    cols = [[] for _ in schema.names]
        if cols[0]:
            yield _record_batch(cols, schema)
    finally:
        consumer.close()


def _record_batch(cols: list[list[Any]], schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)], schema=schema)


class KafkaBatchReader(DataSourceReader):
    """startingOffsets (default earliest) to endingOffsets (default latest), once."""

    def __init__(self, opts: KafkaOptions) -> None:
        self.opts = opts
        self.admin = _Admin(opts)

    def partitions(self) -> list[OffsetRange]:
        tps = self.admin.partitions()
        start = self.admin.resolve(tps, self.opts.offsets_for("startingOffsets", tps, EARLIEST))
        end = self.admin.resolve(tps, self.opts.offsets_for("endingOffsets", tps, LATEST))
        self._check_bounds(tps, start)
        return plan_ranges(start, end)

    def _check_bounds(self, tps: Sequence[TopicPartition], start: Offsets) -> None:
        latest = self.admin.list_offsets(tps, LATEST)
        for tp in tps:
            if start[tp] > latest[tp]:
                raise KafkaSourceError(f"startingOffsets: {tp[0]}-{tp[1]} offset {start[tp]} "
                                       f"is past the end of the partition ({latest[tp]})")

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, OffsetRange):
            yield from read_range(self.opts, partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over per-partition offsets; see the module docstring."""

    def __init__(self, opts: KafkaOptions) -> None:
        self.opts = opts
        self.admin = _Admin(opts)
        self._target: Offsets | None = None  # Trigger.AvailableNow: the pinned end

    def initialOffset(self) -> dict[str, Any]:
        tps = self.admin.partitions()
        wanted = self.opts.offsets_for("startingOffsets", tps, LATEST)
        return to_json_offsets(self.admin.resolve(tps, wanted))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def _available(self) -> Offsets:
        tps = self.admin.partitions()
        return self.admin.list_offsets(tps, LATEST)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._available()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return to_json_offsets(self._target if self._target is not None else self._available())

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """Partitions that appeared since `start` begin at their earliest offset (as in the
        JVM connector); vanished ones stay where they are; ReadMaxRows caps the batch."""
        tps = self.admin.partitions()
        begin = from_json_offsets(start)
        begin.update(self.admin.list_offsets([tp for tp in tps if tp not in begin], EARLIEST))
        end = dict(self._target) if self._target is not None else \
            self.admin.list_offsets(tps, LATEST)
        for tp, offset in begin.items():
            end.setdefault(tp, offset)
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, end, limit.max_rows)
        return to_json_offsets(end)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[OffsetRange]:
        begin = from_json_offsets(start)
        stop = from_json_offsets(end)
        missing = [tp for tp in stop if tp not in begin]
        begin.update(self.admin.list_offsets(missing, EARLIEST))
        return plan_ranges(begin, stop)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, OffsetRange):
            yield from read_range(self.opts, partition)


# -- writing -----------------------------------------------------------------------------------

@dataclass
class WriteResult(WriterCommitMessage):
    rows: int = 0


# A producer cached per worker process, as the JVM connector caches them: Spark reuses Python
# workers across tasks, and an idempotent producer needs about half a second before its first
# send (librdkafka acquires a producer id first). Each task flushes its own records and has its
# own delivery callback, so tasks sharing a producer stay independent. Only the configuration
# used last is kept (and only for PRODUCER_IDLE_S), so a producer for a cluster that has gone
# away (a test's) is closed as soon as a task writes elsewhere.
_PRODUCERS: dict[tuple[tuple[str, str], ...], tuple[Any, float]] = {}
PRODUCER_IDLE_S = 60.0


def _producer(opts: KafkaOptions) -> Any:
    from confluent_kafka import Producer

    conf = opts.client_config("producer")
    conf.setdefault("enable.idempotence", True)
    conf.setdefault("partitioner", "murmur2_random")
    conf.setdefault("linger.ms", 5)
    key = tuple(sorted((k, str(v)) for k, v in conf.items()))
    now = time.monotonic()
    cached = _PRODUCERS.get(key)
    _PRODUCERS.clear()
    producer = cached[0] if cached and now - cached[1] < PRODUCER_IDLE_S else Producer(conf)
    _PRODUCERS[key] = (producer, now)
    return producer


def write_batches(opts: KafkaOptions, batches: Iterator[pa.RecordBatch]) -> WriteResult:
    """Produce every row; flush; raise on the first delivery error."""
    from confluent_kafka import KafkaException

    producer = _producer(opts)
    errors: list[Any] = []
    rows = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for batch in batches:
        data = {name.lower(): col for name, col in batch.to_pydict().items()}
        n = batch.num_rows
        keys, values = data.get("key", [None] * n), data["value"]
        topics = [opts.topic] * n if opts.topic is not None else data["topic"]
        partitions, headers = data.get("partition", [None] * n), data.get("headers", [None] * n)
        for i in range(n):
            topic, partition, header = topics[i], partitions[i], headers[i]
            if topic is None:
                raise KafkaSourceError("null topic present in the data; use the topic option")
            args = (topic, values[i], keys[i], -1 if partition is None else partition)
            pairs = [(h["key"], h["value"]) for h in header] if header else None
            for _attempt in range(1000):  # a full local queue drains in well under 1000 polls
                try:  # str keys and values are sent as UTF-8, as the JVM sink does
                    producer.produce(*args, on_delivery=on_delivery, headers=pairs)
                    break
                except BufferError:
                    producer.poll(0.05)
            else:
                raise KafkaSourceError("the producer's queue stayed full")
            if i % 1024 == 0:
                producer.poll(0)
                if errors:
                    _PRODUCERS.clear()
                    raise KafkaException(errors[0])
        rows += n
    remaining = producer.flush(opts.timeout_s)
    if errors:
        _PRODUCERS.clear()  # a fatal idempotence error leaves the producer unusable
        raise KafkaException(errors[0])
    if remaining:
        raise KafkaSourceError(f"{remaining} message(s) not delivered within "
                               f"{opts.timeout_s:.0f} s")
    return WriteResult(rows)


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, opts: KafkaOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        return write_batches(self.opts, iterator)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, opts: KafkaOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        return write_batches(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # each task flushed before returning: the batch is in Kafka

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # delivered records stay (at-least-once, as with the JVM sink)


# -- the data source ---------------------------------------------------------------------------

class KafkaDataSource(DataSource):
    """Kafka through confluent-kafka with the JVM connector's options and schema.

    Use `register(spark, name)`, which registers a subclass named `name`."""

    @classmethod
    def name(cls) -> str:
        return DEFAULT_FORMAT

    @property
    def kafka_options(self) -> KafkaOptions:
        opts: KafkaOptions | None = self.__dict__.get("_kafka_options")
        if opts is None:
            opts = KafkaOptions.parse(dict(self.options))
            self.__dict__["_kafka_options"] = opts
        return opts

    def schema(self) -> StructType:
        opts = self.kafka_options
        opts.require_subscription()
        return kafka_schema(opts.include_headers)

    def reader(self, schema: StructType) -> KafkaBatchReader:
        opts = self.kafka_options
        opts.require_subscription()
        opts.check_batch_offsets()
        return KafkaBatchReader(opts)

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        opts = self.kafka_options
        opts.require_subscription()
        opts.check_stream_offsets()
        return KafkaStreamReader(opts)

    def writer(self, schema: StructType, overwrite: bool) -> KafkaBatchWriter:
        self.kafka_options.check_write_columns(
            {f.name: f.dataType.simpleString() for f in schema.fields})
        return KafkaBatchWriter(self.kafka_options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        self.kafka_options.check_write_columns(
            {f.name: f.dataType.simpleString() for f in schema.fields})
        return KafkaStreamWriter(self.kafka_options)

