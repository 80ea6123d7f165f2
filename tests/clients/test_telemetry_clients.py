"""Client telemetry (KIP-714) with a real client: confluent-kafka (librdkafka) with default
settings (`enable.metrics.push` is on by default) pushes the metrics a subscription asks
for, and the broker decodes them.

The push interval is the broker's to choose, so the subscription asks for 500 ms; every
wait is the control API's `wait-telemetry`, bounded by its timeout. What librdkafka reports
(metric names under org.apache.kafka.producer., per-broker points with a node.id
attribute, its instance name and version as the instrumentation scope) is checked against
what confluent_kafka itself says its versions are.
"""

from __future__ import annotations

import gc

import confluent_kafka
import pytest

from mockbroker.embedded import MockClusterThread

pytestmark = pytest.mark.clients

PREFIX = "org.apache.kafka.producer."
NODE_LATENCY = PREFIX + "node.request.latency.avg"
PRODUCER_METRICS = {PREFIX + name for name in (
    "connection.creation.rate", "connection.creation.total", "node.request.latency.avg",
    "node.request.latency.max", "record.queue.time.avg", "request.latency.avg")}
WAIT_MS = 20_000


def _producer(mock: MockClusterThread, client_id: str) -> confluent_kafka.Producer:
    return confluent_kafka.Producer({"bootstrap.servers": mock.bootstrap_servers,
                                     "client.id": client_id})


def test_producer_pushes_subscribed_metrics(mock: MockClusterThread) -> None:
    mock.control.set_telemetry_subscription(metrics=[PREFIX], interval_ms=500)
    producer = _producer(mock, "telemetry-producer")
    producer.produce("telemetry-topic", b"hello")
    assert producer.flush(10) == 0
    seen = mock.control.wait_telemetry(metric=NODE_LATENCY, client_id="telemetry-producer",
                                       timeout_ms=WAIT_MS)["observed"]
    assert seen["client_software_name"] == "confluent-kafka-python"
    assert seen["client_software_version"].startswith(confluent_kafka.version()[0])
    (client,) = mock.control.telemetry()["clients"]
    assert client["client_id"] == "telemetry-producer"
    assert client["requested_metrics"] == [PREFIX] and client["push_interval_ms"] == 500
    assert PRODUCER_METRICS <= set(client["metric_names"])
    assert all(name.startswith(PREFIX) for name in client["metric_names"])
    push = client["last_push"]
    assert push["error"] == "NONE" and push["compression_type"] in (1, 2, 3, 4)
    (scope,) = push["scopes"]
    assert scope["name"].startswith("telemetry-producer#producer-")
    assert scope["version"] == confluent_kafka.libversion()[0]
    nodes = {p["attributes"]["node.id"] for m in push["metrics"] if m["name"] == NODE_LATENCY
             for p in m["data_points"]}
    assert nodes and nodes <= set(mock.cluster.brokers)
    # closing the producer sends a last, terminating push
    del producer
    gc.collect()
    ended = mock.control.wait_telemetry(client_id="telemetry-producer", terminating=True,
                                        timeout_ms=WAIT_MS)["observed"]
    assert ended["terminated"] is True


def test_changed_subscription_reaches_a_running_client(mock: MockClusterThread) -> None:
    mock.control.set_telemetry_subscription(metrics=[PREFIX + "record."], interval_ms=500)
    producer = _producer(mock, "telemetry-resubscribe")
    producer.produce("telemetry-topic", b"one")
    assert producer.flush(10) == 0
    mock.control.wait_telemetry(metric=PREFIX + "record.queue.time.avg", timeout_ms=WAIT_MS)
    before = mock.control.telemetry()["clients"][0]
    assert set(before["metric_names"]) == {PREFIX + "record.queue.time.avg",
                                           PREFIX + "record.queue.time.max"}
    # a new prefix: the next push carries the old subscription id, is refused with
    # UNKNOWN_SUBSCRIPTION_ID, and the client fetches the new subscription at once
    mock.control.set_telemetry_subscription(metrics=[PREFIX + "request."], interval_ms=500)
    mock.control.wait_telemetry(metric=PREFIX + "request.latency.avg", timeout_ms=WAIT_MS)
    after = mock.control.telemetry(history=True)["clients"][0]
    assert after["client_instance_id"] == before["client_instance_id"]
    assert after["subscription_id"] != before["subscription_id"]
    assert after["requested_metrics"] == [PREFIX + "request."]
    errors = [h["error"] for h in after["history"]]
    assert "UNKNOWN_SUBSCRIPTION_ID" in errors
    producer.flush(10)
    del producer
    gc.collect()


def test_without_telemetry_the_client_sends_none(mock: MockClusterThread) -> None:
    """As against a Kafka broker without a client-telemetry reporter: the APIs are not
    advertised, so librdkafka never asks for a subscription."""
    mock.control.start_trace()
    producer = _producer(mock, "telemetry-off")
    producer.produce("telemetry-topic", b"hello")
    assert producer.flush(10) == 0
    del producer
    gc.collect()
    traced = mock.control.trace(n=None)["requests"]
    apis = {r["api"] for r in traced}
    assert "Produce" in apis and "ApiVersions" in apis
    assert not apis & {"GetTelemetrySubscriptions", "PushTelemetry"}
    state = mock.control.state()["telemetry"]
    assert state == {"enabled": False, "subscriptions": [], "clients": []}


def test_selectors_pick_the_consumer_which_pushes_all_its_metrics(
        mock: MockClusterThread) -> None:
    """A "*" subscription for client ids cons.*: the consumer pushes every metric it has,
    with its group in the resource attributes; the producer is told no metrics."""
    mock.control.set_telemetry_subscription(metrics="*", interval_ms=500,
                                            match={"client_id": "cons.*"})
    producer = _producer(mock, "telemetry-other")
    producer.produce("telemetry-consumed", b"hello")
    assert producer.flush(10) == 0
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": mock.bootstrap_servers, "client.id": "cons-telemetry",
        "group.id": "telemetry-group", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["telemetry-consumed"])
        message = None
        for _ in range(40):  # bounded: 40 polls of at most 0.5 s
            message = consumer.poll(0.5)
            if message is not None:
                break
        assert message is not None and message.value() == b"hello"
        assigned = "org.apache.kafka.consumer.coordinator.assigned.partitions"
        seen = mock.control.wait_telemetry(metric=assigned, client_id="cons-telemetry",
                                           timeout_ms=WAIT_MS)["observed"]
        assert seen["metric"]["data_points"][0]["value"] == 1
        clients = {c["client_id"]: c for c in mock.control.telemetry()["clients"]}
        other, me = clients["telemetry-other"], clients["cons-telemetry"]
        assert (other["requested_metrics"], other["pushes"]) == ([], 0)
        assert me["requested_metrics"] == ["*"]
        assert {"org.apache.kafka.consumer.fetch.manager.fetch.latency.avg",
                "org.apache.kafka.consumer.node.request.latency.avg"} <= set(me["metric_names"])
        resource = me["last_push"]["resource_attributes"]
        assert resource["group_id"] == "telemetry-group"
        assert resource["member_id"].startswith("cons-telemetry-")
    finally:
        consumer.close()
        del producer
        gc.collect()
