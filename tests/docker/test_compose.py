"""docker/compose.yaml: its structure (PyYAML, always) and `docker compose config`.

The structure test checks what makes the compose file work: the broker's command parses
with mockbroker's own CLI and agrees with the image's CMD, each listener set advertises
what its clients can reach (the service name inside the network, localhost on the
published host ports), the healthcheck asks the control API's /health, and the example app
waits for it. `docker compose config` (the Compose plugin, or a standalone docker-compose)
then validates the file against the Compose schema; without Docker Compose on the machine
that one test is skipped, with the reason.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from mockbroker.cli import build_parser
from tests.docker.dockerfile import COMPOSE_FILE, REPO, parse
from tests.docker.engine import compose_command

BROKERS = 3


def _compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(data, dict)
    return data


def _port_range(spec: str) -> list[tuple[int, int]]:
    """'19092-19094:19092-19094' -> [(19092, 19092), ...] (host, container)."""
    host, _, container = str(spec).rpartition(":")
    def expand(text: str) -> list[int]:
        lo, _, hi = text.partition("-")
        return list(range(int(lo), int(hi or lo) + 1))
    hosts, containers = expand(host), expand(container)
    assert len(hosts) == len(containers), spec
    return list(zip(hosts, containers, strict=True))


def test_services_listeners_and_ports() -> None:
    services = _compose()["services"]
    assert set(services) == {"mockbroker", "app"}
    broker = services["mockbroker"]
    assert broker["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    assert (COMPOSE_FILE.parent / broker["build"]["context"] / "docker" / "Dockerfile").is_file()

    command = broker["command"]
    assert command == parse().exec_form("CMD"), "compose's command drifted from the image's CMD"
    args = build_parser().parse_args(command)
    assert args.brokers == BROKERS
    # first listener set: the compose network, advertised under the service name
    assert (args.host, args.port, args.advertised_host) == ("0.0.0.0", 9092, "mockbroker")
    # extra listener set: the host, advertised as localhost on the published ports
    [external] = args.extra_listeners
    assert (external.host, external.port, external.advertised_host) == \
        ("0.0.0.0", 19092, "localhost")
    assert external.advertised_port in (None, external.port)
    published = dict(pair for spec in broker["ports"] for pair in _port_range(spec))
    for broker_id in range(BROKERS):
        port = external.port + broker_id
        assert published.get(port) == port, f"host port {port} must map to container {port}"
    assert (args.control_host, args.control_port) == ("0.0.0.0", 8080)
    assert published.get(8080) == 8080
    internal_ports = {args.port + b for b in range(BROKERS)}
    assert not internal_ports & set(published), "the network listener is not for the host"


def test_healthcheck_and_startup_order() -> None:
    services = _compose()["services"]
    check = services["mockbroker"]["healthcheck"]
    _, image_check = parse().healthcheck
    assert check["test"] == ["CMD", *image_check], "compose and image healthchecks differ"
    assert "http://127.0.0.1:8080/health" in " ".join(check["test"])
    for key in ("interval", "timeout", "retries"):
        assert key in check
    app = services["app"]
    assert app["depends_on"] == {"mockbroker": {"condition": "service_healthy"}}


def test_example_app_uses_the_network_listener() -> None:
    app = _compose()["services"]["app"]
    env = app["environment"]
    assert env["BOOTSTRAP_SERVERS"] == ",".join(f"mockbroker:{9092 + b}" for b in range(BROKERS))
    assert env["CONTROL_URL"] == "http://mockbroker:8080"
    [volume] = app["volumes"]
    source, target = volume.split(":")[:2]
    assert (COMPOSE_FILE.parent / source).is_file()
    assert target in " ".join(app["command"])


def test_docker_compose_config() -> None:
    compose = compose_command()
    if compose is None:
        pytest.skip("Docker Compose is not installed (neither the `docker compose` plugin nor "
                    "docker-compose): the schema check needs it; the structure tests above "
                    "still ran")
    result = subprocess.run([*compose, "-f", str(COMPOSE_FILE), "config"], cwd=REPO,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    services = resolved["services"]
    assert set(services) == {"mockbroker", "app"}
    ports = {(int(p["published"]), int(p["target"])) for p in services["mockbroker"]["ports"]}
    assert {(p, p) for p in (19092, 19093, 19094, 8080)} <= ports
    assert services["app"]["depends_on"]["mockbroker"]["condition"] == "service_healthy"
