"""Kafka's own command-line tools (kafka-topics, kafka-configs, ...) run from the suite.

Theory of operation. `ToolSession` starts one JVM running the suite's
`io.mockbroker.jvmtools.ToolRunner` (tests/jvm/src, compiled by `make jvm`) on real Kafka's
class path, and sends it one tool invocation at a time: the tool's main class (`TOOLS`, the
class each kafka-*.sh script of Kafka's distribution runs), its arguments and what it reads
from standard input. The runner answers with the tool's exit code and its captured standard
output and error, so a hundred tool calls cost one JVM start. Every answer is awaited with a
deadline; the JVM is stopped by its PID when the session closes.

`normalize` rewrites what legitimately differs between two clusters (ports, cluster, topic,
member and producer ids, node ids, timestamps) into fixed placeholders, so that the output of
the same steps against mockbroker and against real Kafka can be compared as text.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import time
from dataclasses import dataclass, field

from tests.support.real_kafka import REPO, class_path

TOOLS_LOG4J = REPO / "tests" / "jvm" / "log4j2-tools.properties"
RUNNER_CLASS = "io.mockbroker.jvmtools.ToolRunner"
CALL_TIMEOUT = 90.0  # seconds for one tool call to answer

# tool name (its kafka-*.sh script without the prefix and suffix) -> main class
TOOLS = {
    "topics": "org.apache.kafka.tools.TopicCommand",
    "configs": "org.apache.kafka.tools.ConfigCommand",
    "acls": "org.apache.kafka.tools.AclCommand",
    "consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "transactions": "org.apache.kafka.tools.TransactionsCommand",
    "metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "features": "org.apache.kafka.tools.FeatureCommand",
    "reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
}


class ToolRunnerError(RuntimeError):
    """The runner JVM died or did not answer in time."""


@dataclass(frozen=True)
class ToolResult:
    """One tool call: its exit code, standard output and standard error."""

    exit: int
    stdout: str
    stderr: str
    millis: int = 0

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


@dataclass
class ToolSession:
    """One ToolRunner JVM; `run` calls a tool in it and returns its result."""

    bootstrap_servers: str
    # placeholder -> value, replaced in every argument besides {boot}
    placeholders: dict[str, str] = field(default_factory=dict)
    results: list[tuple[str, tuple[str, ...], ToolResult]] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None
    _buffer: bytes = b""

    def start(self) -> ToolSession:
        self.process = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={TOOLS_LOG4J}",
             "-cp", class_path(), RUNNER_CLASS],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return self

    def run(self, tool: str, *args: str, stdin: str | None = None,
            timeout: float = CALL_TIMEOUT) -> ToolResult:
        """Run kafka-<tool> with `args` (`{boot}` in an argument is replaced by the
        bootstrap servers, each of `placeholders` by its value) and wait for its result."""
        process = self.process
        if process is None or process.stdin is None or process.stdout is None:
            raise ToolRunnerError("the runner is not started")
        values = {"{boot}": self.bootstrap_servers, **self.placeholders}
        argv = tuple(_substitute(arg, values) for arg in args)
        request = {"main": TOOLS[tool], "args": list(argv), "stdin": stdin}
        process.stdin.write(json.dumps(request).encode() + b"\n")
        process.stdin.flush()
        answer = json.loads(self._read_line(process, timeout))
        result = ToolResult(answer["exit"], answer["stdout"], answer["stderr"],
                            answer["millis"])
        self.results.append((tool, argv, result))
        return result

    def _read_line(self, process: subprocess.Popen[bytes], timeout: float) -> bytes:
        assert process.stdout is not None
        deadline = time.monotonic() + timeout
        fd = process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ToolRunnerError(f"no answer from the tool runner within {timeout} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise ToolRunnerError(f"the tool runner exited ({process.poll()})")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def close(self) -> None:
        process = self.process
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(15)

    def __enter__(self) -> ToolSession:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _substitute(arg: str, values: dict[str, str]) -> str:
    for placeholder, value in values.items():
        arg = arg.replace(placeholder, value)
    return arg


# -- normalisation -----------------------------------------------------------------------

_UUID_BASE64 = re.compile(r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_-]{22}(?![A-Za-z0-9_.-])")
_UUID_TEXT = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_CAMEL_WORD = re.compile(r"(?:[A-Z][a-z]+)+")
_ADDRESS = re.compile(r"(?:127\.0\.0\.1|localhost):\d+")
_STACK_FRAME = re.compile(r"^\s+at .*\n|^\s+\.\.\. \d+ more\n", re.MULTILINE)
_TIMESTAMP_MS = re.compile(r"(?<!\d)1[6-9]\d{11}(?!\d)")  # epoch milliseconds 2020-2033
# a node id where the tools print one: partition lists, coordinators, broker lists, JSON
_NODE_CONTEXTS = (
    re.compile(r"(?P<pre>\b(?:Leader|Replicas|Isr|Elr|LastKnownElr): )(?P<ids>[\d,]+)"),
    re.compile(r"(?P<pre>\()(?P<ids>\d+)(?=\))"),  # a coordinator: "host:port  (1)"
    re.compile(r"(?P<pre>\bbrokers? |--broker-id |--entity-name )(?P<ids>\d+)\b"),
    re.compile(r'(?P<pre>"(?:broker|replicas)":\[?)(?P<ids>[\d,]+)'),
)
# columns of the tools' tab-separated tables that hold node ids or times
_NODE_COLUMNS = {"Coordinator", "CoordinatorId", "NodeId"}
_PRODUCER_COLUMNS = {"ProducerId"}  # allocated cluster-wide: other tests draw ids too
_TIME_COLUMNS = {"LastTimestamp", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                 "LastFetchTimestamp", "LastCaughtUpTimestamp", "Duration(min)"}


_CONTROLLER = re.compile(r"(?P<pre>\bcontroller )(?P<id>\d+)\b")


def normalize(text: str, *, node_id: int, controller_id: int,
              log_dir: str | None = None) -> str:
    """`text` with what differs between two clusters replaced by placeholders: Kafka Uuids
    (text and base64 forms) by <id>, loopback addresses by <address>, the broker's node id
    where the tools print node ids by <node>, producer ids by <producer-id>, the
    controller's id by <controller>,
    epoch-millisecond times and duration columns
    by <time>, the log directory by <log-dir>; Java stack frames are dropped (line numbers
    of the tools' own code, identical on both sides, say nothing about the broker)."""
    text = _STACK_FRAME.sub("", text)
    if log_dir:
        text = text.replace(log_dir, "<log-dir>")
    text = _ADDRESS.sub("<address>", text)
    text = _UUID_TEXT.sub("<id>", text)
    text = _UUID_BASE64.sub(lambda m: "<id>" if _looks_like_id(m.group()) else m.group(), text)
    text = _TIMESTAMP_MS.sub("<time>", text)
    text = _CONTROLLER.sub(lambda m: m.group("pre") + (
        "<controller>" if m.group("id") == str(controller_id) else m.group("id")), text)
    for pattern in _NODE_CONTEXTS:
        text = pattern.sub(lambda m: m.group("pre") + _node_ids(m.group("ids"), node_id), text)
    return _normalize_tables(text, node_id)


def _node_ids(ids: str, node_id: int) -> str:
    return ",".join("<node>" if part == str(node_id) else part for part in ids.split(","))


def _looks_like_id(word: str) -> bool:
    """A 22-character base64 word that is a Kafka Uuid rather than a CamelCase header such
    as LatestCoordinatorEpoch."""
    return _CAMEL_WORD.fullmatch(word) is None


def _normalize_tables(text: str, node_id: int) -> str:
    """The tab-separated tables (kafka-transactions, kafka-metadata-quorum): cells stripped
    of their padding (its width follows the values), node id, producer id and time columns
    replaced."""
    out: list[str] = []
    header: list[str] | None = None
    for line in text.split("\n"):
        if "\t" not in line:
            header = None
            out.append(line)
            continue
        cells = [cell.strip() for cell in line.split("\t")]
        if header is None:
            header = cells
        else:
            for index, name in enumerate(header[:len(cells)]):
                if name in _NODE_COLUMNS and cells[index] == str(node_id):
                    cells[index] = "<node>"
                elif name in _PRODUCER_COLUMNS and cells[index].isdigit():
                    cells[index] = "<producer-id>"
                elif name in _TIME_COLUMNS and cells[index] not in ("", "None"):
                    cells[index] = "<time>"
        out.append("\t".join(cells))
    return "\n".join(out)


__all__ = ["CALL_TIMEOUT", "TOOLS", "ToolResult", "ToolRunnerError", "ToolSession",
           "normalize"]
