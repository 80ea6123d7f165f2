"""Each real client against the mock cluster with its default settings: metadata, topic
creation, and 1000 keyed messages with headers round-tripped at acks=all, uncompressed and
with every codec the client supports."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable

import pytest

from mockbroker.cluster import Cluster
from mockbroker.embedded import MockClusterThread
from tests.clients.conftest import CLIENT_NAMES
from tests.support.kafka_clients import (
    CODECS,
    Client,
    ClusterMeta,
    Consumed,
    Delivered,
    KcatClient,
    Msg,
    PartitionMeta,
    close_confluent,
)

pytestmark = pytest.mark.clients

MESSAGES = 1000
PARTITIONS = 3


# -- expectations from the cluster itself -------------------------------------------------

def cluster_meta(cluster: Cluster) -> ClusterMeta:
    """What every client should see, read from the controller's image (on the loop)."""
    image = cluster.image
    meta = ClusterMeta(
        brokers={b.broker_id: (b.host, b.port) for b in image.live_brokers()},
        controller_id=cluster.controller_id(), cluster_id=cluster.config.cluster_id)
    for name, topic in image.topics.items():
        meta.topics[name] = {
            i: PartitionMeta(p.leader, tuple(p.replicas), tuple(p.isr), p.leader_epoch)
            for i, p in topic.partitions.items()}
    return meta


def as_seen_by(expected: ClusterMeta, seen: ClusterMeta) -> ClusterMeta:
    """Blank out what a client does not expose (kcat: cluster id; most: leader epochs)."""
    topics = {}
    for name, parts in expected.topics.items():
        seen_parts = seen.topics.get(name, {})
        topics[name] = {
            i: PartitionMeta(p.leader, p.replicas, p.isr,
                             p.leader_epoch if i in seen_parts
                             and seen_parts[i].leader_epoch is not None else None)
            for i, p in parts.items()}
    return ClusterMeta(expected.brokers, expected.controller_id,
                       expected.cluster_id if seen.cluster_id is not None else None, topics)


def create_topic(mock: MockClusterThread, client: Client, name: str,
                 partitions: int = PARTITIONS) -> None:
    """Through the client's admin API where it has one, else through the cluster."""
    if client.has_admin:
        client.create_topic(mock.bootstrap_servers, name, partitions)
    else:
        mock.call(mock.cluster.create_topic, name, partitions)
    topic = mock.call(lambda: mock.cluster.image.topics.get(name))
    assert topic is not None, f"{client} did not create {name}"
    assert sorted(topic.partitions) == list(range(partitions))


# -- messages and checks -----------------------------------------------------------------------

def make_messages(client: Client, count: int, tag: str) -> list[Msg]:
    """Keyed messages with headers; keys repeat so per-key partitioning is visible. Explicit
    timestamps where the client can set them (an hour back, one millisecond apart)."""
    base = int(time.time() * 1000) - 3_600_000
    msgs = []
    for i in range(count):
        key = f"key-{i % 97}".encode()
        value = f"{tag}-value-{i}-{'x' * (i % 37)}".encode()
        if client.sets_timestamps:
            headers = (("idx", str(i).encode()), ("from", tag.encode()), ("empty", b""))
            msgs.append(Msg(key, value, headers, base + i))
        else:  # kcat: one header list for the whole run, CreateTime stamped by librdkafka
            msgs.append(Msg(key, value, (("from", tag.encode()), ("h", b"v"))))
    return msgs


def check_consumed(produced: list[Msg], consumed: list[Consumed],
                   delivered: list[Delivered] | None, window: tuple[int, int],
                   partitions: int = PARTITIONS) -> None:
    """Exact content, per-partition order equal to production order, consistent keying."""
    assert len(consumed) == len(produced), (len(consumed), len(produced))
    index_of = {m.value: i for i, m in enumerate(produced)}
    assert len(index_of) == len(produced), "test bug: values must be unique"
    seen = Counter(c.value for c in consumed)
    dupes = [v for v, n in seen.items() if n > 1]
    assert not dupes, f"duplicates: {dupes[:5]}"
    low, high = window
    by_partition: dict[int, list[Consumed]] = defaultdict(list)
    for c in consumed:
        assert c.value in index_of, f"unexpected message {c}"
        m = produced[index_of[c.value]]
        assert (c.key, c.value, c.headers) == (m.key, m.value, m.headers), (c, m)
        if m.timestamp is not None:
            assert c.timestamp == m.timestamp, (c, m)
        else:
            assert low <= c.timestamp <= high, (c.timestamp, window)
        assert c.create_time in (True, None), f"not CreateTime: {c}"
        by_partition[c.partition].append(c)
    assert set(by_partition) <= set(range(partitions))
    key_partitions: dict[bytes | None, set[int]] = defaultdict(set)
    for p, records in by_partition.items():
        offsets = [c.offset for c in records]
        assert offsets == list(range(len(records))), f"partition {p} offsets {offsets[:10]}"
        order = [index_of[c.value] for c in records]
        assert order == sorted(order), f"partition {p} is out of production order"
        for c in records:
            key_partitions[c.key].add(p)
    split = {k: v for k, v in key_partitions.items() if len(v) > 1}
    assert not split, f"keys spread over partitions: {split}"
    if delivered is not None:
        assert len(delivered) == len(produced)
        where = {(c.partition, c.offset): c.value for c in consumed}
        for i, d in enumerate(delivered):
            assert where.get((d.partition, d.offset)) == produced[i].value, (i, d)


def roundtrip(mock: MockClusterThread, producer: Client, consumer: Client, topic: str,
              count: int, compression: str | None = None) -> None:
    msgs = make_messages(producer, count, producer.name)
    t0 = int(time.time() * 1000)
    delivered = producer.produce(mock.bootstrap_servers, topic, msgs, compression)
    t1 = int(time.time() * 1000)
    consumed = consumer.consume(mock.bootstrap_servers, topic, PARTITIONS, count)
    check_consumed(msgs, consumed, delivered, (t0, t1))


# -- tests -----------------------------------------------------------------------------------

@pytest.mark.parametrize("client_name", CLIENT_NAMES)
def test_metadata(mock: MockClusterThread, client_factory: Callable[[str], Client],
                  topic_name: Callable[[str], str], client_name: str) -> None:
    client = client_factory(client_name)
    first, second = topic_name("a"), topic_name("b")
    mock.call(mock.cluster.create_topic, first, 3)
    mock.call(mock.cluster.create_topic, second, 1, 2)
    moved_to = mock.call(mock.cluster.elect_leader, first, 1)  # leader moves, epoch 1
    seen = client.metadata(mock.bootstrap_servers)
    expected = mock.call(cluster_meta, mock.cluster)
    assert expected.topics[first][1].leader == moved_to
    assert expected.topics[first][1].leader_epoch == 1
    assert sorted(seen.brokers) == [0, 1, 2]
    assert seen == as_seen_by(expected, seen)
    if client_name == "kafka-python":  # the one that exposes leader epochs
        assert seen.topics[first][1].leader_epoch == 1
        assert seen.topics[first][0].leader_epoch == 0


@pytest.mark.parametrize("client_name", CLIENT_NAMES)
def test_create_topic(mock: MockClusterThread, client_factory: Callable[[str], Client],
                      topic_name: Callable[[str], str], client_name: str) -> None:
    client = client_factory(client_name)
    name = topic_name()
    create_topic(mock, client, name, 3)
    topic = mock.call(lambda: mock.cluster.image.topics[name])
    assert all(len(p.replicas) == 3 and p.leader in p.replicas and p.leader_epoch == 0
               for p in topic.partitions.values())
    seen = client.metadata(mock.bootstrap_servers)
    assert sorted(seen.topics[name]) == [0, 1, 2]
    assert {i: p.leader for i, p in seen.topics[name].items()} == {
        i: p.leader for i, p in topic.partitions.items()}


def _codec_params() -> list[object]:
    return [pytest.param(client_name, codec, id=f"{client_name}-{codec or 'none'}")
            for client_name in CLIENT_NAMES for codec in (None, *CODECS)]


@pytest.mark.parametrize(("client_name", "compression"), _codec_params())
def test_produce_consume(mock: MockClusterThread, client_factory: Callable[[str], Client],
                         topic_name: Callable[[str], str], client_name: str,
                         compression: str | None) -> None:
    client = client_factory(client_name)
    assert compression is None or compression in client.codecs
    topic = topic_name()
    create_topic(mock, client, topic)
    roundtrip(mock, client, client, topic, MESSAGES, compression)
    # All stored batches are CreateTime (kcat's -f output cannot show the type).
    assert mock.call(_stored_timestamp_types, mock.cluster, topic) == {0}
    if compression is None:
        return
    codes = mock.call(_stored_compression, mock.cluster, topic)
    # Clients send a batch uncompressed when compressing does not make it smaller
    # (kafka-python's _maybe_compress: a first single-record batch, typically), so a few
    # records may be stored uncompressed; the bulk must be in the codec asked for.
    wanted = _CODEC_IDS[compression]
    assert set(codes) <= {0, wanted} and codes.get(wanted, 0) >= MESSAGES // 2, codes


_CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _stored_compression(cluster: Cluster, name: str) -> dict[int, int]:
    """Records stored per compression codec (from the stored batches' headers)."""
    from kafka_protocol_codec.record_batches import BatchHeader

    topic = cluster.image.topics[name]
    out: Counter[int] = Counter()
    for index in topic.partitions:
        log = cluster.log(topic.topic_id, index)
        assert log is not None
        for b in log.batches:
            header = BatchHeader.parse(b.data)
            out[header.compression] += header.record_count
    return dict(out)


def _stored_timestamp_types(cluster: Cluster, name: str) -> set[int]:
    from kafka_protocol_codec.record_batches import BatchHeader

    topic = cluster.image.topics[name]
    return {BatchHeader.parse(b.data).timestamp_type
            for index in topic.partitions
            for b in cluster.log(topic.topic_id, index).batches}  # type: ignore[union-attr]


@pytest.mark.parametrize("client_name", CLIENT_NAMES)
def test_codec_libraries_installed(client_factory: Callable[[str], Client],
                                   client_name: str) -> None:
    """Every codec the round trips use is really available to the client (a missing
    optional library must fail loudly here, not be skipped)."""
    missing: list[str] = []
    if client_name == "aiokafka":
        import aiokafka.codec as codec

        missing = [c for c in CODECS if not getattr(codec, f"has_{c}")()]
        hint = "aiokafka uses cramjam (a mockbroker dependency)"
    elif client_name == "kafka-python":
        import kafka.codec as codec

        missing = [c for c in CODECS if not getattr(codec, f"has_{c}")()]
        hint = "kafka-python needs python-snappy, lz4 and zstandard (the test extra)"
    elif client_name == "confluent-kafka":
        from confluent_kafka import KafkaException, Producer

        # librdkafka refuses a builtin.features value naming a feature it was built without
        for c in CODECS:
            try:
                close_confluent(Producer({"builtin.features": c, "log_level": 0}))
            except KafkaException:
                missing.append(c)
        hint = "the confluent-kafka wheel's librdkafka was built without them"
    else:
        import subprocess

        client = client_factory(client_name)
        assert isinstance(client, KcatClient)
        out = subprocess.run([client.path, "-V"], capture_output=True, text=True,
                             timeout=30, check=False).stdout
        line = next((ln for ln in out.splitlines() if "builtin.features" in ln), "")
        missing = [c for c in ("snappy", "lz4", "zstd") if c not in line]
        hint = f"kcat -V says: {line.strip()}"
    assert not missing, f"{client_name} lacks codecs {missing}: {hint}"
