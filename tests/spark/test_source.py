"""mockbroker.spark's data source: schema, partitioning, offsets, writes and planning errors.

The read schema and the write columns are the JVM Kafka connector's; one Spark partition
reads one Kafka partition's offset range; bad options fail on the driver while the query is
planned (AnalysisException), never as a task's stack trace.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.spark

JVM_SCHEMA = ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
              "timestamp:timestamp,timestampType:int>")


def read(spark: Any, fmt: str, boot: str, **options: str) -> Any:
    return spark.read.format(fmt).option("kafka.bootstrap.servers", boot).options(**options)


def test_write_and_read_back_every_column(spark: Any, fmt: str, mock: MockClusterThread,
                                          topic: Callable[..., str]) -> None:
    name = topic("roundtrip", 4)
    boot = mock.bootstrap_servers
    before = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=5)
    frame = spark.createDataFrame(
        [(f"k{i}", f"v{i}".encode(), i % 4, [(f"h{i}", b"x")] if i % 2 else None)
         for i in range(40)],
        "key string, value binary, partition int, "
        "headers array<struct<key:string,value:binary>>")
    frame.write.format(fmt).mode("append").option("kafka.bootstrap.servers", boot) \
        .option("topic", name).save()

    plain = read(spark, fmt, boot, subscribe=name).load()
    assert plain.schema.simpleString() == JVM_SCHEMA
    assert plain.rdd.getNumPartitions() == 4  # one Spark partition per Kafka partition
    with_headers = read(spark, fmt, boot, subscribe=name, includeHeaders="true").load()
    assert with_headers.schema.simpleString() == JVM_SCHEMA[:-1] + \
        ",headers:array<struct<key:string,value:binary>>>"
    rows = sorted(with_headers.collect(), key=lambda r: int(r.value[1:]))
    assert len(rows) == 40
    for i, row in enumerate(rows):
        assert (row.key, row.value, row.topic, row.partition) == \
            (f"k{i}".encode(), f"v{i}".encode(), name, i % 4)
        assert row.timestampType == 0 and before < row.timestamp < before + timedelta(minutes=2)
        assert (row.headers is None) if i % 2 == 0 else \
            ([(h.key, h.value) for h in row.headers] == [(f"h{i}", b"x")])
    for p in range(4):  # two write tasks may interleave, but offsets are dense per partition
        assert sorted(r.offset for r in rows if r.partition == p) == list(range(10))


def test_offset_ranges_from_json_and_assign(spark: Any, fmt: str, mock: MockClusterThread,
                                            topic: Callable[..., str]) -> None:
    name = topic("ranges", 2)
    boot = mock.bootstrap_servers
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": boot})
    for p in range(2):
        for i in range(10):
            producer.produce(name, value=f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0

    def offsets(df: Any) -> list[tuple[int, int]]:
        return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())

    ranged = read(spark, fmt, boot, subscribe=name,
                  startingOffsets=f'{{"{name}":{{"0":3,"1":-2}}}}',
                  endingOffsets=f'{{"{name}":{{"0":5,"1":-1}}}}').load()
    assert offsets(ranged) == [(0, 3), (0, 4)] + [(1, i) for i in range(10)]
    assigned = read(spark, fmt, boot, assign=f'{{"{name}":[1]}}',
                    endingOffsets=f'{{"{name}":{{"1":2}}}}').load()
    assert offsets(assigned) == [(1, 0), (1, 1)]
    pattern = read(spark, fmt, boot, subscribePattern=r"ranges-\d+").load()
    assert pattern.count() == 20
    empty = read(spark, fmt, boot, subscribe=name,
                 startingOffsets=f'{{"{name}":{{"0":10,"1":10}}}}').load()
    assert empty.count() == 0


@pytest.mark.parametrize(("options", "at_load", "message"), [
    ({"subscribe": "x"}, True, "option kafka.bootstrap.servers is required"),
    ({"BOOT": "", "subscribe": "nope"}, False, "subscribe: unknown topic(s) nope"),
    ({"BOOT": "", "subscribe": "TOPIC", "startingOffsets": '{"TOPIC":{"0":1'}, True,
     "startingOffsets: malformed offsets JSON"),
    ({"BOOT": "", "subscribe": "TOPIC", "endingOffsets": '{"TOPIC":{"zero":1}}'}, True,
     "partition 'zero' of topic 'TOPIC' is not a partition number"),
    ({"BOOT": "", "subscribe": "TOPIC", "startingOffsets": '{"TOPIC":{"0":1}}'}, False,
     "does not specify TOPIC-1, TOPIC-2"),
    ({"BOOT": "", "subscribe": "TOPIC", "startingOffsets": "latest"}, False,
     "latest (or -1) is not allowed for batch"),
    ({"BOOT": ""}, True, "one of the options subscribe, subscribePattern or assign"),
    ({"BOOT": "", "subscribe": "TOPIC", "maxOffsetsPerTrigger": "lots"}, True,
     "maxOffsetsPerTrigger must be a positive integer"),
])
def test_batch_planning_errors_are_clear(spark: Any, fmt: str, mock: MockClusterThread,
                                         topic: Callable[..., str], options: dict[str, str],
                                         at_load: bool, message: str) -> None:
    """Option errors fail load(); errors that need the cluster fail while the query is planned
    on the driver. Both are AnalysisExceptions carrying the KafkaSourceError's message."""
    from pyspark.errors import AnalysisException

    name = topic("errs")
    opts = {k: v.replace("TOPIC", name) for k, v in options.items() if k != "BOOT"}
    if "BOOT" in options:
        opts["kafka.bootstrap.servers"] = mock.bootstrap_servers
    loaded = False
    with pytest.raises(AnalysisException) as info:
        df = spark.read.format(fmt).options(**opts).load()
        loaded = True
        df.collect()
    assert loaded is not at_load
    assert message.replace("TOPIC", name) in str(info.value)
    assert "KafkaSourceError" in str(info.value)


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "missing"}, r"subscribe: unknown topic\(s\) missing"),
    ({"subscribe": "missing", "endingOffsets": "latest"},
     "endingOffsets is not valid in streaming queries"),
])
def test_streaming_planning_errors_are_clear(spark: Any, fmt: str, mock: MockClusterThread,
                                             options: dict[str, str], message: str) -> None:
    """A streaming query plans its source when it starts: the query stops with the
    KafkaSourceError before its first micro-batch."""
    from pyspark.errors import StreamingQueryException

    query = (spark.readStream.format(fmt)
             .option("kafka.bootstrap.servers", mock.bootstrap_servers).options(**options)
             .load().writeStream.format("noop").start())
    try:
        with pytest.raises(StreamingQueryException, match=message):
            query.awaitTermination(60)
        assert not query.recentProgress
    finally:
        query.stop()


def test_write_needs_a_topic_and_a_value(spark: Any, fmt: str,
                                         mock: MockClusterThread) -> None:
    from pyspark.errors import AnalysisException

    frame = spark.createDataFrame([("a", "b")], "key string, value string")
    writer = frame.write.format(fmt).mode("append").option("kafka.bootstrap.servers",
                                                            mock.bootstrap_servers)
    with pytest.raises(AnalysisException, match="topic option required"):
        writer.save()
    with pytest.raises(AnalysisException, match="Required attribute 'value' not found"):
        frame.select("key").write.format(fmt).mode("append") \
            .option("kafka.bootstrap.servers", mock.bootstrap_servers) \
            .option("topic", "t").save()


def test_offset_lookup_survives_leader_moves(mock: MockClusterThread,
                                             topic: Callable[..., str]) -> None:
    """Right after an election the admin client's leader epoch is stale (FENCED_LEADER_EPOCH);
    the driver's offset lookup retries those partitions instead of failing the query."""
    from mockbroker.spark.options import EARLIEST, LATEST, KafkaOptions
    from mockbroker.spark.source import _Admin

    name = topic("moves")
    admin = _Admin(KafkaOptions.parse({"kafka.bootstrap.servers": mock.bootstrap_servers,
                                       "subscribe": name}))
    tps = admin.partitions()
    for _ in range(5):
        for p in range(3):
            mock.control.elect_leader(name, p)
        assert admin.list_offsets(tps, LATEST) == dict.fromkeys(tps, 0)
        assert admin.list_offsets(tps, EARLIEST) == dict.fromkeys(tps, 0)


def test_transactions_and_isolation_level(spark: Any, fmt: str, mock: MockClusterThread,
                                          topic: Callable[..., str]) -> None:
    """A range that ends in transaction markers still completes; read_committed (through
    kafka.isolation.level) hides the aborted records that read_uncommitted, the default, shows."""
    from confluent_kafka import Producer

    name = topic("txn", 1)
    boot = mock.bootstrap_servers
    producer = Producer({"bootstrap.servers": boot, "transactional.id": f"{name}-tx"})
    producer.init_transactions(30)
    for values, commit in ((["c0", "c1", "c2"], True), (["a0", "a1"], False)):
        producer.begin_transaction()
        for value in values:
            producer.produce(name, value=value)
        assert producer.flush(30) == 0
        (producer.commit_transaction if commit else producer.abort_transaction)(30)

    def values(**options: str) -> list[tuple[int, bytes]]:
        rows = read(spark, fmt, boot, subscribe=name, **options).load().collect()
        return sorted((r.offset, r.value) for r in rows)

    committed = [(0, b"c0"), (1, b"c1"), (2, b"c2")]  # 3: commit marker, 6: abort marker
    assert values() == [*committed, (4, b"a0"), (5, b"a1")]
    assert values(**{"kafka.isolation.level": "read_committed"}) == committed
