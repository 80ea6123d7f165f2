"""mockbroker.spark.options without Spark: option parsing, offsets JSON and rate limiting."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from mockbroker.spark.options import (
    EARLIEST,
    LATEST,
    JavaMissingError,
    KafkaOptions,
    KafkaSourceError,
    check_java,
    from_json_offsets,
    parse_offsets_json,
    rate_limit,
    to_json_offsets,
)

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_option_keys_are_case_insensitive() -> None:
    """Spark lower-cases option keys; callers of the API may not. Both spellings parse alike."""
    camel = KafkaOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "a, b",
                                "startingOffsets": "EARLIEST", "maxOffsetsPerTrigger": "10",
                                "includeHeaders": "TRUE", "failOnDataLoss": "false",
                                "kafka.Isolation.Level": "read_committed"})
    lower = KafkaOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "a, b",
                                "startingoffsets": "earliest", "maxoffsetspertrigger": "10",
                                "includeheaders": "true", "failondataloss": "false",
                                "kafka.isolation.level": "read_committed"})
    assert camel == lower
    assert camel.subscribe == ("a", "b") and camel.starting == "earliest"
    assert camel.max_offsets_per_trigger == 10 and camel.include_headers
    assert not camel.fail_on_data_loss and camel.read_committed


@pytest.mark.parametrize(("options", "message"), [
    ({}, "kafka.bootstrap.servers is required"),
    ({**BOOT, "subscribe": "a", "assign": '{"a":[0]}'}, "only one of the options"),
    ({**BOOT, "subscribePattern": "("}, "is not a regular expression"),
    ({**BOOT, "assign": '{"a":0}'}, "not a map of topics to partition lists"),
    ({**BOOT, "startingOffsets": "{oops"}, "malformed offsets JSON"),
    ({**BOOT, "startingOffsets": '{"a":[1]}'}, "must map partition numbers to offsets"),
    ({**BOOT, "startingOffsets": '{"a":{"0":-3}}'}, "is not an offset, -2 or -1"),
    ({**BOOT, "startingOffsets": '{"a":{"0":true}}'}, "is not an offset, -2 or -1"),
    ({**BOOT, "maxOffsetsPerTrigger": "0"}, "must be a positive integer"),
    ({**BOOT, "includeHeaders": "yes"}, "must be true or false"),
    ({**BOOT, "kafka.auto.offset.reset": "earliest"}, "set the source option 'startingOffsets'"),
    ({**BOOT, "minPartitions": "4"}, "option minPartitions is not supported"),
])
def test_bad_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(KafkaSourceError, match=message):
        KafkaOptions.parse(options)


def test_offsets_json_roundtrip() -> None:
    offsets = parse_offsets_json("startingOffsets", '{"t":{"0":23,"1":-2},"u":{"0":-1}}')
    assert offsets == {("t", 0): 23, ("t", 1): EARLIEST, ("u", 0): LATEST}
    assert to_json_offsets(offsets) == {"t": {"0": 23, "1": -2}, "u": {"0": -1}}
    assert from_json_offsets(to_json_offsets(offsets)) == offsets


def test_batch_and_stream_offset_rules() -> None:
    with pytest.raises(KafkaSourceError, match="latest"):
        KafkaOptions.parse({**BOOT, "startingOffsets": '{"t":{"0":-1}}'}).check_batch_offsets()
    with pytest.raises(KafkaSourceError, match="earliest"):
        KafkaOptions.parse({**BOOT, "endingOffsets": "earliest"}).check_batch_offsets()
    with pytest.raises(KafkaSourceError, match="not valid in streaming"):
        KafkaOptions.parse({**BOOT, "endingOffsets": "latest"}).check_stream_offsets()


def test_partitions_and_offsets_against_topics() -> None:
    topics = {"a": 2, "b": 1, "ab": 3}
    opts = KafkaOptions.parse({**BOOT, "subscribe": "a,b"})
    tps = opts.resolve_partitions(topics)
    assert tps == [("a", 0), ("a", 1), ("b", 0)]
    assert opts.offsets_for("startingOffsets", tps, LATEST) == dict.fromkeys(tps, LATEST)
    pattern = KafkaOptions.parse({**BOOT, "subscribePattern": "a.*"})
    assert pattern.resolve_partitions(topics) == [("a", 0), ("a", 1)] + \
        [("ab", p) for p in range(3)]
    with pytest.raises(KafkaSourceError, match=r"unknown topic\(s\) c .*existing: a, ab, b"):
        KafkaOptions.parse({**BOOT, "subscribe": "a,c"}).resolve_partitions(topics)
    with pytest.raises(KafkaSourceError, match="unknown topic or partition b-1"):
        KafkaOptions.parse({**BOOT, "assign": '{"b":[1]}'}).resolve_partitions(topics)
    exact = KafkaOptions.parse({**BOOT, "subscribe": "a",
                                "startingOffsets": '{"a":{"0":5,"1":-2}}'})
    assert exact.offsets_for("startingOffsets", [("a", 0), ("a", 1)], LATEST) == \
        {("a", 0): 5, ("a", 1): EARLIEST}
    with pytest.raises(KafkaSourceError, match="does not specify a-2"):
        exact.offsets_for("startingOffsets", [("a", 0), ("a", 1), ("a", 2)], LATEST)
    with pytest.raises(KafkaSourceError, match="not subscribed or not existing: a-1"):
        exact.offsets_for("startingOffsets", [("a", 0)], LATEST)


def test_rate_limit_splits_by_backlog() -> None:
    begin = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    end = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}
    assert rate_limit(begin, end, 1000) == end  # under the limit: everything
    assert rate_limit(begin, end, 100) == {("t", 0): 75, ("t", 1): 125, ("t", 2): 50}
    # a share below one record rounds up, so every partition with a backlog moves
    tiny = rate_limit({("t", 0): 0, ("t", 1): 0}, {("t", 0): 1000, ("t", 1): 1}, 10)
    assert tiny == {("t", 0): 9, ("t", 1): 1}
    # a new partition (absent from begin) is taken as starting at its end: nothing to read
    assert rate_limit({}, {("t", 0): 10}, 5) == {("t", 0): 10}


def test_client_config_per_role() -> None:
    opts = KafkaOptions.parse({**BOOT, "kafka.isolation.level": "read_committed",
                               "kafka.linger.ms": "20", "kafka.security.protocol": "PLAINTEXT"})
    consumer, producer, admin = (opts.client_config(r) for r in ("consumer", "producer", "admin"))
    assert consumer["isolation.level"] == "read_committed" and "linger.ms" not in consumer
    assert producer["linger.ms"] == "20" and "isolation.level" not in producer
    assert "isolation.level" not in admin and "linger.ms" not in admin
    assert {c["security.protocol"] for c in (consumer, producer, admin)} == {"PLAINTEXT"}
    assert {c["bootstrap.servers"] for c in (consumer, producer, admin)} == {"127.0.0.1:9092"}


def test_write_columns() -> None:
    opts = KafkaOptions.parse(BOOT)
    opts.check_write_columns({"value": "binary", "topic": "string", "Key": "string",
                              "partition": "int", "extra": "double",
                              "headers": "array<struct<key:string,value:binary>>"})
    with pytest.raises(KafkaSourceError, match="Required attribute 'value' not found"):
        opts.check_write_columns({"key": "string", "topic": "string"})
    with pytest.raises(KafkaSourceError, match="topic option required"):
        opts.check_write_columns({"value": "string"})
    with pytest.raises(KafkaSourceError, match="partition attribute type must be int, not bigint"):
        opts.check_write_columns({"value": "string", "topic": "string", "partition": "bigint"})
    KafkaOptions.parse({**BOOT, "topic": "t"}).check_write_columns({"value": "string"})


@pytest.mark.parametrize(("version", "ok"), [
    ('openjdk version "17.0.15" 2025-04-15', True),
    ('openjdk version "21" 2023-09-19', True),
    ('openjdk version "11.0.22" 2024-01-16', False),
    ('java version "1.8.0_392"', False),
])
def test_java_check(monkeypatch: pytest.MonkeyPatch, version: str, ok: bool) -> None:
    with tempfile.TemporaryDirectory() as home:
        java = Path(home, "bin", "java")
        java.parent.mkdir()
        java.write_text(f"#!/bin/sh\necho '{version}' >&2\n")
        java.chmod(java.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("JAVA_HOME", home)
        if ok:
            assert check_java() >= 17
        else:
            with pytest.raises(JavaMissingError, match=r"below 17.*openjdk-17-jre-headless"):
                check_java()
    monkeypatch.setenv("JAVA_HOME", os.path.join(tempfile.gettempdir(), "no-such-java-home"))
    with pytest.raises(JavaMissingError, match="has no bin/java"):
        check_java()
