"""A Docker engine for the tests: find it, build the images offline, drive Docker Compose.

No image registry is reachable where the suite runs, only package registries, so nothing is
pulled. The images are built the way README "Docker" describes for such machines:
- the base, mockbroker-base:bookworm, comes from Debian's packages (docker/local-base.sh:
  debootstrap, cached as a tarball outside the repository, then `docker import`);
- pip downloads the runtime wheels on the host, for the base's Python (3.11) and this
  machine's architecture, into build/docker-wheels; the builds run with `--network none` and
  install from there with `--no-index`;
- mockbroker:local is docker/Dockerfile; mockbroker-test-client:local is the base plus
  confluent-kafka (tests/docker/client.Dockerfile), the compose file's `app`.
Repeated runs reuse the engine's images and build cache, so only changed layers rebuild.

Compose is the `docker compose` plugin when installed, else Debian's docker-compose 1.29
(which has no `up --wait`: wait_healthy polls the healthcheck instead, as --wait does).
Every command has a timeout; a failure names the command and shows its output.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docker.dockerfile import COMPOSE_FILE, REPO

BASE_IMAGE = "mockbroker-base:bookworm"
IMAGE = "mockbroker:local"  # docker/compose.yaml's image for the mockbroker service
CLIENT_IMAGE = "mockbroker-test-client:local"
BASE_PYTHON = "3.11"  # Debian bookworm's python3, and the Dockerfile's default python:3.11-slim
WHEELS = REPO / "build" / "docker-wheels"
CLIENT_DOCKERFILE = REPO / "tests" / "docker" / "client.Dockerfile"
# the oldest manylinux tags first would do as well: pip takes any listed one a wheel carries
MANYLINUX_TAGS = ("manylinux_2_28", "manylinux_2_17", "manylinux2014", "manylinux_2_5",
                  "manylinux1")
CLIENT_REQUIREMENT = "confluent-kafka>=2.4,<3"

BASE_TIMEOUT = 900.0  # a cold debootstrap: ~40 s here, minutes on a slow mirror
BUILD_TIMEOUT = 600.0
COMMAND_TIMEOUT = 120.0


class CommandFailed(AssertionError):
    pass


def run(argv: list[str], timeout: float = COMMAND_TIMEOUT,
        env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True,
                                timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise CommandFailed(f"{' '.join(argv)} did not finish within {timeout:.0f}s") from exc
    if check and result.returncode != 0:
        raise CommandFailed(f"{' '.join(argv)} exited {result.returncode}:\n"
                            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def require_engine() -> str:
    """The docker CLI, once a Docker engine answers; else the test fails, saying how to fix
    it (a missing engine must not pass as a skip)."""
    docker = shutil.which("docker")
    if docker is None:
        pytest.fail("the docker CLI is not installed: `make sysdeps` installs Debian's "
                    "docker.io", pytrace=False)
    probe = run([docker, "info", "--format", "{{.ServerVersion}}"], timeout=30, check=False)
    if probe.returncode != 0:
        pytest.fail("no Docker engine answers (`docker info` failed: "
                    f"{probe.stderr.strip()[-300:]}). `make test` starts one around the run "
                    "(scripts/dockerd.sh start, as root); by hand: `scripts/dockerd.sh start`, "
                    "or start Docker", pytrace=False)
    return docker


def compose_command() -> list[str] | None:
    """`docker compose` when the Compose plugin is installed, else a standalone
    docker-compose, else None."""
    docker = shutil.which("docker")
    if docker is not None:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True,
                               timeout=30, check=False)
        if probe.returncode == 0:
            return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone is not None else None


def _runtime_requirements() -> list[str]:
    """The dependencies and build requirements of the distributions the image builds (the
    checkout's, and the codec's when protocol/ is its own distribution: README, "Packaging"),
    without those distributions themselves, which the image builds from source."""
    roots = [REPO, *[p.parent for p in [REPO / "protocol" / "pyproject.toml"] if p.is_file()]]
    projects = [tomllib.loads((root / "pyproject.toml").read_text()) for root in roots]
    local = {_normalized(project["project"]["name"]) for project in projects}
    return [requirement for project in projects
            for requirement in [*project["project"]["dependencies"],
                                *project["build-system"]["requires"]]
            if _normalized(re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0]) not in local]


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def gather_wheels() -> None:
    """Wheels for an offline `pip install .` in the image (runtime and build requirements)
    and for the client image, for the base's Python and this machine's architecture."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    arch = platform.machine()
    platforms = [arg for tag in MANYLINUX_TAGS for arg in ("--platform", f"{tag}_{arch}")]
    run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
         "--dest", str(WHEELS), "--only-binary=:all:", "--python-version", BASE_PYTHON,
         "--implementation", "cp", *platforms, *_runtime_requirements(), CLIENT_REQUIREMENT],
        timeout=BUILD_TIMEOUT)


def build_images(docker: str) -> None:
    run([str(REPO / "docker" / "local-base.sh"), BASE_IMAGE], timeout=BASE_TIMEOUT)
    gather_wheels()
    offline = ["--network", "none", "--force-rm", "--build-arg", f"BASE={BASE_IMAGE}"]
    run([docker, "build", "--quiet", *offline, "-f", str(REPO / "docker" / "Dockerfile"),
         "--build-arg", f"WHEELS={WHEELS.relative_to(REPO)}",
         "--build-arg", "PIP_INSTALL_FLAGS=--no-index", "-t", IMAGE, str(REPO)],
        timeout=BUILD_TIMEOUT)
    run([docker, "build", "--quiet", *offline, "-f", str(CLIENT_DOCKERFILE),
         "-t", CLIENT_IMAGE, str(WHEELS)], timeout=BUILD_TIMEOUT)
    # the images these replaced (untagged now), and only those: each source change adds one
    for title in ("mockbroker", "mockbroker-test-client"):
        run([docker, "image", "prune", "--force", "--filter",
             f"label=org.opencontainers.image.title={title}"])


class Compose:
    """docker/compose.yaml (or `file`) under its own project name, with the client image as
    `app`."""

    def __init__(self, command: list[str], docker: str, project: str,
                 file: Path = COMPOSE_FILE) -> None:
        self.argv = [*command, "-p", project, "-f", str(file)]
        self.docker = docker
        self.env = {**os.environ, "MOCKBROKER_APP_IMAGE": CLIENT_IMAGE}

    def __call__(self, *args: str, timeout: float = COMMAND_TIMEOUT,
                 check: bool = True) -> subprocess.CompletedProcess[str]:
        return run([*self.argv, *args], timeout=timeout, env=self.env, check=check)

    def container(self, service: str) -> str:
        """The id of the service's (first) container, running or not."""
        ids = self("ps", "-a", "-q", service).stdout.split()
        assert ids, f"no container for {service}: {self('ps', '-a').stdout}"
        return ids[0]

    def state(self, service: str) -> dict[str, object]:
        out = run([self.docker, "inspect", "--format", "{{json .State}}",
                   self.container(service)]).stdout
        state = json.loads(out)
        assert isinstance(state, dict)
        return state

    def wait_healthy(self, service: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        health = None
        while time.monotonic() < deadline:
            state = self.state(service)
            health = (state.get("Health") or {}).get("Status")  # type: ignore[attr-defined]
            if health == "healthy":
                return
            assert state.get("Running"), f"{service} stopped: {state}\n{self.logs(service)}"
            time.sleep(0.5)
        raise AssertionError(f"{service} not healthy within {timeout:.0f}s (last: {health})\n"
                             f"{self.logs(service)}")

    def wait_exited(self, service: str, timeout: float = 90.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state(service)
            if state.get("Status") == "exited":
                code = state.get("ExitCode")
                assert isinstance(code, int)
                return code
            time.sleep(0.5)
        raise AssertionError(f"{service} still runs after {timeout:.0f}s\n{self.logs(service)}")

    def logs(self, service: str) -> str:
        result = self("logs", "--no-color", service, check=False)
        return (result.stdout + result.stderr)[-4000:]


HOST_PORTS = (19092, 19093, 19094, 8080)  # published by docker/compose.yaml and compose.sasl.yaml


def ports_in_use() -> list[int]:
    busy = []
    for port in HOST_PORTS:
        with socket.socket() as probe:
            # as docker-proxy binds: connections of an earlier run in TIME_WAIT do not count
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("0.0.0.0", port))
            except OSError:
                busy.append(port)
    return busy


def running_stack(project: str, file: Path = COMPOSE_FILE) -> Iterator[Compose]:
    """A module fixture's body: the images built, the compose file up under its own project
    name (what an interrupted run left taken down first), and down again afterwards."""
    docker = require_engine()
    command = compose_command()
    if command is None:
        pytest.fail("Docker Compose is not installed: `make sysdeps` installs docker-compose",
                    pytrace=False)
    build_images(docker)
    compose = Compose(command, docker, project, file)
    compose("down", "-v", "--remove-orphans", "-t", "5")  # what an interrupted run left
    busy = ports_in_use()
    assert not busy, f"host ports {busy} are taken: {file.name} publishes {HOST_PORTS}"
    try:
        compose("up", "-d", timeout=180)
        yield compose
    finally:
        compose("down", "-v", "--remove-orphans", "-t", "10", timeout=180)
