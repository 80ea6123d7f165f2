"""The two targets of the conformance corpus, and the report written when it all ran.

mockbroker is configured as the session's real Kafka is (tests/conftest.py, real_kafka):
one broker, PLAINTEXT plus SASL_PLAINTEXT with PLAIN only, the same users and super users,
the authorizer on, five partitions for the offsets and transaction topics.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mockbroker.embedded import MockClusterThread
from tests.conformance.harness import Target
from tests.conformance.registry import CASES
from tests.conformance.report import RESULTS, write_report
from tests.support.real_kafka import SESSION_SASL_USERS, SESSION_SUPER_USERS, RealKafka

REPORT = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


@pytest.fixture(scope="session")
def conformance_mockbroker() -> Iterator[MockClusterThread]:
    with MockClusterThread(
            brokers=1, listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            sasl_users=dict(SESSION_SASL_USERS), sasl_mechanisms="PLAIN", authorizer=True,
            super_users=SESSION_SUPER_USERS, offsets_topic_partitions=5,
            transaction_topic_partitions=5) as mock:
        yield mock


@pytest.fixture(scope="session")
def conformance_targets(conformance_mockbroker: MockClusterThread,
                        real_kafka: RealKafka) -> tuple[Target, Target]:
    mock = conformance_mockbroker
    sasl = int(mock.listener_bootstrap("SASL_PLAINTEXT").split(",")[0].rsplit(":", 1)[1])
    ours = Target("mockbroker", mock.cluster.brokers[0].port, sasl,
                  tuple(sorted(mock.cluster.brokers)))
    node = next(iter(real_kafka.members.values()))
    theirs = Target("kafka", node.port, node.sasl_port, tuple(real_kafka.members))
    return ours, theirs


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """docs/conformance.md from this run, when every case of the corpus ran."""
    if RESULTS and set(RESULTS) == set(CASES):
        write_report(REPORT)
