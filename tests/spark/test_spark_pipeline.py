"""The example pipeline and streaming guarantees, end to end through Spark and mockbroker.

- Batch and streaming runs of examples/spark_pipeline.py (windowed counts per key, JSON in,
  counts out to a topic) equal the same computation in plain Python over the same events.
- A streaming query restarted from its checkpoint continues where it stopped: every source
  record reaches the sink exactly once, across several rate-limited micro-batches and a
  restart with new data in between.
- Leaders of the source topic's partitions move while a streaming query reads it and a
  producer writes it: the sink ends up with exactly what was acknowledged.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from types import ModuleType
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.spark.conftest import end_offsets, produce

pytestmark = pytest.mark.spark

DEADLINE = 90.0  # seconds for a streaming phase; normally a few


def test_batch_counts_equal_python(spark: Any, fmt: str, mock: MockClusterThread,
                                   topic: Callable[..., str], pipeline: ModuleType) -> None:
    events, result = topic("events"), topic("counts")
    data = pipeline.make_events(3000, seed=1)
    pipeline.produce_events(mock.bootstrap_servers, events, data)
    pipeline.run_batch(spark, fmt, mock.bootstrap_servers, events, result)
    got = pipeline.read_counts(spark, fmt, mock.bootstrap_servers, result)
    assert got == pipeline.expected_counts(data)
    assert sum(got.values()) == 3000


def test_streaming_counts_equal_python_across_restart(
        spark: Any, fmt: str, mock: MockClusterThread, topic: Callable[..., str],
        pipeline: ModuleType) -> None:
    """Rate-limited micro-batches, then more events and a restart from the checkpoint: the
    aggregation state and the source offsets both come back, so no event counts twice."""
    events, result = topic("events"), topic("counts")
    first, second = pipeline.make_events(2000, seed=2), pipeline.make_events(1000, seed=3)
    boot = mock.bootstrap_servers
    with tempfile.TemporaryDirectory(prefix="spark-ckpt-") as checkpoint:
        pipeline.produce_events(boot, events, first)
        query = pipeline.start_streaming(spark, fmt, boot, events, result, checkpoint,
                                         max_offsets_per_trigger=700)
        assert query.awaitTermination(DEADLINE), "the first run did not finish"
        rows = [p["numInputRows"] for p in query.recentProgress]
        assert sum(rows) == 2000 and len(rows) >= 3, rows  # 700 per trigger: several batches
        assert max(rows) <= 700, rows
        assert pipeline.read_counts(spark, fmt, boot, result) == pipeline.expected_counts(first)

        pipeline.produce_events(boot, events, second)
        query = pipeline.start_streaming(spark, fmt, boot, events, result, checkpoint,
                                         max_offsets_per_trigger=700)
        assert query.awaitTermination(DEADLINE), "the restarted run did not finish"
        assert sum(p["numInputRows"] for p in query.recentProgress) == 1000
    assert pipeline.read_counts(spark, fmt, boot, result) == \
        pipeline.expected_counts(first + second)


def _sink_values(spark: Any, fmt: str, boot: str, sink: str) -> Counter[int]:
    rows = (spark.read.format(fmt).option("kafka.bootstrap.servers", boot)
            .option("subscribe", sink).load().select("value").collect())
    return Counter(int(r.value) for r in rows)


def _copy_query(spark: Any, fmt: str, boot: str, source: str, sink: str, checkpoint: str,
                *, limit: int, available_now: bool) -> Any:
    stream = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", boot)
              .option("subscribe", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(limit)).load())
    writer = (stream.select("key", "value").writeStream.format(fmt)
              .option("kafka.bootstrap.servers", boot).option("topic", sink)
              .option("checkpointLocation", checkpoint))
    if available_now:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime="200 milliseconds").start()


def test_restart_from_checkpoint_loses_nothing_and_repeats_nothing(
        spark: Any, fmt: str, mock: MockClusterThread, topic: Callable[..., str]) -> None:
    """Two AvailableNow runs of a topic-to-topic copy on one checkpoint, 250 records per
    micro-batch; between them more records arrive and the source grows a fourth partition,
    which the restarted query reads from its earliest offset."""
    source, sink = topic("source"), topic("sink", 2)
    boot = mock.bootstrap_servers

    def records(lo: int, hi: int) -> list[tuple[bytes | None, bytes]]:
        return [(f"k{i % 11}".encode(), str(i).encode()) for i in range(lo, hi)]

    with tempfile.TemporaryDirectory(prefix="spark-ckpt-") as checkpoint:
        produce(boot, source, records(0, 900))
        query = _copy_query(spark, fmt, boot, source, sink, checkpoint, limit=250,
                            available_now=True)
        assert query.awaitTermination(DEADLINE)
        assert len(query.recentProgress) >= 4
        assert _sink_values(spark, fmt, boot, sink) == Counter(range(900))

        mock.control.expand_partitions(source, 4)
        produce(boot, source, records(900, 1500))
        query = _copy_query(spark, fmt, boot, source, sink, checkpoint, limit=250,
                            available_now=True)
        assert query.awaitTermination(DEADLINE)
        first_start = json.loads(query.recentProgress[0]["sources"][0]["startOffset"])
        last_end = json.loads(query.recentProgress[-1]["sources"][0]["endOffset"])
    # the restart began at the checkpointed offsets, i.e. the first run's end
    assert sum(first_start[source].values()) == 900
    ends = end_offsets(boot, source, 4)
    assert ends[3] > 0 and {int(p): o for p, o in last_end[source].items()} == ends
    assert _sink_values(spark, fmt, boot, sink) == Counter(range(1500))


def test_leader_election_during_streaming_loses_nothing(
        spark: Any, fmt: str, mock: MockClusterThread, topic: Callable[..., str]) -> None:
    """Every partition's leader moves four times (through the control API) while a producer
    writes the source topic and a streaming query copies it to the sink in rate-limited
    micro-batches: the sink holds every acknowledged record exactly once."""
    source, sink = topic("source"), topic("sink", 2)
    boot = mock.bootstrap_servers
    total, rounds = 3000, 4
    elections: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="spark-ckpt-") as checkpoint:
        query = _copy_query(spark, fmt, boot, source, sink, checkpoint, limit=300,
                            available_now=False)
        try:
            producer = threading.Thread(target=_produce_slowly, args=(boot, source, total),
                                        daemon=True)
            producer.start()
            deadline = time.monotonic() + DEADLINE
            while not any(p["numInputRows"] for p in query.recentProgress):
                assert time.monotonic() < deadline, "the query read nothing"
                assert query.exception() is None, query.exception()
                time.sleep(0.05)
            batches_before = len(query.recentProgress)
            for _ in range(rounds):  # while the query reads and the producer writes
                time.sleep(0.4)
                elections += [mock.control.elect_leader(source, p) for p in range(3)]
            batches_during = len(query.recentProgress) - batches_before
            producer.join(DEADLINE)
            assert not producer.is_alive(), "the producer did not finish"
            while sum(end_offsets(boot, sink, 2).values()) < total:
                assert time.monotonic() < deadline, "the sink did not catch up"
                assert query.exception() is None, query.exception()
                time.sleep(0.2)
        finally:
            query.stop()
    assert query.exception() is None
    assert batches_during >= 1
    assert _sink_values(spark, fmt, boot, sink) == Counter(range(total))
    for p in range(3):  # each election moved the leader and raised the epoch
        mine = [e for e in elections if e["partition"] == p]
        assert [e["leader_epoch"] for e in mine] == list(range(1, rounds + 1))
        assert all(a["leader"] != b["leader"] for a, b in pairwise(mine))


def _produce_slowly(boot: str, source: str, total: int) -> None:
    """`total` numbered records over about three seconds from one idempotent producer;
    every record acknowledged (acks=all) or the thread raises."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": boot, "enable.idempotence": True,
                         "linger.ms": 5})
    errors: list[Any] = []
    for i in range(total):
        producer.produce(source, key=f"k{i % 13}".encode(), value=str(i).encode(),
                         on_delivery=lambda err, _m: err is not None and errors.append(err))
        if i % 100 == 99:
            producer.poll(0)
            time.sleep(3.0 / (total / 100))
    assert producer.flush(DEADLINE) == 0 and not errors, errors
