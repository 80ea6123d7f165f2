"""Real clients through the plain Produce lane (handlers/produce_lane.py).

On a one-broker cluster (one replica per partition) and on a three-broker one (three
replicas, whose followers fetch in the leader's append), aiokafka, kafka-python,
confluent-kafka and kcat produce through the suite's adapters (acks=all, otherwise the
clients' defaults), and then with idempotence on as well (Java's default, and so Spark's):
every message must be acknowledged at the offset it is
read back from, with exactly the key and value sent, and the brokers' lanes must have
answered Produce requests (their `taken` counts moved), so what is checked is the lane's
work and not only the general path's.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mockbroker.embedded import MockClusterThread
from tests.support.kafka_clients import Client, Msg

pytestmark = pytest.mark.clients

PARTITIONS = 3
COUNT = 600


def messages(tag: str) -> list[Msg]:
    return [Msg(b"key-%d" % i, b"%s-value-%d-" % (tag.encode(), i) + b"x" * (i % 50))
            for i in range(COUNT)]


def lane_taken(mock: MockClusterThread) -> int:
    """Requests the brokers' lanes answered so far, over all brokers."""
    assert mock.mock is not None
    server = mock.mock.server
    lanes = mock.call(lambda: [server.produce_lane(node)
                               for node in mock.cluster.brokers.values()])
    assert None not in lanes, "the compiled plain Produce codec is not built"
    return sum(lane.taken for lane in lanes)


@pytest.mark.parametrize("brokers", [1, 3], ids=["1-broker", "3-brokers"])
@pytest.mark.parametrize("idempotent", [False, True], ids=["default", "idempotent"])
@pytest.mark.parametrize("client_name", ["aiokafka", "kafka-python", "confluent-kafka", "kcat"])
def test_clients_produce_through_the_lane(client_name: str, idempotent: bool, brokers: int,
                                          client_factory: Callable[[str], Client],
                                          topic_name: Callable[[str], str]) -> None:
    client = client_factory(client_name)
    with MockClusterThread(brokers=brokers) as mock:
        topic = topic_name()
        mock.call(mock.cluster.create_topic, topic, PARTITIONS, brokers)
        boot = mock.bootstrap_servers
        msgs = messages(client_name)
        before = lane_taken(mock)
        delivered = client.produce(boot, topic, msgs, idempotent=idempotent)
        taken = lane_taken(mock) - before
        consumed = client.consume(boot, topic, PARTITIONS, COUNT)
    assert taken > 0, "no Produce request went through the lane"
    got = sorted((c.key, c.value) for c in consumed)
    assert got == sorted((m.key, m.value) for m in msgs)  # each exactly once
    if delivered is not None:  # acknowledged where it is read back
        where = {(c.partition, c.offset): (c.key, c.value) for c in consumed}
        assert [where[(d.partition, d.offset)] for d in delivered] == \
            [(m.key, m.value) for m in msgs]
    per_partition: dict[int, list[int]] = {}
    for c in consumed:
        per_partition.setdefault(c.partition, []).append(c.offset)
    for offsets in per_partition.values():  # no gaps, no duplicates
        assert sorted(offsets) == list(range(len(offsets)))
