"""Client metrics resources as configs (KIP-714), what kafka-client-metrics sends:
IncrementalAlterConfigs / AlterConfigs / DescribeConfigs on resource type 16 and
ListClientMetricsResources. Every expected answer here is what a Kafka 4.4 broker answered
to the same requests (errors, messages, sources, synonyms, types, documentation); the
telemetry subscription of the same name follows the configs."""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec.error_codes import ErrorCode as E

from tests.support.admin import running_cluster
from tests.support.rawclient import RawClient, connect_broker

CLIENT_METRICS, LIST_RESOURCES = 16, 74
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
SET, DELETE, APPEND = 0, 1, 2
DOCS = {"interval.ms": "Metrics push interval in milliseconds",
        "match": "Client match criteria", "metrics": "Telemetry metric name prefix list"}


async def incremental(client: RawClient, name: str,
                      *ops: tuple[str, int, str | None]) -> tuple[int, str | None]:
    response = await client.request(INCREMENTAL_ALTER_CONFIGS, 1, {
        "resources": [{"resource_type": CLIENT_METRICS, "resource_name": name, "configs": [
            {"name": n, "config_operation": o, "value": v} for n, o, v in ops]}],
        "validate_only": False})
    [result] = response.responses
    return result.error_code, result.error_message


async def describe(client: RawClient, name: str) -> tuple[int, str | None, list[Any]]:
    response = await client.request(DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": CLIENT_METRICS, "resource_name": name,
                       "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": True})
    [result] = response.results
    return result.error_code, result.error_message, [
        (c.name, c.value, c.read_only, c.config_source, c.is_sensitive,
         [(s.name, s.value, s.source) for s in c.synonyms], c.config_type, c.documentation)
        for c in result.configs]


async def listed(client: RawClient) -> list[str]:
    response = await client.request(LIST_RESOURCES, 0, {})
    assert response.error_code == E.NONE
    return [r.name for r in response.client_metrics_resources]


def unset(name: str, value: str, config_type: int) -> tuple[Any, ...]:
    return (name, value, False, 5, False, [], config_type, DOCS[name])


def set_(name: str, value: str, config_type: int) -> tuple[Any, ...]:
    return (name, value, False, 7, False, [(name, value, 7)], config_type, DOCS[name])


async def test_client_metrics_resources_as_kafka_answers_them() -> None:
    async with running_cluster(brokers=1) as mc:
        async with await connect_broker(mc, 0) as client:
            assert await incremental(client, "cmx", ("metrics", SET, "org.apache.kafka.producer."),
                                     ("interval.ms", SET, "1000")) == (E.NONE, None)
            assert await incremental(client, "cmy", (
                "match", SET, "client_id=abc,client_software_name=kt.*")) == (E.NONE, None)
            refusals = [
                (("interval.ms", SET, "5"), E.INVALID_REQUEST, "Invalid value 5 for interval.ms, "
                 "interval must be between 100 and 3600000 (1 hour)"),
                (("nope", SET, "5"), E.INVALID_REQUEST, "Unknown client metrics configuration: "
                 "nope"),
                (("match", SET, "nokey=5"), E.INVALID_CONFIG,
                 "Illegal client matching pattern: nokey=5"),
                (("match", SET, "client_id"), E.INVALID_CONFIG,
                 "Illegal client matching pattern: client_id"),
                (("metrics", APPEND, "org.apache.kafka.consumer."), E.INVALID_CONFIG,
                 "Can't APPEND to key metrics because its type is not LIST."),
                (("interval.ms", SET, "abc"), E.INVALID_CONFIG,
                 "Invalid value abc for configuration interval.ms: Not a number of type INT")]
            for op, code, message in refusals:
                assert await incremental(client, "cmx", op) == (code, message), op
            assert await incremental(client, "", ("metrics", SET, "a")) == (
                E.INVALID_REQUEST, "Subscription name can't be empty")
            assert await describe(client, "cmx") == (E.NONE, "", [
                set_("interval.ms", "1000", 3), unset("match", "", 7),
                set_("metrics", "org.apache.kafka.producer.", 7)])
            assert await describe(client, "nope") == (E.NONE, "", [
                unset("interval.ms", "300000", 3), unset("match", "", 7),
                unset("metrics", "", 7)])
            assert await describe(client, "") == (
                E.INVALID_REQUEST, "Client metrics subscription name must not be empty", [])
            assert await listed(client) == ["cmx", "cmy"]
            subscription = mc.cluster.telemetry.subscriptions["cmy"]
            assert (subscription.metrics, subscription.interval_ms, subscription.match) == (
                (), 300_000, (("client_id", "abc"), ("client_software_name", "kt.*")))
            assert mc.cluster.telemetry.subscriptions["cmx"].metrics == (
                "org.apache.kafka.producer.",)
            # the last config deleted: the resource and its subscription are gone
            assert await incremental(client, "cmy", ("match", DELETE, None)) == (E.NONE, None)
            assert await listed(client) == ["cmx"]
            assert "cmy" not in mc.cluster.telemetry.subscriptions
            response = await client.request(ALTER_CONFIGS, 2, {"resources": [
                {"resource_type": CLIENT_METRICS, "resource_name": "cmz",
                 "configs": [{"name": "metrics", "value": "a.b"}]}], "validate_only": False})
            assert [(r.error_code, r.error_message) for r in response.responses] == [
                (E.NONE, None)]
            assert await listed(client) == ["cmx", "cmz"]
