"""Fixtures for the Spark tests: one Spark session per test run, a fresh cluster per test.

The session is local, loopback-only (SPARK_LOCAL_IP=127.0.0.1) and runs its Python workers
with this interpreter (PYSPARK_PYTHON), so they import the same mockbroker and confluent-kafka.
Starting it costs several seconds, so every Spark test shares it; a 3-broker MockClusterThread
starts in milliseconds, so each test gets its own. Java or pyspark missing fails the tests
with the install command; it does not skip them.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"
FORMAT = "mockkafka"
_counter = itertools.count()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    try:
        from mockbroker.spark import JavaMissingError, check_java, local_session
    except ImportError as exc:
        pytest.fail(f"{exc} (`make test` installs it)")
    try:
        check_java()
    except JavaMissingError as exc:
        pytest.fail(str(exc))
    session = local_session("mockbroker-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def fmt(spark: Any) -> str:
    """The data source's format name, registered once on the shared session."""
    from mockbroker.spark import register

    return register(spark, FORMAT)


@pytest.fixture(scope="session")
def pipeline() -> ModuleType:
    """examples/spark_pipeline.py as a module, so the tests run the documented example."""
    spec = importlib.util.spec_from_file_location("spark_pipeline_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def mock() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3) as cluster:
        yield cluster


@pytest.fixture
def topic(mock: MockClusterThread) -> Callable[..., str]:
    """Create a uniquely named topic and return its name."""

    def make(prefix: str, partitions: int = 3) -> str:
        name = f"{prefix}-{next(_counter)}"
        mock.control.create_topic(name, partitions=partitions)
        return name

    return make


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]],
            **conf: Any) -> None:
    """Produce (key, value) pairs with an idempotent producer; every one acknowledged."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "linger.ms": 5, **conf})
    errors: list[Any] = []
    for key, value in records:
        producer.produce(topic, key=key, value=value,
                         on_delivery=lambda err, _m: err is not None and errors.append(err))
        producer.poll(0)
    assert producer.flush(30) == 0, "records not delivered within 30 s"
    assert not errors, errors


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Each partition's high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "end-offsets"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)}
    finally:
        consumer.close()
