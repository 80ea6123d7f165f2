"""docker/compose.sasl.yaml for real: the SASL_SSL stack up, the app in the network logged
in over SASL_SSL, and the host logged in through the published ports with the CA it copied
out of the `tls` volume.

Built as tests/docker/test_compose_stack.py builds (tests/docker/engine.py), under its own
project name; the stack is taken down (`down -v`) in the fixture's finalizer. A missing
engine fails the module, with what to do; it is not skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.docker.engine import Compose, run, running_stack
from tests.docker.test_compose_sasl import SASL_COMPOSE_FILE
from tests.support.kafka_clients import confluent_read_values

pytestmark = [pytest.mark.docker, pytest.mark.clients]

PROJECT = "mockbroker-sasl-tests"
BROKERS = 3
EXAMPLE_OK = "produced=12 consumed=12 committed=[4, 4, 4] OK"
VALUES = [b"from-the-host", "über ✓".encode(), bytes(range(256))]
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def stack() -> Iterator[Compose]:
    yield from running_stack(PROJECT, SASL_COMPOSE_FILE)


def test_the_app_logs_in_over_sasl_ssl_in_the_network(stack: Compose) -> None:
    stack.wait_healthy("mockbroker")
    code = stack.wait_exited("app")
    logs = stack.logs("app")
    assert code == 0, logs
    assert EXAMPLE_OK in logs


def test_the_host_logs_in_with_the_exported_ca(stack: Compose, tmp_path: Path) -> None:
    stack.wait_healthy("mockbroker")
    ca = tmp_path / "ca.pem"
    run([stack.docker, "cp", f"{stack.container('mockbroker')}:/tls/ca.pem", str(ca)])
    assert ca.read_text().startswith("-----BEGIN CERTIFICATE-----")
    config = {"bootstrap.servers": "localhost:19092", "security.protocol": "SASL_SSL",
              "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "host-user",
              "sasl.password": "host-secret", "ssl.ca.location": str(ca)}
    # the host is handed the HOST set's endpoints, which it can reach
    listed = AdminClient(config).list_topics(timeout=TIMEOUT)
    assert {b.id: (b.host, b.port) for b in listed.brokers.values()} == {
        b: ("localhost", 19092 + b) for b in range(BROKERS)}
    producer = Producer(config)
    for value in VALUES:
        producer.produce("from-host", value)
    assert producer.flush(TIMEOUT) == 0
    got = confluent_read_values({**config, "group.id": "host-readers",
                                 "auto.offset.reset": "earliest"}, "from-host", len(VALUES),
                                TIMEOUT)
    assert got == VALUES
