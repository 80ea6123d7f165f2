"""Windowed counts per key with PySpark over Kafka: JSON events in, counts out to a topic.

Run it against a mockbroker started in-process (one command, from the repository root):

    .venv/bin/python examples/spark_pipeline.py            # or: make spark-example

Theory of operation: `main` starts a 3-broker MockClusterThread on loopback, a local Spark
session and mockbroker's Kafka data source (`mockbroker.spark.register`), produces `--events`
JSON events (`{"user": "user-3", "action": "click", "ts": "2024-01-01T00:03:17Z"}`) to the
events topic, then runs the same transformation (`windowed_counts`: parse the JSON, count per
user per one-minute event-time window) twice: as a batch job and as a micro-batch streaming job
(Trigger.AvailableNow, maxOffsetsPerTrigger, a checkpoint). Each writes one record per
(user, window) to its result topic, keyed `user|window_start`, the value a JSON object with the
count. The streaming job runs in complete mode (Spark's Python data source sinks take append
and complete, not update), so every micro-batch rewrites the whole table and a window's later
records supersede earlier ones; `read_counts` keeps the last record per key (keys are
partitioned by murmur2, so one key's records stay in order in one partition). Both results must equal
`expected_counts`, the same computation in plain Python; the run prints timings and exits 1 on
a mismatch.

Only the data source's format name is mockbroker-specific: with Spark's JVM Kafka connector on
the classpath, pass `--format kafka --bootstrap HOST:PORT` and the same code runs unchanged.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

EVENT_SCHEMA = "user STRING, action STRING, ts TIMESTAMP"
WINDOW_SECONDS = 60
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
Counts = dict[tuple[str, int], int]  # (user, window start in epoch seconds) -> count


def make_events(n: int, users: int = 12, span_s: int = 600, seed: int = 7) -> list[dict[str, str]]:
    """Deterministic events over `span_s` seconds, a little out of order, as Kafka would see."""
    rng = random.Random(seed)
    events = []
    for i in range(n):
        at = EPOCH + timedelta(seconds=i * span_s / max(n, 1) + rng.uniform(-20, 20))
        at = max(at, EPOCH)
        events.append({"user": f"user-{rng.randrange(users)}",
                       "action": rng.choice(("view", "click", "buy")),
                       "ts": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")})
    return events


def expected_counts(events: Sequence[dict[str, str]]) -> Counts:
    """The pipeline's result in plain Python."""
    counts: Counter[tuple[str, int]] = Counter()
    for event in events:
        at = datetime.strptime(event["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        seconds = int(at.timestamp())
        counts[(event["user"], seconds - seconds % WINDOW_SECONDS)] += 1
    return dict(counts)


def produce_events(bootstrap: str, topic: str, events: Sequence[dict[str, str]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "enable.idempotence": True})
    for event in events:
        for _ in range(100):  # bounded: a full queue drains within a few polls
            try:
                producer.produce(topic, key=event["user"], value=json.dumps(event))
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    if producer.flush(30):
        raise RuntimeError("events not delivered within 30 s")


def windowed_counts(source: DataFrame) -> DataFrame:
    """Kafka rows -> one Kafka row per (user, window): key `user|start`, JSON value."""
    events = source.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
    counts = (events.select("e.*")
              .groupBy(F.window("ts", f"{WINDOW_SECONDS} seconds"), "user")
              .count())
    start = F.col("window.start").cast("long")
    return counts.select(
        F.concat_ws("|", "user", start.cast("string")).alias("key"),
        F.to_json(F.struct("user", start.alias("window_start"), "count")).alias("value"))


def reader(spark: SparkSession, fmt: str, bootstrap: str, topic: str) -> Any:
    return (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest"))


def run_batch(spark: SparkSession, fmt: str, bootstrap: str, source: str, result: str) -> None:
    """Everything in the events topic now -> counts in the result topic."""
    counts = windowed_counts(reader(spark, fmt, bootstrap, source).load())
    (counts.write.format(fmt).mode("append").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", result).save())


def start_streaming(spark: SparkSession, fmt: str, bootstrap: str, source: str, result: str,
                    checkpoint: str, max_offsets_per_trigger: int | None = None,
                    available_now: bool = True) -> StreamingQuery:
    """The same counts as a streaming query (complete mode: each batch writes the table)."""
    stream = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source).option("startingOffsets", "earliest"))
    if max_offsets_per_trigger:
        stream = stream.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    writer = (windowed_counts(stream.load()).writeStream.format(fmt).outputMode("complete")
              .option("kafka.bootstrap.servers", bootstrap).option("topic", result)
              .option("checkpointLocation", checkpoint))
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="500 milliseconds")
    return writer.start()


def read_counts(spark: SparkSession, fmt: str, bootstrap: str, topic: str) -> Counts:
    """The result topic reduced to its last record per key (a changelog's final state)."""
    rows = reader(spark, fmt, bootstrap, topic).load().select(
        "key", "value", "partition", "offset").collect()
    latest: dict[bytes, tuple[int, int, bytes]] = {}
    for row in rows:
        seen = latest.get(row.key)
        if seen is None or (row.partition, row.offset) > seen[:2]:
            latest[row.key] = (row.partition, row.offset, row.value)
    out: Counts = {}
    for _, _, value in latest.values():
        record = json.loads(value)
        out[(record["user"], record["window_start"])] = record["count"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=5_000)
    parser.add_argument("--format", default=None,
                        help="data source name (default: mockbroker.spark's, registered here)")
    parser.add_argument("--bootstrap", default=None,
                        help="an existing cluster (topics must exist); default: an in-process "
                             "mockbroker")
    args = parser.parse_args(argv)

    from mockbroker.embedded import MockClusterThread
    from mockbroker.spark import local_session, register

    mock = spark = None
    t0 = time.monotonic()
    bootstrap = args.bootstrap
    if bootstrap is None:
        mock = MockClusterThread(brokers=3).start()
        bootstrap = mock.bootstrap_servers
        for topic in ("events", "counts-batch", "counts-stream"):
            mock.control.create_topic(topic, partitions=args.partitions)
    try:
        spark = local_session("spark-pipeline-example")
        fmt = args.format or register(spark)
        t_session = time.monotonic()
        events = make_events(args.events)
        produce_events(bootstrap, "events", events)
        expected = expected_counts(events)
        t_produced = time.monotonic()

        run_batch(spark, fmt, bootstrap, "events", "counts-batch")
        batch = read_counts(spark, fmt, bootstrap, "counts-batch")
        t_batch = time.monotonic()

        with tempfile.TemporaryDirectory(prefix="spark-pipeline-") as checkpoint:
            query = start_streaming(spark, fmt, bootstrap, "events", "counts-stream",
                                    checkpoint, args.max_offsets_per_trigger)
            if not query.awaitTermination(600):
                query.stop()
                raise RuntimeError("the streaming query did not finish within 600 s")
            batches = len(query.recentProgress)
        stream = read_counts(spark, fmt, bootstrap, "counts-stream")
        t_stream = time.monotonic()
    finally:  # Spark first: its workers' clients would complain about a vanished broker
        if spark is not None:
            spark.stop()
        if mock is not None:
            mock.stop()

    print(f"bootstrap {bootstrap}; format {fmt}; {len(events):,} events, "
          f"{len(expected):,} (user, window) counts")
    print(f"broker + Spark session start {t_session - t0:.1f} s; produce "
          f"{t_produced - t_session:.1f} s; batch job {t_batch - t_produced:.1f} s; "
          f"streaming job ({batches} micro-batch{'es' if batches != 1 else ''}) "
          f"{t_stream - t_batch:.1f} s; "
          f"total {t_stream - t0:.1f} s")
    ok = True
    for name, got in (("batch", batch), ("streaming", stream)):
        same = got == expected
        ok &= same
        print(f"{name}: {'OK, equals' if same else 'MISMATCH with'} the plain-Python result")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
