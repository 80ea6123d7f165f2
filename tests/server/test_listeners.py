"""Extra listener sets: each listener advertises its own endpoints (docker/compose.yaml).

A broker with two listeners, as Kafka's named listeners: the first set's endpoints are the
registered ones; a request that arrives on an extra listener is answered with that
listener's endpoints in Metadata, FindCoordinator and DescribeCluster. The first listener
here advertises a name that does not resolve (`mockbroker.invalid`, as `mockbroker` does
not on a Docker host), so a real client that bootstraps through the extra listener only
works if no answer leaks the other listener's address.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import ClusterConfig
from mockbroker.server.cluster_server import ClusterServer, ListenerConfig, parse_listeners
from tests.support.rawclient import RawClient

METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER = 3, 10, 60
UNRESOLVABLE = "mockbroker.invalid"  # RFC 2606: never resolves


def test_parse_listeners() -> None:
    assert parse_listeners("0.0.0.0:19092/localhost:19092") == [
        ListenerConfig("0.0.0.0", 19092, "localhost", 19092)]
    assert parse_listeners(" 127.0.0.1:0 , [::1]:9000/host.example ") == [
        ListenerConfig("127.0.0.1", 0, None, None), ListenerConfig("::1", 9000, "host.example")]
    assert parse_listeners("") == []


@pytest.mark.parametrize(("spec", "reason"), [
    (":19092", "has no host"), ("localhost", "needs a port"), ("h:x", "is not a number"),
    ("h:70000", "0-65535"), ("h:1/a:0", "port 0 cannot be advertised"),
])
def test_parse_listeners_refuses(spec: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_listeners(spec)


@pytest.fixture
async def server() -> AsyncIterator[ClusterServer]:
    srv = ClusterServer(ClusterConfig(brokers=3),
                        ListenerConfig("127.0.0.1", 0, UNRESOLVABLE, 9092),
                        extra_listeners=[ListenerConfig("127.0.0.1", 0, "localhost")])
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


async def _metadata_brokers(port: int) -> dict[int, tuple[str, int]]:
    async with await RawClient.connect(port) as client:
        meta = await client.request(METADATA, 12, {"topics": None,
                                                   "allow_auto_topic_creation": False})
    return {b.node_id: (b.host, b.port) for b in meta.brokers}


async def _answers(port: int) -> tuple[object, object, object, object]:
    async with await RawClient.connect(port) as client:
        meta = await client.request(METADATA, 12, {"topics": None,
                                                   "allow_auto_topic_creation": False})
        batched = await client.request(FIND_COORDINATOR, 4, {"key_type": 0,
                                                             "coordinator_keys": ["g"]})
        single = await client.request(FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
        cluster = await client.request(DESCRIBE_CLUSTER, 1, {"endpoint_type": 1})
    brokers = {b.node_id: (b.host, b.port) for b in meta.brokers}
    described = {b.broker_id: (b.host, b.port) for b in cluster.brokers}
    assert batched.coordinators[0].error_code == single.error_code == ErrorCode.NONE
    coordinators = ((batched.coordinators[0].host, batched.coordinators[0].port),
                    (single.host, single.port))
    return brokers, described, coordinators, batched.coordinators[0].node_id


async def test_each_listener_advertises_its_own_endpoints(server: ClusterServer) -> None:
    internal = {b: (UNRESOLVABLE, 9092 + b) for b in range(3)}
    external = {b: ("localhost", server.extra_bound_ports[0][b]) for b in range(3)}
    assert server.extra_endpoints[0] == external
    assert server.bootstrap_servers == f"{UNRESOLVABLE}:9092,{UNRESOLVABLE}:9093," \
                                       f"{UNRESOLVABLE}:9094"
    assert server.listener_bootstrap_servers(0) == ",".join(
        f"localhost:{external[b][1]}" for b in range(3))
    for broker in range(3):
        brokers, described, coordinators, node = await _answers(server.bound_ports[broker])
        assert brokers == described == internal
        assert coordinators == (internal[node], internal[node])
        brokers, described, coordinators, node = await _answers(
            server.extra_bound_ports[0][broker])
        assert brokers == described == external
        assert coordinators == (external[node], external[node])


async def test_restart_keeps_both_listeners(server: ClusterServer) -> None:
    before = dict(server.extra_bound_ports[0])
    await server.stop_broker(1)
    assert 1 not in server.servers and 1 not in server.extra_servers[0]
    for port in (server.bound_ports[1], before[1]):  # neither of its listeners accepts
        with pytest.raises(OSError):
            await RawClient.connect(port, timeout=1)
    await server.start_broker(1)
    assert server.extra_bound_ports[0] == before
    assert await _metadata_brokers(before[1]) == {b: ("localhost", before[b]) for b in range(3)}


async def test_extra_listener_bind_failure_is_reported() -> None:
    blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    taken = blocker.sockets[0].getsockname()[1]
    srv = ClusterServer(ClusterConfig(brokers=1), ListenerConfig("127.0.0.1", 0),
                        extra_listeners=[ListenerConfig("127.0.0.1", taken)])
    try:
        with pytest.raises(OSError, match=f"broker 0 cannot listen on 127.0.0.1:{taken}"):
            await srv.start()
        assert not srv.servers and not srv.extra_servers[0]
    finally:
        blocker.close()
        await blocker.wait_closed()


def _produce_and_consume_in_a_group(boot: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    errors: list[object] = []
    admin = AdminClient({"bootstrap.servers": boot, "error_cb": errors.append})
    admin.create_topics([NewTopic("ext", num_partitions=3)])["ext"].result(timeout=20)
    producer = Producer({"bootstrap.servers": boot, "acks": "all", "error_cb": errors.append})
    sent = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(30)]
    for i, (key, value) in enumerate(sent):
        producer.produce("ext", key=key, value=value, partition=i % 3)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": boot, "group.id": "ext-group",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "error_cb": errors.append})
    got: list[tuple[bytes, bytes]] = []
    try:
        consumer.subscribe(["ext"])
        deadline = time.monotonic() + 30
        while len(got) < len(sent) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append((msg.key(), msg.value()))
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition("ext", p) for p in range(3)],
                                       timeout=10)
    finally:
        consumer.close()
    assert sorted(got) == sorted(sent)
    assert [tp.offset for tp in committed] == [10, 10, 10]
    assert not errors, errors[:3]


@pytest.mark.clients
async def test_client_through_the_extra_listener_only(server: ClusterServer) -> None:
    """confluent-kafka bootstraps through the extra listener; the first listener's name
    does not resolve, so producing, a consumer group and its commits all succeed only if
    every broker address the client was told is the extra listener's."""
    await asyncio.to_thread(_produce_and_consume_in_a_group,
                            server.listener_bootstrap_servers(0))
