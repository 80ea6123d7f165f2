"""IncrementalAlterConfigs and AlterConfigs on GROUP resources (type 32, KIP-848/KIP-932
group configs), through the codec, with the answers real Kafka 4.4 gives: a share group's
share.auto.offset.reset and share.isolation.level set by an admin take effect; unknown names,
bad values, list operations and the default ("") group are refused as Kafka refuses them;
DescribeConfigs shows the group's configs as Kafka does."""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.handlers.find_coordinator import GROUP_KEY_TYPE
from tests.support.handlers import HandlerHarness
from tests.support.share import ShareMemberClient, delivered, share_groups_enabled

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
GROUP_RESOURCE = 32
SET, DELETE, APPEND = 0, 1, 2
TOPIC, GROUP = "orders", "order-workers"


def _resource(name: str, *ops: tuple[str, int, str | None]) -> dict[str, Any]:
    return {"resource_type": GROUP_RESOURCE, "resource_name": name, "configs": [
        {"name": key, "config_operation": op, "value": value} for key, op, value in ops]}


async def _incremental(harness: HandlerHarness, resource: dict[str, Any]
                       ) -> tuple[int, str | None]:
    response = await harness.client(0).request(INCREMENTAL_ALTER_CONFIGS, 1, {
        "resources": [resource], "validate_only": False})
    [result] = response.responses
    return result.error_code, result.error_message


async def test_group_configs_are_validated_as_kafka_does() -> None:
    harness = HandlerHarness(brokers=3, broker_properties=share_groups_enabled())
    refused = {
        "nope": (_resource(GROUP, ("share.auto.offset.reset", SET, "nope")),
                 ErrorCode.INVALID_CONFIG,
                 "Invalid value nope for configuration share.auto.offset.reset: Invalid value "
                 "`nope` for configuration share.auto.offset.reset. The value must be either "
                 "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."),
        "isolation": (_resource(GROUP, ("share.isolation.level", SET, "x")),
                      ErrorCode.INVALID_CONFIG,
                      "Invalid value x for configuration share.isolation.level: String must "
                      "be one of: read_committed, read_uncommitted"),
        "unknown": (_resource(GROUP, ("foo.bar", SET, "1")), ErrorCode.INVALID_CONFIG,
                    "Unknown group config name: foo.bar"),
        "default group": (_resource("", ("share.auto.offset.reset", SET, "earliest")),
                          ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."),
        "append": (_resource(GROUP, ("share.auto.offset.reset", APPEND, "x")),
                   ErrorCode.INVALID_CONFIG,
                   "Can't APPEND to key share.auto.offset.reset because its type is not LIST."),
    }
    for case, (resource, code, message) in refused.items():
        assert await _incremental(harness, resource) == (code, message), case
    assert (GROUP_RESOURCE, GROUP) not in harness.cluster.image.configs

    ok = (ErrorCode.NONE, None)
    assert await _incremental(harness, _resource(
        GROUP, ("share.auto.offset.reset", SET, "earliest"),
        ("share.isolation.level", SET, "read_committed"))) == ok
    assert harness.cluster.image.configs[(GROUP_RESOURCE, GROUP)] == {
        "share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed"}
    assert await _incremental(harness, _resource(
        GROUP, ("share.isolation.level", DELETE, None))) == ok
    assert harness.cluster.image.configs[(GROUP_RESOURCE, GROUP)] == {
        "share.auto.offset.reset": "earliest"}

    # AlterConfigs replaces the group's whole set
    response = await harness.client(1).request(ALTER_CONFIGS, 2, {"resources": [{
        "resource_type": GROUP_RESOURCE, "resource_name": GROUP,
        "configs": [{"name": "share.isolation.level", "value": "read_committed"}]}],
        "validate_only": False})
    assert [(r.error_code, r.error_message) for r in response.responses] == [ok]
    assert harness.cluster.image.configs[(GROUP_RESOURCE, GROUP)] == {
        "share.isolation.level": "read_committed"}


async def test_share_auto_offset_reset_set_by_an_admin_takes_effect() -> None:
    harness = HandlerHarness(brokers=3, broker_properties=share_groups_enabled())
    harness.cluster.create_topic(TOPIC, 1, 1)
    topic_id = harness.cluster.image.topics[TOPIC].topic_id
    batch = bytes(build_batch([RecordSpec(key=None, value=v, timestamp=1_000)
                               for v in (b"o0", b"o1")]))
    leader = harness.leader(TOPIC)
    assert harness.cluster.produce(harness.cluster.brokers[leader], TOPIC, 0, batch,
                                   acks=-1).error == 0
    assert await _incremental(harness, _resource(
        GROUP, ("share.auto.offset.reset", SET, "earliest"))) == (ErrorCode.NONE, None)

    coordinator = harness.cluster.coordinator_for(GROUP_KEY_TYPE, GROUP)
    assert coordinator is not None
    member = ShareMemberClient(harness.client(coordinator), harness.client(leader), GROUP)
    assert (await member.join([TOPIC])).error_code == ErrorCode.NONE
    # with the default (latest) the share-partition would start after the two records
    assert delivered(await member.fetch(topic_id)).values == {0: b"o0", 1: b"o1"}


async def test_describe_group_configs() -> None:
    """DescribeConfigs on a GROUP resource (the group need not exist), as real Kafka 4.4
    answers it for these keys: a set config with source GROUP_CONFIG (8) and the default as
    its synonym, an unset one at its default (DEFAULT_CONFIG, 5); STRING type (2)."""
    harness = HandlerHarness(brokers=3, broker_properties=share_groups_enabled())
    assert await _incremental(harness, _resource(
        GROUP, ("share.isolation.level", SET, "read_committed"))) == (ErrorCode.NONE, None)
    keys = ["share.auto.offset.reset", "share.isolation.level"]
    response = await harness.client(2).request(DESCRIBE_CONFIGS, 4, {
        "resources": [{"resource_type": GROUP_RESOURCE, "resource_name": GROUP,
                       "configuration_keys": keys},
                      {"resource_type": GROUP_RESOURCE, "resource_name": "",
                       "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": False})
    described, default_group = response.results
    # DescribeConfigs results carry Errors.NONE's message "", as Kafka's do
    assert (described.error_code, described.error_message) == (ErrorCode.NONE, "")
    assert [(e.name, e.value, e.read_only, e.config_source, e.is_sensitive, e.config_type,
             [(s.name, s.value, s.source) for s in e.synonyms]) for e in described.configs] == [
        ("share.auto.offset.reset", "latest", False, 5, False, 2,
         [("share.auto.offset.reset", "latest", 5)]),
        ("share.isolation.level", "read_committed", False, 8, False, 2,
         [("share.isolation.level", "read_committed", 8),
          ("share.isolation.level", "read_uncommitted", 5)])]
    assert (default_group.error_code, default_group.error_message, default_group.configs) == (
        ErrorCode.INVALID_REQUEST, "Group name must not be empty", [])
