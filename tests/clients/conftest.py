"""Fixtures for the real-client tests: a fresh cluster per test and one adapter per client.

A 3-broker MockClusterThread starts in a few milliseconds, so every test gets its own and
can compare metadata exactly. Cluster state is only touched through `mock.call`, which runs
on the broker's event loop.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator

import pytest

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import (
    AiokafkaClient,
    Client,
    ConfluentClient,
    KafkaPythonClient,
    KcatClient,
    find_kcat,
)

CLIENT_NAMES = ("aiokafka", "kafka-python", "confluent-kafka", "kcat")
_counter = itertools.count()


@pytest.fixture
def mock() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3) as cluster:
        yield cluster


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Unique, legal topic names derived from the test's name."""

    def make(suffix: str = "") -> str:
        base = "".join(c if c.isalnum() or c in "._-" else "-" for c in request.node.name)
        return f"{base[:150]}-{suffix}{next(_counter)}-{time.monotonic_ns() % 100000}"

    return make


@pytest.fixture(scope="session")
def kcat_path() -> str:
    """The kcat (or older kafkacat) executable; a missing one fails, it is not skipped."""
    path = find_kcat()
    if path is None:
        pytest.fail("kcat (or kafkacat) is not installed: `apt-get install -y kcat` "
                    "(`make sysdeps` does it)")
    return path


@pytest.fixture
def client_factory(request: pytest.FixtureRequest) -> Callable[[str], Client]:
    """Adapter by name; asking for kcat requires the kcat_path fixture (fails if absent)."""

    def make(name: str) -> Client:
        if name == "aiokafka":
            return AiokafkaClient()
        if name == "kafka-python":
            return KafkaPythonClient()
        if name == "confluent-kafka":
            return ConfluentClient()
        if name == "kcat":
            return KcatClient(request.getfixturevalue("kcat_path"))
        raise ValueError(f"unknown client {name!r}")

    return make
