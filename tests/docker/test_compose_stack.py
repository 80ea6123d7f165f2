"""docker/compose.yaml for real: the image built, the stack up, clients on both listeners.

With a Docker engine (`make test` starts one; tests/docker/engine.py says how the images are
built without a registry), the module fixture builds mockbroker:local and the client image,
then `compose up -d` starts mockbroker and, once its healthcheck passes, the example app.
The tests, in file order, check what a user of the compose file sees:
- mockbroker goes healthy and the example app (in the network, mockbroker:9092) passes;
- from the host (localhost:19092) the brokers are advertised as localhost:19092-19094 and the
  app's topic is there: one cluster behind both listeners;
- messages the host produces arrive byte for byte at a client in the network, and what that
  client produces back arrives byte for byte at the host, both through consumer groups;
- `compose stop` shuts mockbroker down cleanly (exit code 0) and `compose start` serves a
  fresh cluster (state lives in memory): a new cluster id, none of the earlier topics, and
  the example app passes again (creating its topic would fail had it survived).
The stack is taken down (`down -v`) in the fixture's finalizer, whatever happened. A missing
engine fails the module, with what to do; it is not skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.docker.dockerfile import REPO
from tests.docker.engine import Compose, running_stack
from tests.docker.messages import MESSAGES, Record, consume_in_group, expected, produce
from tests.support.kafka_clients import ClusterMeta, ConfluentClient

pytestmark = [pytest.mark.docker, pytest.mark.clients]

PROJECT = "mockbroker-tests"  # compose project name: its own containers and network
BROKERS = 3
HOST_BOOTSTRAP = "localhost:19092"
EXAMPLE_OK = "produced=12 consumed=12 committed=[4, 4, 4] OK"
NETWORK_CLIENT = "/app/network_client.py"


@pytest.fixture(scope="module")
def stack() -> Iterator[Compose]:
    yield from running_stack(PROJECT)


def _metadata(boot: str) -> ClusterMeta:
    return ConfluentClient().metadata(boot)


def test_healthy_and_the_example_app_passes_in_the_network(stack: Compose) -> None:
    stack.wait_healthy("mockbroker")
    code = stack.wait_exited("app")
    logs = stack.logs("app")
    assert code == 0, logs
    assert EXAMPLE_OK in logs


def test_host_listener_advertises_localhost_and_sees_the_same_cluster(stack: Compose) -> None:
    meta = _metadata(HOST_BOOTSTRAP)
    assert meta.brokers == {b: ("localhost", 19092 + b) for b in range(BROKERS)}
    assert "example" in meta.topics  # created by the app through mockbroker:9092


def _network_client(stack: Compose, source: str, answer: str) -> list[Record]:
    """Run tests/docker/network_client.py in `app`; the records it read, as it saw them."""
    result = stack(
        "run", "--rm", "--no-deps", "-T",
        "-v", f"{REPO / 'tests' / 'docker' / 'network_client.py'}:{NETWORK_CLIENT}:ro",
        "-e", "BOOTSTRAP_SERVERS=" + ",".join(f"mockbroker:{9092 + b}" for b in range(BROKERS)),
        "-e", f"SOURCE_TOPIC={source}", "-e", f"ANSWER_TOPIC={answer}",
        "-e", f"COUNT={len(MESSAGES)}", "-e", "PARTITIONS=2",
        "app", "python", NETWORK_CLIENT, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    records: list[Record] = []
    for line in result.stdout.splitlines():
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        records.append((row["partition"], row["offset"], _unhex(row["key"]),
                        _unhex(row["value"]),
                        [(k, bytes.fromhex(v)) for k, v in row["headers"]]))
    return records


def _unhex(text: str | None) -> bytes | None:
    return None if text is None else bytes.fromhex(text)


def test_host_to_network_and_back_byte_for_byte(stack: Compose) -> None:
    ConfluentClient().create_topic(HOST_BOOTSTRAP, "from-host", 2)
    produce(HOST_BOOTSTRAP, "from-host")
    seen_inside = _network_client(stack, "from-host", "from-network")
    assert sorted(seen_inside, key=lambda r: r[:2]) == expected()
    got, committed = consume_in_group(HOST_BOOTSTRAP, "from-network", "host-group")
    assert sorted(got, key=lambda r: r[:2]) == expected()
    assert committed == [3, 3]


def test_stop_and_start_serve_a_fresh_cluster(stack: Compose) -> None:
    before = _metadata(HOST_BOOTSTRAP)
    assert {"example", "from-host", "from-network"} <= set(before.topics)

    stack("stop", "-t", "10", "mockbroker", timeout=60)
    state = stack.state("mockbroker")
    assert (state["Status"], state["ExitCode"]) == ("exited", 0), state  # SIGTERM: clean exit

    stack("start", "mockbroker", timeout=60)
    stack.wait_healthy("mockbroker")
    after = _metadata(HOST_BOOTSTRAP)
    assert after.brokers == before.brokers
    assert after.cluster_id != before.cluster_id
    assert not {"example", "from-host", "from-network"} & set(after.topics)

    rerun = stack("run", "--rm", "--no-deps", "-T", "app", timeout=120, check=False)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert EXAMPLE_OK in rerun.stdout
