"""docker/compose.sasl.yaml, the SASL_SSL fixture: its structure, `docker compose config`,
and its broker command run without Docker.

Like tests/docker/test_image_command.py, the command runs as a subprocess with loopback
addresses and free ports standing in for the container's (the network listener set is
advertised as 127.0.0.1 for `mockbroker`, the host's as localhost) and a temporary
directory for the `/tls` volume. Then docker/example_app.py (the compose file's app) logs
in as each user through each listener set with the CA that --ssl-export-dir exported, and
its exact round trip must pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mockbroker.cli import build_parser
from mockbroker.server.listeners import parse_listener_bindings, parse_protocol_map
from tests.docker.dockerfile import REPO, parse
from tests.docker.engine import compose_command
from tests.docker.test_image_command import free_port_range
from tests.support.cli import await_ready, ready_fields, stop

pytestmark = pytest.mark.clients

SASL_COMPOSE_FILE = REPO / "docker" / "compose.sasl.yaml"
EXAMPLE_APP = REPO / "docker" / "example_app.py"
BROKERS = 3
READY_TIMEOUT = 15.0


def _services() -> dict[str, Any]:
    data = yaml.safe_load(SASL_COMPOSE_FILE.read_text())
    assert isinstance(data, dict) and "tls" in data["volumes"]
    services: dict[str, Any] = data["services"]
    return services


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_listeners_users_and_the_exported_ca() -> None:
    services = _services()
    assert set(services) == {"mockbroker", "app"}
    broker, app = services["mockbroker"], services["app"]
    args = build_parser().parse_args(broker["command"])
    assert args.brokers == BROKERS
    assert parse_listener_bindings(args.listeners) == [("CLIENT", "0.0.0.0", 9092),
                                                      ("HOST", "0.0.0.0", 19092)]
    assert args.advertised_listeners == "CLIENT://mockbroker,HOST://localhost"
    assert parse_protocol_map(args.listener_security_protocol_map) == {
        "CLIENT": "SASL_SSL", "HOST": "SASL_SSL"}
    # the host's published ports are the HOST set's, the same numbers inside
    published = {str(p) for p in broker["ports"]}
    assert published == {"19092-19094:19092-19094", "8080:8080"}
    # the CA goes to the volume, which the app mounts and reads
    assert args.ssl_export_dir == "/tls" and "tls:/tls" in broker["volumes"]
    assert "tls:/tls:ro" in app["volumes"]
    env = app["environment"]
    assert env["SSL_CA_LOCATION"] == "/tls/ca.pem"
    assert env["BOOTSTRAP_SERVERS"] == ",".join(f"mockbroker:{9092 + b}" for b in range(BROKERS))
    assert (env["SECURITY_PROTOCOL"], env["SASL_MECHANISM"]) == ("SASL_SSL", "SCRAM-SHA-512")
    assert args.sasl_users[env["SASL_USERNAME"]] == env["SASL_PASSWORD"]
    assert "host-user" in args.sasl_users
    assert app["depends_on"] == {"mockbroker": {"condition": "service_healthy"}}
    _, image_check = parse().healthcheck
    assert broker["healthcheck"]["test"] == ["CMD", *image_check]


def test_the_image_gives_the_volume_a_writable_tls_directory() -> None:
    """A new named volume takes the owner of the image's directory it is mounted on."""
    runs = " ".join(parse().all("RUN"))
    assert "install -d -o mockbroker -g mockbroker " in runs
    created = runs.split("install -d -o mockbroker -g mockbroker ", 1)[1].split()
    assert "/tls" in created


def test_docker_compose_config() -> None:
    compose = compose_command()
    if compose is None:
        pytest.skip("Docker Compose is not installed (neither the `docker compose` plugin nor "
                    "docker-compose)")
    result = subprocess.run([*compose, "-f", str(SASL_COMPOSE_FILE), "config"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "--ssl-export-dir" in result.stdout


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The compose file's broker command on loopback; answers the READY line's fields and
    where the CA was exported."""
    command = list(_services()["mockbroker"]["command"])
    client, host, control = (free_port_range(BROKERS), free_port_range(BROKERS),
                             free_port_range(1))
    tls = tmp_path_factory.mktemp("volume") / "tls"
    replacements = {
        "--listeners": f"CLIENT://127.0.0.1:{client},HOST://127.0.0.1:{host}",
        "--advertised-listeners": "CLIENT://127.0.0.1,HOST://localhost",
        "--ssl-export-dir": str(tls), "--control-host": "127.0.0.1",
        "--control-port": str(control)}
    for name, value in replacements.items():
        command[command.index(name) + 1] = value
    process = subprocess.Popen([sys.executable, "-m", "mockbroker", *command],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=REPO, env=dict(os.environ))
    try:
        ready = await_ready(process, READY_TIMEOUT)
        assert ready is not None, "no READY line"
        yield {**ready_fields(ready), "exported_ca": str(tls / "ca.pem")}
    finally:
        stop(process)


def test_exported_ca_is_the_generated_one(running: dict[str, str]) -> None:
    assert Path(running["exported_ca"]).read_bytes() == Path(running["ssl-ca"]).read_bytes()


def _example_app(running: dict[str, str], listener: str, topic: str,
                 **login: str) -> subprocess.CompletedProcess[str]:
    protocol, _, bootstrap = running[f"listener.{listener}"].partition("://")
    env = {**os.environ, "BOOTSTRAP_SERVERS": bootstrap, "CONTROL_URL": running["control"],
           "TOPIC": topic, "COUNT": "6", "SECURITY_PROTOCOL": protocol,
           "SSL_CA_LOCATION": running["exported_ca"], **login}
    return subprocess.run([sys.executable, str(EXAMPLE_APP)], env=env, capture_output=True,
                          text=True, timeout=90, check=False)


@pytest.mark.parametrize(("listener", "user", "password", "mechanism"), [
    ("CLIENT", "app", "app-secret", "SCRAM-SHA-512"),
    ("HOST", "host-user", "host-secret", "SCRAM-SHA-256"),
    ("HOST", "app", "app-secret", "PLAIN")])
def test_example_app_logs_in_over_sasl_ssl(running: dict[str, str], listener: str, user: str,
                                           password: str, mechanism: str) -> None:
    assert running[f"listener.{listener}"].startswith("SASL_SSL://")
    result = _example_app(running, listener, f"sasl-{listener}-{user}-{mechanism}".lower(),
                          SASL_MECHANISM=mechanism, SASL_USERNAME=user,
                          SASL_PASSWORD=password)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "produced=6 consumed=6 committed=[2, 2, 2] OK" in result.stdout
