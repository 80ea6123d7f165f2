"""Client telemetry (KIP-714) in the cluster model, on a ManualClock, without sockets:
subscriptions, instance ids, subscription ids, throttling, push validation and decoding."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_protocol_codec.compression import Compression, compress
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster, ClusterConfig, ClusterError, ManualClock
from mockbroker.cluster.client_telemetry.otlp import OtlpError, decode_metrics_data
from mockbroker.cluster.client_telemetry.telemetry_receiver import (
    ALL_METRICS,
    DEFAULT_PUSH_INTERVAL_MS,
    PUSH_HISTORY,
    ZERO_UUID,
    ClientTelemetry,
)
from tests.support import otlp

ADDRESS = "127.0.0.1:50000"
LATENCY = "org.apache.kafka.producer.node.request.latency.avg"


def _telemetry(**kwargs: int) -> tuple[ClientTelemetry, ManualClock]:
    clock = ManualClock()
    return ClientTelemetry(clock, **kwargs), clock


def _payload(*names: str, value: float = 1.5) -> bytes:
    return otlp.metrics_data([otlp.metric(n, [otlp.number_point(value, {"node.id": 1})])
                              for n in names], resource={"client_rack": "r1"})


def _get(t: ClientTelemetry, instance: uuid.UUID = ZERO_UUID, broker: int = 0,
         client_id: str = "app"):
    return t.get_subscriptions(broker, instance, client_id, ADDRESS)


def test_disabled_by_default_and_enabled_by_a_subscription() -> None:
    cluster = Cluster(ClusterConfig(brokers=1), ManualClock())
    assert cluster.telemetry.enabled is False
    cluster.telemetry.set_subscription("all", [ALL_METRICS], 1000)
    assert cluster.telemetry.enabled is True
    cluster.reset()
    assert cluster.telemetry.enabled is False and cluster.telemetry.subscriptions == {}
    on = Cluster(ClusterConfig(brokers=1, client_telemetry=True), ManualClock())
    on.reset()
    assert on.telemetry.enabled is True


def test_zero_id_gets_a_fresh_instance_id_and_no_metrics_without_subscriptions() -> None:
    t, _ = _telemetry()
    first, second = _get(t), _get(t)
    assert first.error_code == second.error_code == ErrorCode.NONE
    assert first.client_instance_id != ZERO_UUID
    assert first.client_instance_id != second.client_instance_id
    assert first.instance is not None
    assert first.instance.metrics == ()
    assert first.instance.push_interval_ms == DEFAULT_PUSH_INTERVAL_MS


def test_matching_subscriptions_union_prefixes_and_take_the_shortest_interval() -> None:
    t, _ = _telemetry()
    t.set_subscription("producers", ["org.apache.kafka.producer."], 5000,
                       {"client_software_name": "confluent-kafka-.*"})
    t.set_subscription("latency", ["org.apache.kafka.producer.node."], 2000)
    t.set_subscription("other", ["org.apache.kafka.consumer."], 100, {"client_id": "nobody"})
    t.note_client_software(ADDRESS, "confluent-kafka-python", "2.16.1")
    answer = _get(t)
    assert answer.instance is not None
    assert answer.instance.metrics == ("org.apache.kafka.producer.",
                                       "org.apache.kafka.producer.node.")
    assert answer.instance.push_interval_ms == 2000
    t.set_subscription("all", [ALL_METRICS], 3000)
    again = _get(t)
    assert again.instance is not None and again.instance.metrics == (ALL_METRICS,)


def test_invalid_subscriptions_are_refused() -> None:
    t, _ = _telemetry()
    for interval, match in ((99, None), (3_600_001, None), (1000, {"host": "x"}),
                            (1000, {"client_id": "("})):
        with pytest.raises(ClusterError) as info:
            t.set_subscription("s", ["org."], interval, match)
        assert info.value.code == ErrorCode.INVALID_CONFIG
    assert t.subscriptions == {} and t.enabled is False


def test_get_again_within_the_interval_is_throttled() -> None:
    t, clock = _telemetry()
    t.set_subscription("s", ["org."], 1000)
    first = _get(t)
    instance_id = first.client_instance_id
    assert _get(t, instance_id).error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    clock.advance(999)
    assert _get(t, instance_id).error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    clock.advance(1)
    assert _get(t, instance_id).error_code == ErrorCode.NONE


def test_push_cycle_records_decoded_metrics() -> None:
    t, clock = _telemetry()
    t.set_subscription("s", ["org.apache.kafka."], 1000)
    t.note_client_software(ADDRESS, "librdkafka", "2.16.1")
    answer = _get(t)
    assert answer.instance is not None
    instance_id, sub = answer.client_instance_id, answer.instance.subscription_id
    payload = compress(Compression.ZSTD, _payload(LATENCY, "org.apache.kafka.producer.x"))
    assert t.push(0, instance_id, sub, False, Compression.ZSTD, payload, "app",
                  ADDRESS) == ErrorCode.NONE
    record = t.client(instance_id)
    assert record is not None and record.push_count == 1
    assert record.identity.software_name == "librdkafka"
    data = record.last_metrics()
    assert data is not None
    assert data.names() == [LATENCY, "org.apache.kafka.producer.x"]
    assert data.resource_attributes == {"client_rack": "r1"}
    point = data.metrics[0].data_points[0]
    assert point.value == 1.5 and point.attributes == {"node.id": 1}
    assert record.metric_names() == {LATENCY, "org.apache.kafka.producer.x"}
    # the next push is due only a full interval after this one
    clock.advance(500)
    assert t.push(0, instance_id, sub, False, Compression.NONE, _payload(LATENCY), "app",
                  ADDRESS) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    clock.advance(500)
    assert t.push(0, instance_id, sub, False, Compression.NONE, _payload(LATENCY), "app",
                  ADDRESS) == ErrorCode.NONE


def test_changed_subscription_makes_the_old_id_unknown_and_get_answers_at_once() -> None:
    t, clock = _telemetry()
    t.set_subscription("s", ["org."], 1000)
    answer = _get(t)
    assert answer.instance is not None
    instance_id, old = answer.client_instance_id, answer.instance.subscription_id
    t.set_subscription("s", ["org.apache."], 1000)
    assert t.push(0, instance_id, old, False, 0, _payload(LATENCY), "app",
                  ADDRESS) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    clock.advance(1)  # well within the interval: the client re-fetches at once
    renewed = _get(t, instance_id)
    assert renewed.error_code == ErrorCode.NONE and renewed.instance is not None
    assert renewed.instance.subscription_id != old
    assert renewed.instance.metrics == ("org.apache.",)
    assert t.push(0, instance_id, renewed.instance.subscription_id, False, 0,
                  _payload(LATENCY), "app", ADDRESS) == ErrorCode.NONE


def test_subscription_id_is_the_same_on_every_broker() -> None:
    t, _ = _telemetry()
    t.set_subscription("s", ["org."], 1000)
    answer = _get(t, broker=0)
    assert answer.instance is not None
    on_other = _get(t, answer.client_instance_id, broker=2)
    assert on_other.error_code == ErrorCode.NONE  # broker 2 has its own view of the client
    assert on_other.instance is not None
    assert on_other.instance.subscription_id == answer.instance.subscription_id


def test_push_errors_in_kafkas_order() -> None:
    t, clock = _telemetry(max_bytes=200)
    t.set_subscription("s", ["org."], 1000)
    assert t.push(0, ZERO_UUID, 0, False, 0, b"", "app", ADDRESS) == ErrorCode.INVALID_REQUEST
    answer = _get(t)
    assert answer.instance is not None
    iid, sub = answer.client_instance_id, answer.instance.subscription_id
    assert t.push(0, iid, sub, False, 9, b"x", "app", ADDRESS) == \
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    clock.advance(1)
    assert _get(t, iid).error_code == ErrorCode.NONE  # that error lets it re-fetch at once
    big = _payload(*(f"org.metric.{i}" for i in range(20)))
    assert len(big) > 200
    assert t.push(0, iid, sub, False, 0, big, "app", ADDRESS) == ErrorCode.TELEMETRY_TOO_LARGE
    record = t.client(iid)
    assert record is not None
    assert [p.error_code for p in record.pushes] == [ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                                                    ErrorCode.TELEMETRY_TOO_LARGE]
    assert record.last_metrics() is None


def test_undecodable_payload_is_invalid_record() -> None:
    t, _ = _telemetry()
    t.set_subscription("s", ["org."], 1000)
    answer = _get(t)
    assert answer.instance is not None
    error = t.push(0, answer.client_instance_id, answer.instance.subscription_id, False,
                   Compression.GZIP, b"not gzip", "app", ADDRESS)
    assert error == ErrorCode.INVALID_RECORD
    record = t.client(answer.client_instance_id)
    assert record is not None and record.pushes[-1].decode_error


def test_terminating_push_is_accepted_early_and_ends_the_instance() -> None:
    t, clock = _telemetry()
    t.set_subscription("s", ["org."], 60_000)
    answer = _get(t)
    assert answer.instance is not None
    iid, sub = answer.client_instance_id, answer.instance.subscription_id
    assert t.push(0, iid, sub, False, 0, _payload(LATENCY), "app", ADDRESS) == ErrorCode.NONE
    clock.advance(10)  # far inside the interval: only a terminating push gets through
    assert t.push(0, iid, sub, True, 0, _payload(LATENCY), "app", ADDRESS) == ErrorCode.NONE
    clock.advance(60_000)
    assert t.push(0, iid, sub, True, 0, _payload(LATENCY), "app", ADDRESS) == \
        ErrorCode.INVALID_REQUEST
    record = t.client(iid)
    assert record is not None
    assert [p.terminating for p in record.pushes] == [False, True, True]


def test_push_history_is_bounded_per_client() -> None:
    t, clock = _telemetry()
    t.set_subscription("s", ["org."], 100)
    answer = _get(t)
    assert answer.instance is not None
    for i in range(PUSH_HISTORY + 5):
        clock.advance(100)
        assert t.push(0, answer.client_instance_id, answer.instance.subscription_id, False,
                      0, _payload(f"org.m{i}"), "app", ADDRESS) == ErrorCode.NONE
    record = t.client(answer.client_instance_id)
    assert record is not None
    assert record.push_count == PUSH_HISTORY + 5 and len(record.pushes) == PUSH_HISTORY
    assert record.pushes[0].data is not None and record.pushes[0].data.names() == ["org.m5"]


def test_otlp_decoding_of_sums_ints_nested_attributes_and_bad_input() -> None:
    payload = otlp.metrics_data(
        [otlp.metric("org.c", [otlp.number_point(7, {"tags": ["a", 2], "ok": True})],
                     kind="sum")],
        resource={"transactional_id": "tx"}, scope=("rdkafka#producer-1", "2.16.1"))
    data = decode_metrics_data(payload)
    (metric,) = data.metrics
    assert (metric.type, metric.temporality, metric.monotonic) == ("sum", "delta", True)
    assert metric.data_points[0].value == 7
    assert metric.data_points[0].attributes == {"tags": ["a", 2], "ok": True}
    assert data.scopes == (("rdkafka#producer-1", "2.16.1"),)
    assert metric.resource == (("transactional_id", "tx"),)
    for bad in (payload[:-3], b"\x0a\xff\xff\xff\xff\x0f", b"\x0b"):
        with pytest.raises(OtlpError):
            decode_metrics_data(bad)


VALID = otlp.metrics_data(
    [otlp.metric("org.a", [otlp.number_point(1.0, {"k": [1, "x"]})]),
     otlp.metric("org.b", [otlp.number_point(2)], kind="sum")], resource={"r": "v"})


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.binary(max_size=200),
    st.builds(lambda cut, flip: VALID[:cut] + bytes([flip]) + VALID[cut + 1:],
              st.integers(0, len(VALID) - 1), st.integers(0, 255))))
def test_otlp_decoder_never_fails_other_than_otlp_error(data: bytes) -> None:
    """What a client pushes is untrusted: damaged or random input decodes or raises
    OtlpError (answered INVALID_RECORD), nothing else."""
    try:
        decoded = decode_metrics_data(data)
    except OtlpError:
        return
    assert all(isinstance(m.name, str) for m in decoded.metrics)
