"""Kafka Streams 4.4.0 as a real client: a stateful word count with exactly_once_v2 runs to
completion on mockbroker and on the session's real Kafka, with the same output.

tests/jvm/src/main/java/io/mockbroker/jvmstreams/WordCount.java produces TEXT's lines to a
2-partition input topic, runs the application (flatMapValues into words, groupBy word: a
repartition topic; count into a store: its changelog topic; the counts to an output topic;
classic group protocol, commit.interval.ms=100), reads the output with read_committed until
every word's last count is the text's (bounded), closes the application and lists the
internal topics it created. Both JVMs run at once. The final count of every word, the
internal topics (names, partition counts and the configs Streams gave them) and the input
offsets the application committed are checked exactly on each target.
"""

from __future__ import annotations

from pathlib import Path

from mockbroker.embedded import MockClusterThread
from tests.jvmclients.jvm_observations import observations, start
from tests.support.real_kafka import RealKafka

PREFIX = "jstreams"
TIMEOUT = 240.0  # seconds for one run (it takes 10-20 s; the Java side's waits are bounded)
TEXT = """\
The quick brown fox jumps over the lazy dog.
The dog barks; the fox runs, and the dog sleeps.
A quick brown dog? A lazy fox! The end of the fox.
Foxes and dogs: it's the dog's day, not the fox's.
"""
FINAL_COUNTS = {
    "a": 2, "and": 2, "barks": 1, "brown": 2, "day": 1, "dog": 4, "dog's": 1, "dogs": 1,
    "end": 1, "fox": 4, "fox's": 1, "foxes": 1, "it's": 1, "jumps": 1, "lazy": 2, "not": 1,
    "of": 1, "over": 1, "quick": 2, "runs": 1, "sleeps": 1, "the": 9,
}
INTERNAL_TOPICS = {f"{PREFIX}-wc-words-repartition": 2, f"{PREFIX}-wc-counts-changelog": 2}
# the topic configs Kafka Streams gives its internal topics when it creates them
INTERNAL_TOPIC_CONFIGS = {
    f"{PREFIX}-wc-words-repartition": ["cleanup.policy=delete",
                                       "message.timestamp.type=CreateTime",
                                       "retention.ms=-1", "segment.bytes=52428800"],
    f"{PREFIX}-wc-counts-changelog": ["cleanup.policy=compact",
                                      "message.timestamp.type=CreateTime"],
}
# the lines alternate between the input's two partitions: two lines each, all consumed
COMMITTED_INPUT_OFFSETS = {f"{PREFIX}-text-0": 2, f"{PREFIX}-text-1": 2}


def test_a_word_count_with_exactly_once_v2_agrees(real_kafka: RealKafka,
                                                  tmp_path: Path) -> None:
    text = tmp_path / "text.txt"
    text.write_text(TEXT)
    with MockClusterThread(brokers=1, kafka_version="all") as mock:
        runs = {target: start("io.mockbroker.jvmstreams.WordCount", boot, PREFIX, str(text),
                              str(tmp_path / f"state-{target}"))
                for target, boot in (("mockbroker", mock.bootstrap_servers),
                                     ("kafka", real_kafka.bootstrap_servers))}
        observed = {target: observations(run, TIMEOUT) for target, run in runs.items()}
    expected = {"state": {"ok": "RUNNING"}, "counts": {"ok": FINAL_COUNTS},
                "closed": {"ok": "NOT_RUNNING"}, "internal topics": {"ok": INTERNAL_TOPICS},
                "internal topic configs": {"ok": INTERNAL_TOPIC_CONFIGS},
                "committed input offsets": {"ok": COMMITTED_INPUT_OFFSETS}}
    assert observed["kafka"] == expected
    assert observed["mockbroker"] == expected
