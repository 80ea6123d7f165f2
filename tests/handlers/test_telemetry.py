"""GetTelemetrySubscriptions (71) and PushTelemetry (72) through the codec, in-process:
what a KIP-714 client reads off the wire, on a manual clock."""

from __future__ import annotations

import uuid

from kafka_protocol_codec.compression import Compression, compress
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.kafka_uuid import ZERO_UUID
from tests.support import otlp
from tests.support.handlers import HandlerHarness

GET, PUSH, API_VERSIONS = 71, 72, 18
METRIC = "org.apache.kafka.producer.connection.creation.rate"


def _versions(harness: HandlerHarness) -> dict[int, tuple[int, int]]:
    body = harness.call_now(0, API_VERSIONS, 3, {"client_software_name": "librdkafka",
                                                 "client_software_version": "2.16.1"})
    assert body is not None and body.error_code == ErrorCode.NONE
    return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}


def _subscribe(harness: HandlerHarness, instance: uuid.UUID = ZERO_UUID):
    body = harness.call_now(0, GET, 0, {"client_instance_id": instance})
    assert body is not None
    return body


def _push(harness: HandlerHarness, instance: uuid.UUID, subscription: int, *,
          terminating: bool = False, compression: int = Compression.NONE,
          payload: bytes | None = None) -> int:
    data = otlp.metrics_data([otlp.metric(METRIC, [otlp.number_point(0.5)])]) \
        if payload is None else payload
    body = harness.call_now(0, PUSH, 0, {
        "client_instance_id": instance, "subscription_id": subscription,
        "terminating": terminating, "compression_type": compression,
        "metrics": compress(compression, data)})
    assert body is not None
    return int(body.error_code)


def test_advertised_only_while_telemetry_is_enabled(harness: HandlerHarness) -> None:
    assert GET not in _versions(harness) and PUSH not in _versions(harness)
    harness.cluster.telemetry.set_subscription("s", ["org.apache.kafka."], 1000)
    versions = _versions(harness)
    assert versions[GET] == (0, 0) and versions[PUSH] == (0, 0)


def test_subscription_answer(harness: HandlerHarness) -> None:
    harness.cluster.telemetry.set_subscription("s", ["org.apache.kafka.producer."], 1000)
    _versions(harness)  # announces the software name, as a client's connection does
    body = _subscribe(harness)
    assert body.error_code == ErrorCode.NONE
    assert body.client_instance_id != ZERO_UUID
    assert list(body.accepted_compression_types) == [4, 3, 1, 2]  # zstd, lz4, gzip, snappy
    assert body.push_interval_ms == 1000 and body.telemetry_max_bytes == 1_048_576
    assert body.delta_temporality is True
    assert list(body.requested_metrics) == ["org.apache.kafka.producer."]
    record = harness.cluster.telemetry.client(body.client_instance_id)
    assert record is not None
    assert (record.identity.software_name, record.identity.software_version) == \
        ("librdkafka", "2.16.1")


def test_no_subscription_requests_no_metrics(harness: HandlerHarness) -> None:
    body = _subscribe(harness)
    assert body.error_code == ErrorCode.NONE and list(body.requested_metrics) == []
    assert body.push_interval_ms == 300_000


def test_push_then_too_early_then_due(harness: HandlerHarness) -> None:
    harness.cluster.telemetry.set_subscription("s", ["org."], 1000)
    sub = _subscribe(harness)
    iid = sub.client_instance_id
    assert _push(harness, iid, sub.subscription_id, compression=Compression.LZ4) == \
        ErrorCode.NONE
    harness.clock.advance(999)
    assert _push(harness, iid, sub.subscription_id) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert _subscribe(harness, iid).error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    harness.clock.advance(1)
    assert _push(harness, iid, sub.subscription_id, compression=Compression.SNAPPY) == \
        ErrorCode.NONE
    record = harness.cluster.telemetry.client(iid)
    assert record is not None and record.push_count == 3
    assert [p.error_code for p in record.pushes] == [
        ErrorCode.NONE, ErrorCode.THROTTLING_QUOTA_EXCEEDED, ErrorCode.NONE]
    data = record.last_metrics()
    assert data is not None and data.names() == [METRIC]


def test_stale_subscription_id(harness: HandlerHarness) -> None:
    telemetry = harness.cluster.telemetry
    telemetry.set_subscription("s", ["org."], 1000)
    sub = _subscribe(harness)
    telemetry.set_subscription("s", ["org.apache.kafka."], 1000)
    assert _push(harness, sub.client_instance_id, sub.subscription_id) == \
        ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    harness.clock.advance(1)
    again = _subscribe(harness, sub.client_instance_id)
    assert again.error_code == ErrorCode.NONE
    assert again.client_instance_id == sub.client_instance_id
    assert again.subscription_id != sub.subscription_id
    assert list(again.requested_metrics) == ["org.apache.kafka."]


def test_too_large(harness: HandlerHarness) -> None:
    telemetry = harness.cluster.telemetry
    telemetry.set_subscription("s", ["org."], 1000)
    telemetry.max_bytes = 64
    sub = _subscribe(harness)
    payload = otlp.metrics_data([otlp.metric(f"org.m{i}", [otlp.number_point(i)])
                                 for i in range(10)])
    assert _push(harness, sub.client_instance_id, sub.subscription_id, payload=payload) == \
        ErrorCode.TELEMETRY_TOO_LARGE


def test_terminating(harness: HandlerHarness) -> None:
    harness.cluster.telemetry.set_subscription("s", ["org."], 60_000)
    sub = _subscribe(harness)
    iid, sid = sub.client_instance_id, sub.subscription_id
    assert _push(harness, iid, sid) == ErrorCode.NONE
    harness.clock.advance(5)
    assert _push(harness, iid, sid, terminating=True) == ErrorCode.NONE
    harness.clock.advance(60_000)
    assert _push(harness, iid, sid) == ErrorCode.INVALID_REQUEST


def test_bad_requests(harness: HandlerHarness) -> None:
    harness.cluster.telemetry.set_subscription("s", ["org."], 1000)
    assert _push(harness, ZERO_UUID, 0) == ErrorCode.INVALID_REQUEST
    sub = _subscribe(harness)
    body = harness.call_now(0, PUSH, 0, {
        "client_instance_id": sub.client_instance_id, "subscription_id": sub.subscription_id,
        "terminating": False, "compression_type": 7, "metrics": b"x"})
    assert body is not None and body.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    harness.clock.advance(1)
    sub = _subscribe(harness, sub.client_instance_id)
    assert _push(harness, sub.client_instance_id, sub.subscription_id,
                 payload=b"\x0a\x05ab") == ErrorCode.INVALID_RECORD


def test_list_client_metrics_resources_names_the_subscriptions(
        harness: HandlerHarness) -> None:
    """ListClientMetricsResources (74) v0: the client metrics resources, which are the
    subscriptions; none at first, as on a fresh Kafka (what the Java AdminClient's
    listClientMetricsResources and kafka-client-metrics --list read)."""
    LIST_RESOURCES = 74
    assert _versions(harness)[LIST_RESOURCES] == (0, 0)
    empty = harness.call_now(0, LIST_RESOURCES, 0, {})
    assert empty is not None
    assert (empty.error_code, list(empty.client_metrics_resources)) == (ErrorCode.NONE, [])
    harness.cluster.telemetry.set_subscription("zeta", ["org.apache.kafka."], 1000)
    harness.cluster.telemetry.set_subscription("alpha", ["*"], 1000)
    listed = harness.call_now(1, LIST_RESOURCES, 0, {})
    assert listed is not None
    assert [r.name for r in listed.client_metrics_resources] == ["alpha", "zeta"]
