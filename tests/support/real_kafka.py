"""Real Apache Kafka for the test suite: KRaft nodes from Maven Central, started and stopped
by PID.

Theory of operation. `make jvm` resolves tests/jvm/pom.xml (the broker `kafka_2.13`, the
Java client, Kafka Streams and Kafka's tools, at the version the pom pins) into the class
path directory build/jvm/lib. `RealKafka` runs a cluster of N combined broker+controller
nodes (`process.roles=broker,controller`, every node a voter of the KRaft quorum) on
loopback and free ports, each node a `java ... kafka.Kafka server.properties` process with
its own directory (formatted once with Kafka's storage tool: `kafka.tools.StorageTool
format`), its log in `<dir>/kafka.log`. A node can be killed (SIGKILL), stopped (SIGTERM,
Kafka's controlled shutdown) and started again on its directory; with three nodes the
quorum survives one node down. Everything started here is stopped by the PID it was given;
nothing else is touched.

Readiness is Kafka's own line ("Kafka Server started") in a node's log, bounded by
`START_TIMEOUT`. On 2 busy cores a node takes 5-20 s to start and ~300 MB of memory.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JVM_LIB = REPO / "build" / "jvm" / "lib"
JVM_CLASSES = REPO / "build" / "jvm" / "classes"  # the suite's Java programs (tests/jvm/src)
LOG4J_CONFIG = REPO / "tests" / "jvm" / "log4j2.properties"
START_TIMEOUT = 120.0  # seconds for a node to log that it started
STOP_TIMEOUT = 60.0  # seconds for a controlled shutdown before SIGKILL
READY_LINE = "Kafka Server started"
HEAP = "384m"
# the session's real Kafka (tests/conftest.py): SASL PLAIN users and super users
SESSION_SASL_USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SESSION_SUPER_USERS = "User:ANONYMOUS;User:admin"


class RealKafkaError(RuntimeError):
    """Real Kafka could not be set up or started (the message says why)."""


def class_path() -> str:
    """build/jvm/lib/* and build/jvm/classes when `make jvm` has filled them, else a clear
    error."""
    if not (JVM_LIB / f"kafka_2.13-{kafka_version()}.jar").is_file():
        raise RealKafkaError(
            f"real Kafka's jars are not in {JVM_LIB}: run `make jvm` (resolves "
            f"tests/jvm/pom.xml from Maven Central)")
    return f"{JVM_CLASSES}:{JVM_LIB}/*"


def kafka_version() -> str:
    """The Kafka version tests/jvm/pom.xml pins."""
    text = (REPO / "tests" / "jvm" / "pom.xml").read_text()
    start = text.index("<kafka.version>") + len("<kafka.version>")
    return text[start:text.index("</kafka.version>", start)]


def java_command(main_class: str, *args: str, heap: str = HEAP) -> list[str]:
    """A JVM running `main_class` of the real-Kafka class path."""
    return ["java", f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
            "-cp", class_path(), main_class, *args]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class KafkaNode:
    node_id: int
    port: int
    controller_port: int
    directory: Path
    sasl_port: int = 0  # SASL_PLAINTEXT (PLAIN) listener, when the cluster has SASL users
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.directory / "kafka.log"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class RealKafka:
    """A KRaft cluster of `nodes` combined broker+controller nodes under `workdir`."""

    workdir: Path
    nodes: int = 1
    configs: dict[str, str] = field(default_factory=dict)
    # PLAIN users of a SASL_PLAINTEXT listener beside PLAINTEXT (none: no such listener)
    sasl_users: dict[str, str] = field(default_factory=dict)
    # Kafka's StandardAuthorizer with these super users ("User:a;User:b"); None: no authorizer
    super_users: str | None = None
    cluster_id: str = field(default_factory=lambda: _cluster_id())
    members: dict[int, KafkaNode] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.members.values())

    def start(self) -> RealKafka:
        """Write each node's configuration, format its directory, start every node and
        wait until each has started."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        for node_id in range(1, self.nodes + 1):
            directory = self.workdir / f"node-{node_id}"
            (directory / "data").mkdir(parents=True, exist_ok=True)
            self.members[node_id] = KafkaNode(node_id, free_port(), free_port(), directory,
                                              free_port() if self.sasl_users else 0)
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}"
                          for n in self.members.values())
        for node in self.members.values():
            node.config_path.write_text(self._server_properties(node, voters))
        formats = [subprocess.Popen(
            java_command("kafka.tools.StorageTool", "format", "-t", self.cluster_id,
                         "-c", str(node.config_path), heap="256m"),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for node in self.members.values()]
        for proc in formats:
            out, _ = proc.communicate(timeout=START_TIMEOUT)
            if proc.returncode != 0:
                raise RealKafkaError(f"kafka-storage format failed: {out.decode()[-2000:]}")
        try:
            for node in self.members.values():
                self._launch(node)
            for node in self.members.values():
                self._wait_started(node)
        except BaseException:
            self.close()
            raise
        return self

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The SASL_PLAINTEXT listeners (PLAIN users `sasl_users`)."""
        return ",".join(f"127.0.0.1:{n.sasl_port}" for n in self.members.values())

    def _server_properties(self, node: KafkaNode, voters: str) -> str:
        replication = str(min(3, self.nodes))
        listeners = (f"PLAINTEXT://127.0.0.1:{node.port},"
                     f"CONTROLLER://127.0.0.1:{node.controller_port}")
        advertised = f"PLAINTEXT://127.0.0.1:{node.port}"
        protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        security: dict[str, str] = {}
        if self.sasl_users:
            listeners += f",SASL_PLAINTEXT://127.0.0.1:{node.sasl_port}"
            advertised += f",SASL_PLAINTEXT://127.0.0.1:{node.sasl_port}"
            protocols += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
            users = " ".join(f'user_{name}="{password}"'
                             for name, password in self.sasl_users.items())
            security["sasl.enabled.mechanisms"] = "PLAIN"
            security["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};")
        if self.super_users is not None:
            security["authorizer.class.name"] = (
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
            security["super.users"] = self.super_users
        settings = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": listeners,
            "advertised.listeners": advertised,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": protocols,
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(node.directory / "data"),
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": str(min(2, self.nodes)),
            "transaction.state.log.num.partitions": "5",
            "group.initial.rebalance.delay.ms": "0",
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": str(min(2, self.nodes)),
            **security,
            **self.configs,
        }
        return "".join(f"{key}={value}\n" for key, value in settings.items())

    def _launch(self, node: KafkaNode) -> None:
        node.starts += 1
        with node.log_path.open("ab") as log:
            log.write(f"\n--- start {node.starts} ---\n".encode())
            log.flush()
            node.process = subprocess.Popen(
                java_command("kafka.Kafka", str(node.config_path)), stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)

    def _wait_started(self, node: KafkaNode) -> None:
        marker = f"--- start {node.starts} ---"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            text = node.log_path.read_text(errors="replace")
            if READY_LINE in text[text.rfind(marker):]:
                return
            if not node.running:
                raise RealKafkaError(f"Kafka node {node.node_id} exited while starting: "
                                     f"{text[-3000:]}")
            time.sleep(0.2)
        raise RealKafkaError(f"Kafka node {node.node_id} did not start within "
                             f"{START_TIMEOUT:.0f} s (see {node.log_path})")

    # -- faults -----------------------------------------------------------------------------

    def kill(self, node_id: int) -> None:
        """SIGKILL the node (a crash: no controlled shutdown)."""
        node = self.members[node_id]
        if node.process is not None and node.running:
            node.process.send_signal(signal.SIGKILL)
            node.process.wait(STOP_TIMEOUT)

    def stop(self, node_id: int) -> None:
        """SIGTERM: Kafka's controlled shutdown moves its leadership first."""
        node = self.members[node_id]
        if node.process is None or not node.running:
            return
        node.process.send_signal(signal.SIGTERM)
        try:
            node.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            node.process.send_signal(signal.SIGKILL)
            node.process.wait(STOP_TIMEOUT)

    def start_node(self, node_id: int) -> None:
        """Start a stopped or killed node again on its directory and wait until it runs."""
        node = self.members[node_id]
        self._launch(node)
        self._wait_started(node)

    def restart(self, node_id: int, *, crash: bool = True) -> None:
        """Kill (or stop) the node and start it again on its directory."""
        (self.kill if crash else self.stop)(node_id)
        self.start_node(node_id)

    def close(self) -> None:
        for node in self.members.values():
            if node.process is not None and node.running:
                node.process.send_signal(signal.SIGKILL)
                node.process.wait(STOP_TIMEOUT)

    def __enter__(self) -> RealKafka:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64 without padding and without
    "-", as Kafka's Uuid.randomUuid draws them (kafka-storage format would take an id that
    starts with "-" for an option)."""
    import base64

    for _ in range(1000):  # 29 % of draws contain "-": a few tries at most
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if "-" not in cluster_id:
            return cluster_id
    raise RealKafkaError("no usable random cluster id in 1000 draws")


def memory_rss_kb(pid: int) -> int:
    """A process's resident set size in KiB (from /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


__all__ = ["JVM_CLASSES", "JVM_LIB", "SESSION_SASL_USERS", "SESSION_SUPER_USERS", "KafkaNode",
           "RealKafka", "RealKafkaError", "class_path", "free_port", "java_command",
           "kafka_version", "memory_rss_kb"]
