"""The image's command, run without Docker: clients reach the brokers through both listeners.

This needs no Docker engine (tests/docker/test_compose_stack.py runs the real image): it does
what the container would, quicker and with every port free: it reads the
Dockerfile's ENTRYPOINT, CMD and ENV, substitutes loopback addresses and free ports for the
container's (the network listener is advertised as 127.0.0.1, the host listener as
localhost, standing in for `mockbroker` and the host's `localhost`), and runs that command
as a subprocess until its READY line. Then:
- the image's HEALTHCHECK command passes against the control port;
- Metadata through each listener names that listener's endpoints;
- confluent-kafka produces through one listener and a consumer group reads the exact
  messages (keys, values, headers) back through the other, both ways, and commits;
- docker/example_app.py (the compose file's app) passes through the host listener;
- SIGTERM (docker stop) shuts it down with exit code 0.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docker.dockerfile import COMPOSE_FILE, REPO, parse
from tests.docker.messages import consume_in_group, expected, produce
from tests.support.cli import await_ready, ready_fields, stop

pytestmark = pytest.mark.clients

BROKERS = 3
READY_TIMEOUT = 15.0


def free_port_range(count: int, attempts: int = 50) -> int:
    """A base port with `count` consecutive free ports on 127.0.0.1."""
    for _ in range(attempts):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count > 65535:
            continue
        held: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise RuntimeError(f"no {count} consecutive free ports found")


@dataclass
class Running:
    internal: str  # bootstrap of the network listener (in the image: mockbroker:9092,...)
    external: str  # bootstrap of the host listener (in the image: localhost:19092,...)
    internal_ports: list[int]
    external_ports: list[int]
    control_url: str
    control_port: int
    process: subprocess.Popen[str]


def substitute(command: list[str], port: int, ext_port: int, control_port: int) -> list[str]:
    """The image's command with loopback and free ports for the container's addresses."""
    replacements = {
        "--host": "127.0.0.1", "--port": str(port), "--advertised-host": "127.0.0.1",
        "--extra-listeners": f"127.0.0.1:{ext_port}/localhost:{ext_port}",
        "--control-host": "127.0.0.1", "--control-port": str(control_port),
    }
    out = list(command)
    seen = set()
    for i, arg in enumerate(out[:-1]):
        if arg in replacements:
            out[i + 1] = replacements[arg]
            seen.add(arg)
    assert seen == set(replacements), f"the image's command lacks {set(replacements) - seen}"
    if out[0] == "mockbroker":  # the console script, as pip installed it in the image
        script = Path(sys.executable).with_name("mockbroker")
        out[:1] = [str(script)] if script.exists() else [sys.executable, "-m", "mockbroker"]
    return out


@pytest.fixture(scope="module")
def running() -> Iterator[Running]:
    dockerfile = parse()
    port, ext_port, control_port = (free_port_range(BROKERS), free_port_range(BROKERS),
                                    free_port_range(1))
    argv = substitute(dockerfile.command, port, ext_port, control_port)
    # the image's PATH names its own virtual environment, which the host does not have
    env = {**os.environ, **{k: v for k, v in dockerfile.env.items() if k != "PATH"}}
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, cwd=REPO)
    try:
        ready = await_ready(process, READY_TIMEOUT)
        assert ready is not None, f"no READY line; stderr: {_stderr(process)}"
        fields = ready_fields(ready)
        yield Running(
            internal=fields["bootstrap"],
            external=",".join(f"localhost:{ext_port + b}" for b in range(BROKERS)),
            internal_ports=[port + b for b in range(BROKERS)],
            external_ports=[ext_port + b for b in range(BROKERS)],
            control_url=fields["control"], control_port=control_port, process=process)
    finally:
        if process.poll() is None:
            stop(process)


def _stderr(process: subprocess.Popen[str]) -> str:
    if process.poll() is None:
        process.kill()
    _, err = process.communicate(timeout=10)
    return err


def test_dockerfile_shape() -> None:
    dockerfile = parse()
    # the base is a build argument (a local image where no registry is reachable); its
    # default is an official slim Python image
    assert dockerfile.all("FROM")[0].split()[0] == "${BASE}"
    base_args = [a for a in dockerfile.all("ARG") if a.startswith("BASE=")]
    assert base_args, "the Dockerfile declares no ARG BASE"
    base = base_args[0].removeprefix("BASE=")
    assert base.startswith("python:3.1") and base.endswith("-slim"), base
    user = dockerfile.last("USER").split(":")[0]
    assert user not in ("root", "0"), "the image must not run as root"
    assert dockerfile.command[0] == "mockbroker"
    options, check = dockerfile.healthcheck
    assert check[0] == "python" and "/health" in " ".join(check)
    assert {"interval", "timeout", "retries"} <= set(options)
    assert {9092, 9093, 9094, 19092, 19093, 19094, 8080} <= dockerfile.exposed


def test_ready_line_names_the_network_listener(running: Running) -> None:
    assert running.internal == ",".join(f"127.0.0.1:{p}" for p in running.internal_ports)
    assert running.control_url == f"http://127.0.0.1:{running.control_port}"


def test_healthcheck_command_passes(running: Running) -> None:
    _, check = parse().healthcheck
    argv = [sys.executable if arg == "python" else
            arg.replace("127.0.0.1:8080", f"127.0.0.1:{running.control_port}") for arg in check]
    assert argv != check
    result = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    assert result.returncode == 0, result.stderr


def test_each_listener_advertises_its_own_endpoints(running: Running) -> None:
    from tests.support.kafka_clients import ConfluentClient

    client = ConfluentClient()
    inside = client.metadata(running.internal)
    outside = client.metadata(running.external)
    assert inside.brokers == {b: ("127.0.0.1", p) for b, p in enumerate(running.internal_ports)}
    assert outside.brokers == {b: ("localhost", p) for b, p in enumerate(running.external_ports)}
    assert inside.cluster_id == outside.cluster_id


@pytest.mark.parametrize("direction", ["host-to-network", "network-to-host"])
def test_produce_on_one_listener_consume_on_the_other(running: Running, direction: str) -> None:
    from tests.support.kafka_clients import ConfluentClient

    source, sink = (running.external, running.internal) if direction == "host-to-network" \
        else (running.internal, running.external)
    topic = f"image-{direction}"
    ConfluentClient().create_topic(source, topic, 2)
    produce(source, topic)
    got, committed = consume_in_group(sink, topic, f"group-{direction}")
    assert sorted(got, key=lambda m: m[:2]) == expected()
    assert committed == [3, 3]


def test_example_app_through_the_host_listener(running: Running) -> None:
    env = {**os.environ, "BOOTSTRAP_SERVERS": running.external,
           "CONTROL_URL": running.control_url, "TOPIC": "example-app", "COUNT": "9"}
    result = subprocess.run([sys.executable, str(COMPOSE_FILE.parent / "example_app.py")],
                            env=env, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "produced=9 consumed=9 committed=[3, 3, 3] OK" in result.stdout


def test_sigterm_stops_cleanly(running: Running) -> None:
    """Last (pytest keeps file order): `docker stop` sends SIGTERM to the entrypoint."""
    running.process.send_signal(signal.SIGTERM)
    assert running.process.wait(timeout=10) == 0
