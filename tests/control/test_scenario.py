"""Scenarios: seed topics and data, then timed or triggered fault steps, from a file.

Loaded the ways a user loads them: a TOML/JSON/YAML file through the Python API, an object
over HTTP, `--scenario FILE` on the CLI, and `@pytest.mark.mockbroker(scenario=...)` in a
separate pytest run whose failure report must print the seed and the steps that fired.
Waits (not sleeps) observe what the steps did; no assertion is about durations.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kafka_protocol_codec.records import decode_batch

from mockbroker.control import ControlError
from mockbroker.embedded import MockCluster
from tests.support.cli import http_json, read_line, start_cli, stop
from tests.support.rawclient import connect_broker

METADATA = 3
SEEDED = """
seed = 11
[[topics]]
name = "orders"
partitions = 2
messages = [
  { partition = 0, key = "k1", value = "first" },
  { partition = 0, key = "k2", value = "second" },
  { partition = 1, value = "third" },
]

[[steps]]
do = "inject-error"
args = { api = "Produce", error = "NOT_LEADER_OR_FOLLOWER", topic = "orders" }
for_ms = 100

[[steps]]
do = "stop-broker"
args = { broker = 2 }
after = { api = "Metadata", count = 3 }
for_ms = 150
"""


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=3, control_port=0) as cluster:
        yield cluster


def _values(mc: MockCluster, topic: str, partition: int) -> list[bytes | None]:
    log = mc.cluster.log(mc.cluster.image.topics[topic].topic_id, partition)
    assert log is not None
    return [r.value for b in log.batches for r in decode_batch(b.data).records]


async def test_a_toml_scenario_seeds_data_and_runs_its_steps(mc: MockCluster,
                                                             tmp_path: Path) -> None:
    path = tmp_path / "scenario.toml"
    path.write_text(SEEDED)
    started = await mc.control.load_scenario(path=str(path))
    assert started["seed"] == 11 and started["running"] is True
    assert _values(mc, "orders", 0) == [b"first", b"second"]
    assert _values(mc, "orders", 1) == [b"third"]

    # step 0 (at start) injected a fault that its for_ms clears again
    faults = await mc.control.wait_fault_consumed(1, timeout_ms=10_000)
    assert faults["observed"] == {"active": False}

    # step 1 fires on the third Metadata request: broker 2 stops, then comes back
    body = {"topics": [{"name": "orders"}], "allow_auto_topic_creation": False}
    async with await connect_broker(mc, 0) as client:
        for _ in range(2):
            await client.request(METADATA, 8, body)
        assert not (await mc.control.state())["brokers"][2]["fenced"]
        await client.request(METADATA, 8, body)
    await mc.control.wait_broker_fenced(2, timeout_ms=10_000)
    await mc.control.wait_broker_fenced(2, fenced=False, timeout_ms=10_000)

    status = await mc.control.scenario()
    assert [(e["step"], e["undo"], e["do"], e["ok"]) for e in status["fired"]] == [
        (0, False, "inject-error", True), (None, True, "clear-faults", True),
        (1, False, "stop-broker", True), (None, True, "start-broker", True)]
    stopped = await mc.control.stop_scenario()
    assert stopped["running"] is False


async def test_probabilities_replay_with_the_same_seed(mc: MockCluster) -> None:
    scenario = {"topics": [{"name": "t", "partitions": 1}],
                "steps": [{"do": "elect-leader", "args": {"topic": "t", "partition": 0},
                           "every_ms": 5, "times": 40, "probability": 0.5}]}

    async def run(seed: int) -> list[int]:
        await mc.control.reset()
        await mc.control.load_scenario(scenario=scenario, seed=seed)
        for _ in range(3000):  # until its 40 draws are done (bounded: 30 s)
            status = await mc.control.scenario()
            if status["pending"] == 0:
                break
            await asyncio.sleep(0.01)
        assert status["pending"] == 0
        epoch = mc.cluster.image.partition("t", 0).leader_epoch
        assert epoch == len(status["fired"])  # each firing was one election
        return [len(status["fired"]), status["seed"]]

    first, again = await run(1234), await run(1234)
    assert first == again and first[1] == 1234
    assert 0 < first[0] < 40  # some draws fired, some did not


@pytest.mark.parametrize(("scenario", "message"), [
    ({"stepz": []}, "unknown key(s) stepz"),
    ({"steps": [{"do": "no-such-verb"}]}, "steps[0].do must be a control verb"),
    ({"steps": [{"do": "wait-broker-fenced", "args": {"broker": 0}}]},
     "steps[0].do must be a control verb"),
    ({"steps": [{"do": "elect-leader", "for_ms": 10}]}, "steps[0].for_ms: elect-leader cannot"),
    ({"steps": [{"do": "reset"}]}, "steps[0].do must be"),
    ({"steps": [{"do": "stop-broker", "at_ms": 1, "every_ms": 2}]}, "gives at_ms and every_ms"),
    ({"steps": [{"do": "stop-broker", "after": {"api": "Produce"}}]}, "after must be"),
    ({"steps": [{"do": "stop-broker", "probability": 2}]}, "probability must be a number"),
    ({"topics": [{"name": "t", "messages": [{"val": "x"}]}]}, "unknown key(s) val"),
])
async def test_a_bad_scenario_is_refused_whole(mc: MockCluster, scenario: dict[str, Any],
                                               message: str) -> None:
    with pytest.raises(ControlError) as info:
        await mc.control.load_scenario(scenario=scenario)
    assert info.value.status == 400 and message in info.value.message
    assert (await mc.control.state())["topics"] == {}  # nothing happened


async def test_over_http_and_stop_runs_pending_undos(mc: MockCluster) -> None:
    url = mc.control_url
    assert url is not None

    def post(verb: str, body: Any) -> tuple[int, Any]:
        return http_json(f"{url}/{verb}", "POST", body)

    status, body = await asyncio.to_thread(post, "load-scenario", {"scenario": {
        "steps": [{"do": "pause-metadata", "args": {"broker": 1}, "for_ms": 600_000}]}})
    assert status == 200 and body["running"]
    assert (await mc.control.state())["brokers"][1]["metadata_paused"]  # ran at load
    status, body = await asyncio.to_thread(post, "load-scenario", {"scenario": {}})
    assert status == 409
    status, body = await asyncio.to_thread(post, "stop-scenario", {})
    assert status == 200 and [e["do"] for e in body["fired"]] == [
        "pause-metadata", "resume-metadata"]  # the pending undo ran at stop
    assert not (await mc.control.state())["brokers"][1]["metadata_paused"]


def test_cli_scenario_flag(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"seed": 5, "topics": [
        {"name": "seeded", "partitions": 1, "messages": [{"value": "hello"}]}]}))
    proc, fields = start_cli("--brokers", "1", "--scenario", str(path),
                             stderr=subprocess.PIPE)
    try:
        assert read_line(proc.stderr).startswith(
            f"mockbroker: scenario {path} started with seed 5")
        status, state = http_json(f"{fields['control']}/state")
        assert status == 200
        assert state["topics"]["seeded"]["partitions"][0]["high_watermark"] == 1
    finally:
        stop(proc)
    bad = tmp_path / "bad.toml"
    bad.write_text("steps = 3\n")
    result = subprocess.run([sys.executable, "-m", "mockbroker", "--brokers", "1",
                             "--scenario", str(bad)], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2
    assert "scenario: steps must be a list" in result.stderr


PLUGIN_TESTS = '''
import pytest

SCENARIO = {"seed": 99, "topics": [{"name": "orders", "partitions": 1}],
            "steps": [{"do": "elect-leader", "args": {"topic": "orders", "partition": 0}}]}

@pytest.mark.mockbroker(brokers=1, scenario=SCENARIO)
def test_fails_after_a_scenario(mockbroker):
    mockbroker.control.wait_topic_messages("orders", 0)
    result = mockbroker.control.state()
    assert result["topics"]["orders"]["partitions"][0]["leader_epoch"] >= 0
    assert False, "deliberate failure"
'''


def test_pytest_marker_and_failure_report(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(textwrap.dedent(PLUGIN_TESTS))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-p", "no:randomly", str(tmp_path / "test_user.py")],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path,
                            check=False)
    assert result.returncode == 1, result.stdout
    assert "mockbroker scenario (call)" in result.stdout
    assert "seed 99 (replay: @pytest.mark.mockbroker(scenario=..., scenario_seed=99))" \
        in result.stdout
    assert "step 0: elect-leader {'topic': 'orders', 'partition': 0} -> ok" in result.stdout


async def test_yaml_files_and_unreadable_ones(mc: MockCluster, tmp_path: Path) -> None:
    good = tmp_path / "s.yaml"
    good.write_text("seed: 3\ntopics:\n  - name: fromyaml\n    partitions: 2\n")
    started = await mc.control.load_scenario(path=str(good))
    assert started["seed"] == 3
    assert len(mc.cluster.image.topics["fromyaml"].partitions) == 2
    await mc.control.stop_scenario()
    bad = tmp_path / "bad.yml"
    bad.write_text("topics: [unclosed\n")
    for path, message in ((bad, "is not valid YAML"), (tmp_path / "s.ini", "use a .json"),
                          (tmp_path / "missing.toml", "cannot read scenario")):
        with pytest.raises(ControlError) as info:
            await mc.control.load_scenario(path=str(path))
        assert info.value.status == 400 and message in info.value.message
