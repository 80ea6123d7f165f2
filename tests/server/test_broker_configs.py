"""Static broker properties (server.properties, --override, KAFKA_*) as Kafka takes them:
reported by DescribeConfigs with their sources, and enforced (JoinGroup session bounds,
InitProducerId's transaction timeout, topic defaults, offsets retention); dynamic broker
configs change behaviour and sources; keys Kafka cannot update at runtime are refused."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.cluster.configs.broker_properties import (
    BrokerPropertyError,
    check_broker_properties,
)
from mockbroker.embedded import MockCluster
from tests.server.test_admin_configs import SET, describe, entry, incremental, plain
from tests.support.admin import BROKER, TOPIC, by_name, create_topic, produce, running_cluster
from tests.support.rawclient import RawClient, connect_broker

STATIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT, DEFAULT = 4, 2, 3, 5
INT, LONG, STRING = 3, 5, 2
PROPERTIES = {"group.min.session.timeout.ms": "1000", "group.max.session.timeout.ms": "20000",
              "transaction.max.timeout.ms": "60000", "num.partitions": "4",
              "message.max.bytes": "2000", "log.retention.hours": "1",
              "offsets.retention.minutes": "1", "log.dirs": "/data/a,/data/b",
              "socket.request.max.bytes": "104857600"}


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with running_cluster(clock=ManualClock(), broker_properties=dict(PROPERTIES)) as m:
        yield m


@pytest.fixture
async def client(mc: MockCluster) -> AsyncIterator[RawClient]:
    async with await connect_broker(mc, 0) as c:
        yield c


async def test_static_properties_are_described_with_their_source(mc: MockCluster,
                                                                 client: RawClient) -> None:
    configs = by_name((await describe(client, BROKER, "0")).configs)
    assert plain(configs["group.min.session.timeout.ms"]) == entry(
        "group.min.session.timeout.ms", "1000", STATIC, INT,
        [("group.min.session.timeout.ms", "1000", STATIC),
         ("group.min.session.timeout.ms", "6000", DEFAULT)], read_only=True)
    # named in server.properties: static even though the value is Kafka's default
    assert plain(configs["socket.request.max.bytes"]) == entry(
        "socket.request.max.bytes", "104857600", STATIC, INT,
        [("socket.request.max.bytes", "104857600", STATIC),
         ("socket.request.max.bytes", "104857600", DEFAULT)], read_only=True)
    assert plain(configs["log.dirs"]) == entry(
        "log.dirs", "/data/a,/data/b", STATIC, STRING, [("log.dirs", "/data/a,/data/b", STATIC)],
        read_only=True)
    assert plain(configs["offsets.topic.num.partitions"]) == entry(
        "offsets.topic.num.partitions", "50", DEFAULT, INT,
        [("offsets.topic.num.partitions", "50", DEFAULT)], read_only=True)
    listener = configs["advertised.listeners"]
    assert (listener.value, listener.config_source, listener.read_only) == (
        f"PLAINTEXT://127.0.0.1:{mc.cluster.brokers[0].port}", STATIC, True)  # KAFKA-18405
    # topic defaults follow the static broker settings
    await create_topic(client, "t")
    topic = by_name((await describe(client, TOPIC, "t")).configs)
    assert (topic["max.message.bytes"].value, topic["max.message.bytes"].config_source) == (
        "2000", STATIC)
    assert topic["retention.ms"].value == "3600000"


async def test_num_partitions_for_auto_created_and_default_topics(mc: MockCluster,
                                                                  client: RawClient) -> None:
    await create_topic(client, "t")  # num_partitions -1
    assert len(mc.cluster.image.topics["t"].partitions) == 4
    assert mc.cluster.maybe_auto_create("auto") is not None
    assert len(mc.cluster.image.topics["auto"].partitions) == 4


async def test_session_timeout_bounds(mc: MockCluster) -> None:
    owner = mc.cluster.coordinator_for(0, "g")
    assert owner is not None
    async with await connect_broker(mc, owner) as coordinator:
        def body(timeout: int) -> dict[str, object]:
            return {"group_id": "g", "session_timeout_ms": timeout,
                    "rebalance_timeout_ms": 30_000, "member_id": "",
                    "group_instance_id": None, "protocol_type": "consumer",
                    "protocols": [{"name": "range", "metadata": b""}]}
        for timeout in (999, 20_001):
            response = await coordinator.request(11, 5, body(timeout))
            assert response.error_code == E.INVALID_SESSION_TIMEOUT
        response = await coordinator.request(11, 5, body(1000))  # Kafka's default min: 6000
        assert response.error_code == E.MEMBER_ID_REQUIRED


async def test_transaction_max_timeout(mc: MockCluster) -> None:
    owner = mc.cluster.coordinator_for(1, "tx")
    assert owner is not None
    async with await connect_broker(mc, owner) as coordinator:
        def body(timeout: int) -> dict[str, object]:
            return {"transactional_id": "tx", "transaction_timeout_ms": timeout,
                    "producer_id": -1, "producer_epoch": -1}
        assert (await coordinator.request(22, 4, body(60_001))).error_code == \
            E.INVALID_TRANSACTION_TIMEOUT
        assert (await coordinator.request(22, 4, body(60_000))).error_code == E.NONE


def test_offsets_of_empty_groups_expire_after_the_retention() -> None:
    clock = ManualClock(1_000_000)
    cluster = Cluster(ClusterConfig(brokers=1,
                                    broker_properties={"offsets.retention.minutes": "2"}),
                      clock)
    offsets = cluster.groups.offsets
    offsets.commit("simple", "t", 0, 5)
    clock.advance(60_000)
    offsets.commit("simple", "t", 1, 7)
    cluster.tick()
    assert sorted(offsets.all("simple")) == [("t", 0), ("t", 1)]
    clock.advance(60_000)  # two minutes after the first commit, one after the second
    cluster.tick()
    assert sorted(offsets.all("simple")) == [("t", 1)]
    clock.advance(60_000)
    cluster.tick()
    assert offsets.all("simple") == {}
    assert cluster.groups.get("simple") is None  # an empty group without offsets is gone


async def test_dynamic_message_max_bytes(mc: MockCluster, client: RawClient) -> None:
    await create_topic(client, "t")
    assert await incremental(client, BROKER, "", ("message.max.bytes", SET, "5000")) == (0, None)
    [broker] = (await describe(client, BROKER, "1", ["message.max.bytes"])).configs
    assert [(s.value, s.source) for s in broker.synonyms] == [
        ("5000", DYNAMIC_DEFAULT), ("2000", STATIC), ("1048588", DEFAULT)]
    assert mc.cluster.topic_config("t")["max.message.bytes"] == "5000"
    assert await incremental(client, BROKER, "1", ("message.max.bytes", SET, "7000")) == (0, None)
    [broker] = (await describe(client, BROKER, "1", ["message.max.bytes"])).configs
    assert (broker.value, broker.config_source) == ("7000", DYNAMIC_BROKER)


@pytest.mark.parametrize("key", ["group.min.session.timeout.ms", "log.dirs",
                                 "transaction.max.timeout.ms", "advertised.listeners"])
async def test_static_only_configs_are_refused(client: RawClient, key: str) -> None:
    assert await incremental(client, BROKER, "", (key, SET, "1")) == (
        E.INVALID_REQUEST, f"Cannot update these configs dynamically: {key}")


def test_bad_and_unknown_properties() -> None:
    with pytest.raises(BrokerPropertyError, match=r"Invalid value x for configuration "
                                                  r"num\.partitions: Not a number of type INT"):
        check_broker_properties({"num.partitions": "x"})
    with pytest.raises(BrokerPropertyError, match="Value must be at least 1"):
        check_broker_properties({"offsets.retention.minutes": "0"})
    assert check_broker_properties({"foo.bar": "1", "node.id": "7"}) == [
        "The configuration 'foo.bar' was supplied but isn't a known config.",
        "The configuration 'node.id' is set per broker by mockbroker; the supplied value '7' "
        "is ignored."]
    config = ClusterConfig(brokers=1, broker_properties={"foo.bar": "1", "num.partitions": "3"})
    Cluster(config)
    assert (config.broker_properties, config.default_partitions) == ({"num.partitions": "3"}, 3)


async def test_per_broker_dynamic_config_applies_to_that_broker(mc: MockCluster) -> None:
    async with await connect_broker(mc, 0) as client:
        await create_topic(client, "t", partitions=1, rf=3)
        leader = mc.cluster.image.partition("t", 0).leader  # type: ignore[union-attr]
        assert await incremental(client, BROKER, str(leader),
                                 ("message.max.bytes", SET, "100")) == (0, None)
    async with await connect_broker(mc, leader) as on_leader:
        [mine] = (await describe(on_leader, TOPIC, "t", ["max.message.bytes"])).configs
        assert plain(mine) == entry("max.message.bytes", "100", DYNAMIC_BROKER, INT, [
            ("message.max.bytes", "100", DYNAMIC_BROKER), ("message.max.bytes", "2000", STATIC),
            ("message.max.bytes", "1048588", DEFAULT)])
        response = await produce(on_leader, "t", 0, [b"x" * 200])
        assert response.error_code == E.MESSAGE_TOO_LARGE
    other = (leader + 1) % 3
    async with await connect_broker(mc, other) as elsewhere:
        [theirs] = (await describe(elsewhere, TOPIC, "t", ["max.message.bytes"])).configs
        assert (theirs.value, theirs.config_source) == ("2000", STATIC)


async def test_retention_in_hours_is_a_retention_ms_synonym(client: RawClient) -> None:
    await create_topic(client, "t")
    [retention] = (await describe(client, TOPIC, "t", ["retention.ms"])).configs
    assert plain(retention) == entry("retention.ms", "3600000", STATIC, LONG,
                                     [("log.retention.hours", "1", STATIC)])


@pytest.mark.clients
def test_confluent_kafka_broker_configs() -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
    )

    from mockbroker.embedded import MockClusterThread

    with MockClusterThread(brokers=2, broker_properties={"num.partitions": "3"}) as mock:
        admin = AdminClient({"bootstrap.servers": mock.bootstrap_servers})
        broker = ConfigResource(ConfigResource.Type.BROKER, "1")
        cluster = admin.describe_cluster().result(timeout=30)
        # librdkafka refuses the cluster-default resource (an empty name): per broker only
        set_mine = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
            ConfigEntry("log.retention.ms", "5000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("message.max.bytes", "3000", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([set_mine])[set_mine].result(timeout=30)
        refused = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
            ConfigEntry("num.partitions", "5", incremental_operation=AlterConfigOpType.SET)])
        with pytest.raises(KafkaException, match=r"Cannot update these configs dynamically: "
                                                 r"num\.partitions"):
            admin.incremental_alter_configs([refused])[refused].result(timeout=30)
        configs = admin.describe_configs([broker])[broker].result(timeout=30)
        topic_default = mock.call(lambda: mock.cluster.topic_config("x", broker_id=1))

    assert sorted(b.id for b in cluster.nodes) == [0, 1]
    seen = {name: (configs[name].value, ConfigSource(configs[name].source), configs[name]
                   .is_read_only) for name in ("num.partitions", "log.retention.ms",
                                               "message.max.bytes", "broker.id")}
    assert seen == {
        "num.partitions": ("3", ConfigSource.STATIC_BROKER_CONFIG, True),
        "log.retention.ms": ("5000", ConfigSource.DYNAMIC_BROKER_CONFIG, False),
        "message.max.bytes": ("3000", ConfigSource.DYNAMIC_BROKER_CONFIG, False),
        "broker.id": ("1", ConfigSource.STATIC_BROKER_CONFIG, True)}
    assert (topic_default["retention.ms"], topic_default["max.message.bytes"]) == (
        "5000", "3000")


def test_offsets_of_groups_with_members_are_kept() -> None:
    from mockbroker.cluster.groups.offset_store import OffsetStore

    clock = ManualClock(0)
    store = OffsetStore(clock)
    store.commit("busy", "t", 0, 1)
    store.commit("idle", "t", 0, 2)
    clock.advance(999)
    assert store.expire(clock.now_ms(), 1000, lambda group: group == "busy") == []
    clock.advance(1)
    assert store.expire(clock.now_ms(), 1000, lambda group: group == "busy") == ["idle"]
    assert (store.groups(), store.get("busy", "t", 0).offset) == ({"busy"}, 1)  # type: ignore
    # the members leave: the next check expires the old commit
    assert store.expire(clock.now_ms(), 1000, lambda group: False) == ["busy"]
    assert store.groups() == set()
