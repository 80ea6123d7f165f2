"""The pytest plugin, as a user gets it: a separate pytest run in a fresh directory, with the
plugin loaded through its `pytest11` entry point (nothing in the directory imports it).

One run covers: the function fixture and its reset between tests, the session fixture, the
marker and indirect parameters, a pytest-asyncio test, --mockbroker-brokers, and a failing
test whose report carries the Kafka requests it made (and only those)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

TESTS = '''
import pytest
from kafka_protocol_codec.error_codes import ErrorCode

def produce(bootstrap, topic, value):
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    producer.produce(topic, value)
    assert producer.flush(15) == 0

def test_1_fails_with_a_trace(mockbroker):
    mockbroker.control.create_topic("orders", partitions=1)
    mockbroker.control.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=1)
    produce(mockbroker.bootstrap_servers, "orders", b"v")
    assert [r["api"] for r in mockbroker.trace() if r["errors"]] == ["Produce"]
    assert False, "deliberate failure"

def test_2_starts_clean(mockbroker, mockbroker_cluster):
    state = mockbroker.control.state()
    assert state["topics"] == {} and state["faults"] == []
    assert mockbroker.thread is mockbroker_cluster
    assert len(mockbroker.bootstrap_servers.split(",")) == 2   # --mockbroker-brokers 2
    assert mockbroker.trace() == []   # test 1's requests are not this test's

@pytest.mark.mockbroker(brokers=1, partitions=3)
def test_3_marker(mockbroker):
    assert len(mockbroker.bootstrap_servers.split(",")) == 1
    produce(mockbroker.bootstrap_servers, "auto", b"x")   # auto-created with 3 partitions
    assert len(mockbroker.control.state()["topics"]["auto"]["partitions"]) == 3

@pytest.mark.parametrize("mockbroker", [{"brokers": 3}, {"kafka_version": "2.8"}],
                         indirect=True)
def test_4_parameters(mockbroker):
    assert len(mockbroker.bootstrap_servers.split(",")) in (2, 3)

async def test_5_async(mockbroker):
    await mockbroker.acontrol.create_topic("a", partitions=2)
    state = await mockbroker.acontrol.state()
    assert list(state["topics"]) == ["a"]

def test_6_fails_without_kafka_requests(mockbroker):
    assert False, "no requests here"
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    root = tmp_path_factory.mktemp("plugin")
    (root / "test_user.py").write_text(TESTS)
    (root / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\n"
                                     "asyncio_default_fixture_loop_scope = function\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v",
                           "--mockbroker-brokers", "2", "-W", "ignore::DeprecationWarning",
                           str(root)], cwd=root, capture_output=True, text=True,
                          timeout=300, check=False)


def test_outcomes(run: subprocess.CompletedProcess[str]) -> None:
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    for name in ("test_2_starts_clean", "test_3_marker", "test_4_parameters[mockbroker0]",
                 "test_4_parameters[mockbroker1]", "test_5_async"):
        assert re.search(rf"{re.escape(name)} PASSED", out), name
    assert "test_1_fails_with_a_trace FAILED" in out
    assert "test_6_fails_without_kafka_requests FAILED" in out
    assert "2 failed, 5 passed" in out


def test_failure_report_has_the_tests_requests(run: subprocess.CompletedProcess[str]) -> None:
    out = run.stdout
    start = out.index("_ test_1_fails_with_a_trace _")
    report = out[start:out.index("_ test_6_fails_without_kafka_requests _")]
    assert "AssertionError: deliberate failure" in report
    section = report[report.index("mockbroker request trace (call)"):]
    lines = [line for line in section.splitlines() if line.startswith("broker=")]
    assert any(" Produce v" in line and "errors=NOT_LEADER_OR_FOLLOWER" in line
               for line in lines), section
    assert any(" Metadata v" in line and "topics=orders" in line for line in lines)
    assert lines and all("client='rdkafka'" in line for line in lines)  # the test's own
    tail = out[out.index("_ test_6_fails_without_kafka_requests _"):]
    assert "(no Kafka requests during this test)" in tail
