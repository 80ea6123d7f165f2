"""Shared fixtures: an in-process cluster served from a background thread.

The whole suite encodes strictly (kafka_protocol_codec.strict): a response, request or
metadata record with a key its schema does not know fails instead of silently sending a
default. The environment variable makes subprocesses (the CLI started by tests) strict too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from kafka_protocol_codec import set_strict_encoding
from kafka_protocol_codec.strict import ENV_VAR

from mockbroker.embedded import MockClusterThread
from tests.support import compat
from tests.support.real_kafka import SESSION_SASL_USERS, SESSION_SUPER_USERS, RealKafka

os.environ[ENV_VAR] = "1"
set_strict_encoding(True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--compat-report", default=None, metavar="FILE",
                     help="write the client compatibility table (tests/support/compat.py)")


def pytest_configure(config: pytest.Config) -> None:
    compat.register(config, config.getoption("--compat-report"))


@pytest.fixture
def cluster_thread() -> Iterator[MockClusterThread]:
    """A fresh 3-broker cluster on free loopback ports, served from a background thread."""
    with MockClusterThread(brokers=3) as mock:
        yield mock


@pytest.fixture(scope="session")
def real_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    """One real Apache Kafka (a single KRaft broker+controller from build/jvm, `make jvm`)
    for the whole session, started when a test first asks for it, stopped by PID.

    PLAINTEXT (principal ANONYMOUS, a super user: clients there may do anything) and
    SASL_PLAINTEXT with PLAIN users `admin` (super user) and `alice` (only what ACLs grant),
    under Kafka's StandardAuthorizer: tests/conformance compares ACL decisions with it."""
    with RealKafka(tmp_path_factory.mktemp("real-kafka"), nodes=1,
                   sasl_users=dict(SESSION_SASL_USERS),
                   super_users=SESSION_SUPER_USERS) as kafka:
        yield kafka
