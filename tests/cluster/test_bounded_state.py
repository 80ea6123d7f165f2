"""What the cluster keeps per thing a client names (client id, address, group, producer,
telemetry instance, fetch session) stays bounded however many of them a client makes up
(issue 24: state grew through a fuzz run of a million mutated frames). Each table is
bounded as Kafka bounds it where Kafka has a bound: measurements expire once they no longer
count, idle instances and empty groups are removed on Kafka's schedule, caches have Kafka's
size. On a manual clock, driven by the same expiry calls the cluster's tick makes.
"""

from __future__ import annotations

import pytest
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import Cluster, ClusterConfig, ManualClock
from mockbroker.cluster.client_telemetry import telemetry_receiver
from mockbroker.cluster.client_telemetry.telemetry_receiver import ClientTelemetry
from mockbroker.cluster.groups.classic_group_model import GroupState, JoinRequest, JoinResult
from mockbroker.cluster.groups.classic_groups import DEFAULT_CLEANUP_INTERVAL_MS
from mockbroker.cluster.groups.consumer_group_model import HeartbeatRequest
from mockbroker.cluster.groups.offset_store import OffsetCommitEntry
from mockbroker.cluster.kafka_uuid import ZERO_UUID
from mockbroker.cluster.log.fetch_sessions import MAX_SESSIONS, FetchSessionCache
from mockbroker.cluster.producers.producer_state import (
    BatchMeta,
    ProducerEntry,
    expire_producers,
    record_batch,
)
from mockbroker.cluster.quotas.mutation_quota import ControllerMutationQuotas
from mockbroker.cluster.quotas.quota_manager import (
    CLIENT_ID,
    PRODUCE,
    SAMPLE_MS,
    SAMPLES,
    THROTTLE_LOG_SIZE,
    QuotaManager,
)
from mockbroker.server.connection_throttle import MAX_TRACKED_IPS, ConnectionQuotas
from tests.support import otlp

CLIENTS = 3000


def test_client_quota_sensors_go_once_nothing_counts_in_the_window() -> None:
    """A sensor per (user, client id, quota) while its samples count; one that records again
    after `expire` measures what a kept one would have: nothing left in the window."""
    clock = ManualClock()
    entities = {((CLIENT_ID, None),): {PRODUCE: 1000.0}}  # every client id: 1000 B/s
    quotas = QuotaManager(clock, lambda: entities, lambda _broker: entities,
                          lambda _entity, _ops: None)
    meter = quotas.broker(0)
    for n in range(CLIENTS):
        meter.record("ANONYMOUS", f"client-{n}", PRODUCE, 100.0)
    assert quotas.sensor_count() == CLIENTS
    quotas.expire(clock.now_ms())
    assert quotas.sensor_count() == CLIENTS  # all still count
    throttle = meter.record("ANONYMOUS", "client-0", PRODUCE, 20_000.0)
    assert throttle > 0
    assert len(meter.last_throttles) == 1
    clock.advance(SAMPLES * SAMPLE_MS)
    quotas.expire(clock.now_ms())
    assert quotas.sensor_count() == 0
    fresh = meter.record("ANONYMOUS", "another", PRODUCE, 20_100.0)
    assert meter.record("ANONYMOUS", "client-0", PRODUCE, 20_100.0) == fresh
    for n in range(THROTTLE_LOG_SIZE + 500):  # every one of them throttled
        meter.record("ANONYMOUS", f"heavy-{n}", PRODUCE, 50_000.0)
    assert len(meter.last_throttles) == THROTTLE_LOG_SIZE
    assert ("ANONYMOUS", f"heavy-{THROTTLE_LOG_SIZE + 499}", PRODUCE) in meter.last_throttles


def test_controller_mutation_buckets_go_once_full_again() -> None:
    clock = ManualClock()
    mutations = ControllerMutationQuotas(clock, lambda _user, _client: 10.0)  # burst 110
    for n in range(CLIENTS):
        assert mutations.open("ANONYMOUS", f"c-{n}", strict=True).record(50)
    assert mutations.bucket_count == CLIENTS
    clock.advance(4000)  # 60 -> 100 of 110: not full yet
    mutations.expire(clock.now_ms())
    assert mutations.bucket_count == CLIENTS
    clock.advance(1000)
    mutations.expire(clock.now_ms())
    assert mutations.bucket_count == 0
    assert mutations.tokens("ANONYMOUS", "c-0") is None  # as for a client never seen


def test_connection_rates_and_counts_per_ip_stay_bounded() -> None:
    clock = ManualClock()
    # a connection_creation_rate of 0.5 truncates to 0 (as in Kafka): every one throttled
    quotas = ConnectionQuotas(clock, lambda _ip: 0.5, lambda: {"max.connections.per.ip": "0"})
    ips = [f"10.{n // 65536}.{n // 256 % 256}.{n % 256}" for n in range(CLIENTS)]
    for ip in ips:
        assert quotas.ip_throttle_ms("PLAINTEXT", ip) > 0
        assert not quotas.open("PLAINTEXT", ip)  # max.connections.per.ip 0: refused
    assert quotas.tracked_ips == CLIENTS
    assert len(quotas.throttled_by_ip) == len(quotas.refused_by_ip) == MAX_TRACKED_IPS
    assert quotas.throttled_by_ip[ips[-1]] == quotas.refused_by_ip[ips[-1]] == 1
    clock.advance(SAMPLES * SAMPLE_MS)
    quotas.expire(clock.now_ms())
    assert quotas.tracked_ips == 0
    assert quotas.rate(ips[0]) == 0.0


def test_telemetry_instances_expire_as_kafkas_do() -> None:
    """Kafka's ClientMetricsManager forgets an instance not heard of for max(60 s, 3 push
    intervals); one that comes back after that is evaluated afresh."""
    clock = ManualClock()
    t = ClientTelemetry(clock, enabled=True)
    t.set_subscription("fast", ["org.apache.kafka."], 1000)  # 3 intervals: 3 s < 60 s
    fast = [t.get_subscriptions(0, ZERO_UUID, f"c-{n}", f"10.0.0.1:{n}") for n in range(CLIENTS)]
    assert len(t.instances) == min(CLIENTS, telemetry_receiver.MAX_CLIENTS)
    clock.advance(telemetry_receiver.INSTANCE_EXPIRY_MS - telemetry_receiver.EXPIRE_EVERY_MS)
    t.expire(clock.now_ms())
    assert len(t.instances) == min(CLIENTS, telemetry_receiver.MAX_CLIENTS)
    clock.advance(telemetry_receiver.EXPIRE_EVERY_MS)
    t.expire(clock.now_ms())
    assert len(t.instances) == 0
    again = t.get_subscriptions(0, fast[-1].client_instance_id, "c", "10.0.0.1:1")
    assert again.error_code == ErrorCode.NONE  # not throttled: a new instance
    t.delete_subscription("fast")
    t.set_subscription("slow", ["org.apache.kafka."], 60_000)  # 3 intervals: 180 s
    slow = t.get_subscriptions(0, ZERO_UUID, "s", "10.0.0.2:1")
    clock.advance(120_000)
    t.expire(clock.now_ms())
    assert (0, slow.client_instance_id) in t.instances
    clock.advance(60_000)
    t.expire(clock.now_ms())
    assert (0, slow.client_instance_id) not in t.instances


def test_client_software_is_forgotten_with_its_connection() -> None:
    t = ClientTelemetry(ManualClock(), enabled=True)
    for n in range(CLIENTS):
        t.note_client_software(f"10.0.0.1:{n}", "librdkafka", "2.4.0")
    for n in range(CLIENTS):
        t.connection_closed(f"10.0.0.1:{n}")
    assert len(t._software) == 0


def test_pushed_metrics_are_kept_up_to_a_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoded pushes are kept for MAX_KEPT_BYTES of decompressed metrics in all: the least
    recently active clients' go first, then the oldest of the client left."""
    payload = otlp.metrics_data([otlp.metric("org.apache.kafka.m", [otlp.number_point(1.0)])])
    monkeypatch.setattr(telemetry_receiver, "MAX_KEPT_BYTES", 10 * len(payload))
    clock = ManualClock()
    t = ClientTelemetry(clock, enabled=True)
    t.set_subscription("all", ["*"], 100)
    for n in range(30):
        answer = t.get_subscriptions(0, ZERO_UUID, f"c-{n}", "10.0.0.1:1")
        assert answer.instance is not None
        for _ in range(2):
            clock.advance(100)
            assert t.push(0, answer.client_instance_id, answer.instance.subscription_id, False,
                          0, payload, f"c-{n}", "10.0.0.1:1") == ErrorCode.NONE
    assert t.kept_bytes <= 10 * len(payload)
    assert len(t.clients) == 5  # the five most recent, two pushes each
    assert t.kept_bytes == sum(p.kept_bytes for r in t.clients.values() for p in r.pushes)


def test_fetch_sessions_are_capped_and_the_used_ones_stay() -> None:
    """At most MAX_SESSIONS (Kafka's max.incremental.fetch.session.cache.slots default); a
    new one evicts the least recently used, so a consumer that keeps fetching keeps its
    session however many others are opened and abandoned."""
    cache = FetchSessionCache()
    mine = cache.resolve(0, 0).session
    assert mine is not None
    for n in range(3 * MAX_SESSIONS):
        assert cache.resolve(0, 0).error == ErrorCode.NONE  # a session opened, then left
        if n % 100 == 0:
            used = cache.resolve(mine.session_id, mine.epoch)
            assert used.error == ErrorCode.NONE and used.session is mine
            mine.epoch += 1
    assert len(cache.sessions) == MAX_SESSIONS
    assert cache.resolve(mine.session_id, mine.epoch).session is mine


GROUPS = 300


def test_groups_left_empty_without_offsets_are_removed_on_kafkas_schedule() -> None:
    """A group joined under a made-up id and left (the member's session expired) is kept
    only while it has offsets: every offsets.retention.check.interval.ms (10 min) the
    empty ones without offsets go, classic and consumer alike, as Kafka removes them."""
    clock = ManualClock()
    c = Cluster(ClusterConfig(brokers=1, group_initial_rebalance_delay_ms=0), clock)
    c.start_broker(0, "127.0.0.1", 9092)
    answers: list[JoinResult] = []
    for n in range(GROUPS):
        c.groups.join(JoinRequest(f"classic-{n}", "", None, "client", "/127.0.0.1", 10_000,
                                  10_000, "consumer", (("range", b""),), False, False),
                      answers.append)
        heartbeat = HeartbeatRequest(f"consumer-{n}", "", 0, rebalance_timeout_ms=10_000,
                                     subscribed_topic_names=("t",), owned=frozenset())
        assert c.consumer_groups.heartbeat(heartbeat).error == ErrorCode.NONE
    assert len(answers) == GROUPS and all(a.error == ErrorCode.NONE for a in answers)
    assert (len(c.groups.groups), len(c.consumer_groups.groups)) == (GROUPS, GROUPS)
    clock.advance(60_000)  # every member's session is over
    c.tick()
    assert all(g.state is GroupState.EMPTY for g in c.groups.groups.values())
    assert c.groups.commit_offsets("classic-0", "", None, -1, [
        OffsetCommitEntry("t", 0, 5, -1, "")]) == [ErrorCode.NONE]  # kept for its offsets
    assert (len(c.groups.groups), len(c.consumer_groups.groups)) == (GROUPS, GROUPS)
    clock.advance(DEFAULT_CLEANUP_INTERVAL_MS)
    c.tick()
    assert list(c.groups.groups) == ["classic-0"] and c.consumer_groups.groups == {}


def test_producer_state_expires_after_producer_id_expiration_ms() -> None:
    """Kafka's removeExpiredProducers: a producer with no transaction open on the partition
    is forgotten once its last batch's timestamp is producer.id.expiration.ms old; one in
    a transaction, or known only from a marker (no batches), is kept."""
    states: dict[int, ProducerEntry] = {}
    for pid in range(CLIENTS):
        record_batch(states, pid, 0, BatchMeta(0, 0, pid, pid, timestamp=1_000 * pid))
    record_batch(states, CLIENTS, 0, BatchMeta(0, 0, 0, 0, timestamp=0), transactional=True)
    states[CLIENTS + 1] = ProducerEntry(3)
    assert expire_producers(states, 1_000 * 1_000 + 500, 1_000 * 1_000) == 1
    assert 0 not in states and 1 in states  # only pid 0 was that old
    assert expire_producers(states, 10**12, 1_000) == CLIENTS - 1
    assert sorted(states) == [CLIENTS, CLIENTS + 1]


def test_replicas_forget_idle_producers_on_the_check_interval() -> None:
    clock = ManualClock()
    c = Cluster(ClusterConfig(brokers=3, broker_properties={
        "producer.id.expiration.ms": "60000",
        "producer.id.expiration.check.interval.ms": "10000"}), clock)
    for b in range(3):
        c.start_broker(b, "127.0.0.1", 9092 + b)
    c.create_topic("t", 1, 3)
    part = c.image.partition("t", 0)
    assert part is not None
    for pid in range(GROUPS):
        batch = build_batch([RecordSpec(value=b"v")], producer_id=10_000 + pid,
                            producer_epoch=0, base_sequence=0, base_timestamp=clock.now_ms())
        assert c.produce(c.brokers[part.leader], "t", 0, batch, acks=-1).error == \
            ErrorCode.NONE
    replicas = c.replicas("t", 0)
    assert replicas is not None
    assert [len(log.producer_states) for log in replicas.logs.values()] == [GROUPS] * 3
    clock.advance(50_000)
    c.tick()
    assert [len(log.producer_states) for log in replicas.logs.values()] == [GROUPS] * 3
    clock.advance(10_000)
    c.tick()
    assert [len(log.producer_states) for log in replicas.logs.values()] == [0] * 3


def test_the_group_cleanup_runs_every_offsets_retention_check_interval() -> None:
    clock = ManualClock()
    c = Cluster(ClusterConfig(brokers=1, broker_properties={
        "offsets.retention.check.interval.ms": "10000"}), clock)
    c.start_broker(0, "127.0.0.1", 9092)
    heartbeat = HeartbeatRequest("short-lived", "", 0, rebalance_timeout_ms=10_000,
                                 subscribed_topic_names=("t",), owned=frozenset())
    assert c.consumer_groups.heartbeat(heartbeat).error == ErrorCode.NONE
    clock.advance(60_000)  # the member's session is over; a cleanup has come due
    c.tick()
    assert c.consumer_groups.groups == {}
