"""Version emulation (--kafka-version / MockCluster(kafka_version=...)).

The tables' facts are checked for internal consistency here (their sources are named in
mockbroker/versions.py); what the broker then advertises is checked over the wire with the
raw codec client (exact ranges, dropped keys, refusals above the cap), and real clients are
shown to negotiate down: kafka-python infers the emulated release from ApiVersions, and
confluent-kafka produces and consumes against an emulated 2.8 and 4.0 broker.
"""

from __future__ import annotations

import itertools

import pytest
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.embedded import MockCluster, MockClusterThread
from mockbroker.handlers import REGISTRY, advertised_versions
from mockbroker.handlers.telemetry import TELEMETRY_APIS
from mockbroker.versions import RELEASES, UnknownKafkaVersion, api_caps, normalize
from tests.support.rawclient import ConnectionClosed, connect_broker

API_VERSIONS, METADATA, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 18, 3, 65, 66
V3_BODY = {"client_software_name": "versions-test", "client_software_version": "1"}


# -- the tables ------------------------------------------------------------------------------

def test_releases_and_names() -> None:
    assert RELEASES == ("2.8", "3.0", "3.6", "3.9", "4.0")
    assert normalize("3.6.2") == normalize("v3.6") == "3.6"
    for bad in ("3.7", "2", "3.6.x", "latest", ""):
        with pytest.raises(UnknownKafkaVersion, match=r"emulated releases: 2\.8, 3\.0"):
            normalize(bad)


@pytest.mark.parametrize("release", RELEASES)
def test_table_is_well_formed(release: str) -> None:
    caps = api_caps(release)
    assert {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19, 22} <= set(caps)  # the core APIs
    assert all(0 <= low <= high for low, high in caps.values())
    assert caps is not api_caps(release)  # callers get their own copy


def test_versions_only_grow_between_releases() -> None:
    for older, newer in itertools.pairwise(RELEASES):
        old, new = api_caps(older), api_caps(newer)
        for key in set(old) & set(new):
            assert new[key][1] >= old[key][1], (key, older, old[key], newer, new[key])


def test_known_facts() -> None:
    """Spot checks against the Kafka release notes and KIPs."""
    assert DESCRIBE_TRANSACTIONS not in api_caps("2.8")  # KIP-664 tooling came in 3.0
    assert api_caps("3.0")[DESCRIBE_TRANSACTIONS] == (0, 0)
    assert api_caps("3.6")[8] == (0, 8)  # OffsetCommit v9 was unstable in 3.6
    assert api_caps("3.9")[1] == (0, 17)
    four = api_caps("4.0")
    # KIP-896 baselines; Produce 0-2 still advertised (KAFKA-18659)
    assert (four[0], four[1], four[2], four[8], four[11]) == ((0, 12), (4, 17), (1, 10),
                                                              (2, 9), (2, 9))
    assert 4 not in four  # LeaderAndIsr: KRaft only


@pytest.mark.parametrize("release", RELEASES)
def test_advertised_is_the_intersection(release: str) -> None:
    caps = api_caps(release)
    advertised = {k: (lo, hi) for k, lo, hi in advertised_versions(caps)}
    for key, spec in REGISTRY.items():
        if key not in caps:
            assert key not in advertised  # the release lacked it
            continue
        low, high = max(spec.min_version, caps[key][0]), min(spec.max_version, caps[key][1])
        assert advertised.get(key) == ((low, high) if low <= high else None)


# -- over the wire ---------------------------------------------------------------------------

async def _api_versions(mc: MockCluster, version: int = 3) -> dict[int, tuple[int, int]]:
    async with await connect_broker(mc, 0) as client:
        body = await client.request(API_VERSIONS, version, V3_BODY if version >= 3 else {})
    assert body.error_code == ErrorCode.NONE
    return {e.api_key: (e.min_version, e.max_version) for e in body.api_keys}


async def test_kafka_28_advertisement() -> None:
    async with MockCluster(brokers=1, kafka_version="2.8") as mc:
        got = await _api_versions(mc)
    assert got[0] == (0, 9) and got[1] == (0, 12) and got[2] == (0, 6)
    assert got[METADATA] == (0, 11) and got[9] == (0, 7) and got[10] == (0, 3)
    assert got[11] == (0, 7) and got[API_VERSIONS] == (0, 3) and got[61] == (0, 0)
    assert DESCRIBE_TRANSACTIONS not in got and LIST_TRANSACTIONS not in got
    assert 68 not in got and 69 not in got  # no KIP-848 consumer groups in 2.8


async def test_kafka_40_advertisement() -> None:
    async with MockCluster(brokers=1, kafka_version="4.0") as mc:
        got = await _api_versions(mc)
    assert got[0] == (0, 9)  # mockbroker handles up to Produce v9
    assert got[1] == (4, 12) and got[2] == (1, 7) and got[8] == (2, 9) and got[11] == (2, 9)
    assert got[19] == (2, 7) and got[20] == (1, 6) and got[23] == (2, 4) and got[32] == (1, 4)
    assert got[LIST_TRANSACTIONS] == (0, 1)
    assert got[68] == (0, 1) and got[69] == (0, 0)  # KIP-848; 4.0 has 69 v1, not handled


async def test_without_emulation_everything_is_advertised() -> None:
    """Everything handled; the KIP-714 telemetry APIs only with client telemetry enabled."""
    everything = {k: (lo, hi) for k, lo, hi in advertised_versions()}
    async with MockCluster(brokers=1) as mc:
        got = await _api_versions(mc)
    assert got == {k: v for k, v in everything.items() if k not in TELEMETRY_APIS}
    async with MockCluster(brokers=1, client_telemetry=True) as mc:
        got = await _api_versions(mc)
    assert got == everything and TELEMETRY_APIS <= set(got)


async def test_requests_outside_the_emulated_ranges_are_refused() -> None:
    async with MockCluster(brokers=1, kafka_version="3.0") as mc:
        async with await connect_broker(mc, 0) as client:  # Metadata v12 is newer than 3.0
            await client.send(METADATA, 12, {"topics": None})
            assert await client.is_closed()
        async with await connect_broker(mc, 0) as client:  # and so is ApiVersions v4
            correlation_id = await client.send(API_VERSIONS, 4, V3_BODY)
            response = await client.receive(API_VERSIONS, 0, correlation_id)
            assert response.body.error_code == ErrorCode.UNSUPPORTED_VERSION
            assert {e.api_key: e.max_version for e in response.body.api_keys}[API_VERSIONS] == 3
        async with await connect_broker(mc, 0) as client:  # v11 is fine
            body = await client.request(METADATA, 11, {"topics": None,
                                                       "allow_auto_topic_creation": False,
                                                       "include_topic_authorized_operations":
                                                           False})
            assert len(body.brokers) == 1
    async with MockCluster(brokers=1, kafka_version="2.8") as mc:
        async with await connect_broker(mc, 0) as client:  # an API 2.8 did not have
            await client.send(LIST_TRANSACTIONS, 0, {"state_filters": [],
                                                     "producer_id_filters": []})
            with pytest.raises(ConnectionClosed):
                await client.read_frame(timeout=5)


def test_bad_version_fails_at_construction() -> None:
    with pytest.raises(ValueError, match=r"unknown Kafka version '3\.7'"):
        MockCluster(kafka_version="3.7")
    with pytest.raises(ValueError, match="unknown Kafka version"):
        MockClusterThread(kafka_version="0.11")
    with pytest.raises(ValueError, match="not both"):
        MockCluster(kafka_version="3.0", api_caps={0: (0, 9)})


# -- real clients ----------------------------------------------------------------------------

@pytest.mark.clients
# unemulated: DescribeAcls v3 is kafka-python's probe for 3.3; its next (3.4) is LeaderAndIsr
# v7, a broker-internal API mockbroker never advertises
@pytest.mark.parametrize(("release", "inferred"), [(None, (3, 3)), ("2.8", (2, 8)),
                                                   ("3.0", (3, 0))])
def test_kafka_python_infers_the_emulated_release(release: str | None,
                                                   inferred: tuple[int, int]) -> None:
    """kafka-python picks its protocol level from ApiVersions (its own table of what each
    Kafka release advertised), so it sees the emulated broker as that release."""
    from kafka import KafkaConsumer

    with MockClusterThread(brokers=1, kafka_version=release) as mock:
        consumer = KafkaConsumer(bootstrap_servers=mock.bootstrap_servers,
                                 request_timeout_ms=10000)
        try:
            assert consumer.config["api_version"] == inferred
        finally:
            consumer.close()


@pytest.mark.clients
@pytest.mark.parametrize("release", ["2.8", "4.0"])
def test_confluent_round_trip_against_an_emulated_broker(release: str) -> None:
    from confluent_kafka import Consumer, Producer

    with MockClusterThread(brokers=3, kafka_version=release, trace_buffer=5000) as mock:
        mock.control.create_topic("emulated", partitions=2)
        producer = Producer({"bootstrap.servers": mock.bootstrap_servers, "linger.ms": 0})
        sent = [f"{release}-{i}".encode() for i in range(20)]
        for value in sent:
            producer.produce("emulated", value)
        assert producer.flush(15) == 0
        consumer = Consumer({"bootstrap.servers": mock.bootstrap_servers, "group.id": "g",
                             "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe(["emulated"])
            got: list[bytes] = []
            for _ in range(60):
                if len(got) >= len(sent):
                    break
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
        finally:
            consumer.close()
        assert sorted(got) == sorted(sent)
        caps = api_caps(release)
        used = mock.control.trace(None)["requests"]
        for record in used:  # every request the client sent was within the release's range
            low, high = caps[record["api_key"]]
            assert low <= record["version"] <= high, record
            assert record["outcome"] == "ok", record
        assert {r["api"] for r in used} >= {"Produce", "Fetch", "JoinGroup", "SyncGroup"}
