"""kafkajs, the Node.js client (from npm, tests/kafkajs), against a 3-broker MockClusterThread.

pytest drives tests/kafkajs/client.js in a Node subprocess, one JSON spec in, one JSON
result out, bytes as base64. kafkajs speaks older protocol versions than the Python clients
(ApiVersions v2, Metadata v6, Produce v7, Fetch v11, JoinGroup v5, OffsetCommit v5), so it
covers other code paths of the same handlers. Checked exactly, byte for byte:
- kafkajs produces (keys, values, headers, a null key, a tombstone, binary and UTF-8) and
  confluent-kafka reads the same records at the offsets kafkajs was told;
- confluent-kafka produces and a kafkajs consumer in a group reads them, then commits;
- two kafkajs consumers share a group: every partition is assigned to exactly one of them,
  each reads only its own partitions, together they read every record once, and the
  committed offsets (seen in the cluster's state) are the partitions' ends.
`make test` installs kafkajs (npm ci in tests/kafkajs); without Node or kafkajs these tests
fail with that instruction rather than skip.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import ConfluentClient

pytestmark = pytest.mark.clients

KAFKAJS_DIR = Path(__file__).resolve().parents[1] / "kafkajs"
SCRIPT = KAFKAJS_DIR / "client.js"
NODE_TIMEOUT = 60.0

# (key, value, headers); repeated header names stay adjacent (kafkajs groups them by name)
MESSAGES: list[tuple[bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]] = [
    (b"k-0", b"plain value", (("trace-id", b"abc-123"),)),
    (b"k-1", b"", (("empty", b""),)),
    (None, b"no key here", ()),
    (b"k-3", bytes(range(256)), (("bin", bytes([0, 255, 10, 13])), ("dup", b"1"), ("dup", b"2"))),
    ("ключ".encode(), "значение ✓ 🚀".encode(), (("utf8", "да".encode()),)),
    (b"k-5", None, (("tombstone", b"yes"),)),
    (b"k-6" * 100, b"v" * 10000, (("big", b"h" * 1000),)),
]
PARTITIONS = 3


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.fail("Node.js is not installed: `apt-get install -y nodejs npm` (`make sysdeps` "
                    "does it)")
    if not (KAFKAJS_DIR / "node_modules" / "kafkajs" / "package.json").is_file():
        pytest.fail("kafkajs is not installed: `npm ci --prefix tests/kafkajs` (`make test` "
                    "does it)")
    return path


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def run_kafkajs(node: str, command: str, spec: dict[str, Any]) -> dict[str, Any]:
    result = subprocess.run([node, str(SCRIPT), command], input=json.dumps(spec),
                            capture_output=True, text=True, timeout=NODE_TIMEOUT, cwd=KAFKAJS_DIR,
                            check=False)
    assert result.returncode == 0, f"kafkajs {command} failed:\n{result.stderr[-4000:]}"
    out: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return out


def _spec_message(partition: int, key: bytes | None, value: bytes | None,
                  headers: tuple[tuple[str, bytes], ...]) -> dict[str, Any]:
    return {"partition": partition, "key": _b64(key), "value": _b64(value),
            "headers": [[name, _b64(v)] for name, v in headers]}


def _record(entry: dict[str, Any]) -> tuple[int, int, bytes | None, bytes | None,
                                            tuple[tuple[str, bytes | None], ...]]:
    return (entry["partition"], entry["offset"], _unb64(entry["key"]), _unb64(entry["value"]),
            tuple((name, _unb64(v)) for name, v in entry["headers"]))


def _expected(messages: list[tuple[bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]],
              partitions: int) -> list[tuple[Any, ...]]:
    """Message i goes to partition i % partitions, in order: (partition, offset, ...)."""
    out = []
    for p in range(partitions):
        for offset, (key, value, headers) in enumerate(messages[p::partitions]):
            out.append((p, offset, key, value, headers))
    return out


def _committed(mock: MockClusterThread, group: str, topic: str) -> dict[int, int]:
    offsets = mock.control.state()["groups"][group]["offsets"].get(topic, {})
    return {int(p): entry["offset"] for p, entry in offsets.items()}


def _confluent_produce(boot: str, topic: str, messages: list[Any]) -> None:
    """confluent-kafka produces message i to partition i % PARTITIONS, in order."""
    from confluent_kafka import Producer

    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": boot, "acks": "all", "error_cb": errors.append})
    for i, (key, value, headers) in enumerate(messages):
        producer.produce(topic, key=key, value=value, headers=list(headers),
                         partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    assert not errors, errors[:3]


def test_kafkajs_produces_exact_content(node: str, mock: MockClusterThread,
                                        topic_name: Callable[[str], str]) -> None:
    topic = topic_name("js-produce")
    result = run_kafkajs(node, "produce", {
        "brokers": mock.bootstrap_servers, "topic": topic, "partitions": PARTITIONS,
        "messages": [_spec_message(i % PARTITIONS, *m) for i, m in enumerate(MESSAGES)]})
    expected = _expected(MESSAGES, PARTITIONS)
    assert [tuple(o) for o in result["offsets"]] == \
        [(i % PARTITIONS, i // PARTITIONS) for i in range(len(MESSAGES))]
    consumed = ConfluentClient().consume(mock.bootstrap_servers, topic, PARTITIONS,
                                         len(MESSAGES))
    got = sorted(((c.partition, c.offset, c.key, c.value, c.headers) for c in consumed),
                 key=lambda r: r[:2])
    assert got == expected
    assert all(c.create_time for c in consumed)  # kafkajs stamps CreateTime


def test_kafkajs_consumes_exact_content_and_commits(node: str, mock: MockClusterThread,
                                                    topic_name: Callable[[str], str]) -> None:
    topic, group = topic_name("js-consume"), topic_name("js-group")
    ConfluentClient().create_topic(mock.bootstrap_servers, topic, PARTITIONS)
    _confluent_produce(mock.bootstrap_servers, topic, MESSAGES)
    result = run_kafkajs(node, "consume", {"brokers": mock.bootstrap_servers, "topic": topic,
                                           "groupId": group, "expected": len(MESSAGES)})
    got = sorted((_record(m) for m in result["messages"]), key=lambda r: r[:2])
    assert got == _expected(MESSAGES, PARTITIONS)
    ends = {p: len(MESSAGES[p::PARTITIONS]) for p in range(PARTITIONS)}
    assert dict(map(tuple, result["committed"])) == ends  # kafkajs' own OffsetFetch
    assert _committed(mock, group, topic) == ends  # the cluster's view


def test_kafkajs_consumer_group_splits_partitions(node: str, mock: MockClusterThread,
                                                  topic_name: Callable[[str], str]) -> None:
    topic, group = topic_name("js-split"), topic_name("js-members")
    partitions, count = 4, 40
    messages = [(f"key-{i}".encode(), f"value-{i}".encode(), (("n", str(i).encode()),))
                for i in range(count)]
    result = run_kafkajs(node, "group", {
        "brokers": mock.bootstrap_servers, "topic": topic, "partitions": partitions,
        "groupId": group, "consumers": 2,
        "messages": [_spec_message(i % partitions, *m) for i, m in enumerate(messages)]})
    members = result["members"]
    assert len({m["memberId"] for m in members}) == 2
    assignments = [m["assignment"] for m in members]
    assert all(assignments) and sorted(p for a in assignments for p in a) == list(range(partitions))
    for member in members:
        assert {r["partition"] for r in member["messages"]} <= set(member["assignment"])
    got = sorted((_record(r) for m in members for r in m["messages"]), key=lambda r: r[:2])
    assert got == _expected(messages, partitions)  # every record once, exact
    ends = {p: count // partitions for p in range(partitions)}
    assert dict(map(tuple, result["committed"])) == ends
    assert _committed(mock, group, topic) == ends
    state = mock.control.state()["groups"][group]
    assert state["protocol_type"] == "consumer" and state["members"] == []  # both left
