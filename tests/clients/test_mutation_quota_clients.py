"""KIP-599 controller mutation quotas with real admin clients, on a manual clock so the token
bucket is exact. A controller_mutation_rate of 1/s gives an 11-token bucket.

kafka-python (3.x) sends CreateTopics v7, DeleteTopics v6 and CreatePartitions v3, all strict: the topics that
find the bucket exhausted come back THROTTLING_QUOTA_EXCEEDED with Kafka's message, the
others are created or deleted, and the client pauses the broker for the response's throttle
time (it refuses to send meanwhile: NodeNotReadyError, so the test retries, bounded).
librdkafka (confluent-kafka 2.x) caps CreateTopics at v4, DeleteTopics at v4 and
CreatePartitions at v2, all below the strict versions: every mutation is accepted and the
throttle reaches the application only through its throttle callback. It never sees error 89,
so there is nothing for it to retry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as ConfluentNewTopic
from kafka.admin import KafkaAdminClient, NewPartitions
from kafka.admin import NewTopic as KafkaNewTopic
from kafka.errors import NodeNotReadyError

from mockbroker.cluster import ManualClock
from mockbroker.embedded import MockClusterThread

TIMEOUT = 30.0
THROTTLING_QUOTA_EXCEEDED = 89
MESSAGE = "The throttling quota has been exceeded."
T = TypeVar("T")


@pytest.fixture
def cluster() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=1, clock=ManualClock()) as mock:
        yield mock


def _topics(cluster: MockClusterThread) -> list[str]:
    return cluster.call(lambda: sorted(cluster.cluster.image.topics))


def _while_paused(call: Callable[[], T]) -> T:
    """kafka-python refuses requests to a broker it has paused for a throttle: retry until
    the pause ends (bounded)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            return call()
        except NodeNotReadyError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _errors(response: dict[str, Any]) -> dict[str, tuple[int, str | None]]:
    return {r["name"]: (r["error_code"], r["error_message"]) for r in response["topics"]}


def _throttle_logs(caplog: pytest.LogCaptureFixture, api: str) -> list[str]:
    """kafka-python logs each throttled response: '<Api>Response throttled by broker (N ms)'."""
    marker = f"{api}Response throttled by broker"
    return [m[m.index(marker):] for m in caplog.messages if marker in m]


def test_kafka_python_gets_throttling_quota_exceeded_for_the_topics_over_it(
        cluster: MockClusterThread, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kafka")
    cluster.control.set_quota({"client-id": "kp-admin"}, {"controller_mutation_rate": 1})
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id="kp-admin")
    try:
        # 11 tokens: "a" empties the bucket, "b" finds it at 0 (accepted, -1), "c" refused
        created = admin.create_topics([KafkaNewTopic("a", 11, 1), KafkaNewTopic("b", 1, 1),
                                       KafkaNewTopic("c", 1, 1)], raise_errors=False)
        assert _errors(created) == {
            "a": (0, None), "b": (0, None), "c": (THROTTLING_QUOTA_EXCEEDED, MESSAGE)}
        # one token at 1/s
        assert _throttle_logs(caplog, "CreateTopics") == [
            "CreateTopicsResponse throttled by broker (1000 ms)"]
        assert _topics(cluster) == ["a", "b"]

        cluster.control.advance_clock(1000)  # back to 0 tokens: the next topic passes
        deleted = _while_paused(lambda: admin.delete_topics(["b", "a"], raise_errors=False))
        assert _errors(deleted) == {"b": (0, None), "a": (THROTTLING_QUOTA_EXCEEDED, MESSAGE)}
        assert _throttle_logs(caplog, "DeleteTopics") == [
            "DeleteTopicsResponse throttled by broker (1000 ms)"]
        assert _topics(cluster) == ["a"]

        cluster.control.advance_clock(1000)
        grown = _while_paused(lambda: admin.create_partitions({"a": NewPartitions(13)},
                                                              raise_errors=False))
        assert [(r.name, r.error_code) for r in grown.results] == [("a", 0)]
        assert grown.throttle_time_ms == 0  # strict: accepted while not negative, no throttle
        refused = admin.create_partitions({"a": NewPartitions(14)}, raise_errors=False)
        assert [(r.name, r.error_code, r.error_message) for r in refused.results] == [
            ("a", THROTTLING_QUOTA_EXCEEDED, MESSAGE)]
        assert refused.throttle_time_ms == 2000  # the bucket at -2
        assert cluster.call(lambda: len(cluster.cluster.image.topics["a"].partitions)) == 13
        counters = cluster.control.quotas()["controller_mutations"]
        assert (counters["mutations"], counters["refused_topics"]) == (15, 3)
    finally:
        admin.close()


def test_librdkafka_is_permissive_and_reports_the_throttle(cluster: MockClusterThread) -> None:
    cluster.control.set_quota({"client-id": "ck-admin"}, {"controller_mutation_rate": 1})
    throttles: list[Any] = []
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers,
                         "client.id": "ck-admin", "throttle_cb": throttles.append})
    futures = admin.create_topics([ConfluentNewTopic("x", 11, 1), ConfluentNewTopic("y", 1, 1),
                                   ConfluentNewTopic("z", 1, 1)], request_timeout=TIMEOUT)
    assert {name: future.result(TIMEOUT) for name, future in futures.items()} == {
        "x": None, "y": None, "z": None}
    assert _topics(cluster) == ["x", "y", "z"]
    deadline = time.monotonic() + TIMEOUT
    while not throttles and time.monotonic() < deadline:  # served by poll
        admin.poll(0.1)
    # CreateTopics v4 is permissive: the bucket ends at -2, two seconds to refill
    assert [t.throttle_time for t in throttles] == [2.0]
    counters = cluster.control.quotas()["controller_mutations"]
    assert (counters["mutations"], counters["refused_topics"],
            counters["throttled_responses"]) == (13, 0, 1)
