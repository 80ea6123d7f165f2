"""Authorization over the wire with the raw codec: the ACL APIs, the checks of the
authorization table, and authorized-operations bitfields computed from the ACLs.

The client here is User:ANONYMOUS on a PLAINTEXT listener; ACLs are added with the control
API (or CreateAcls as a super user would) and every answer is checked field by field.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kafka_protocol_codec import api, decode_response, encode_response

from mockbroker.cluster.security.authorizer import AclOperation as Op
from mockbroker.control.webview import render_view
from mockbroker.embedded import MockCluster
from mockbroker.handlers.authorization import CHECKS
from mockbroker.handlers.authorization_checks import whole_error
from mockbroker.handlers.registry import REGISTRY
from tests.support.admin import create_topic, leader_client, produce
from tests.support.rawclient import RawClient, connect_broker

ANON = "User:ANONYMOUS"
METADATA, DESCRIBE_GROUPS, FIND_COORDINATOR, DESCRIBE_CLUSTER = 3, 15, 10, 60
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
TOPIC, GROUP, CLUSTER = 2, 3, 4
LITERAL, PREFIXED, ANY, MATCH = 3, 4, 1, 2
ALLOW, DENY = 3, 2
UNSET = -2147483648
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 29, 30
CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED = 31, 54
UNKNOWN_SERVER_ERROR = -1


def bits(*ops: Op) -> int:
    return sum(1 << int(op) for op in ops)


@pytest.fixture
async def secured() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=1, authorizer=True) as mc:
        yield mc


async def _client(mc: MockCluster) -> RawClient:
    return await connect_broker(mc, 0)


def test_every_registered_api_has_an_authorization_check() -> None:
    """The table may name APIs registered elsewhere (branches), but misses none."""
    assert set(REGISTRY) <= set(CHECKS)
    assert all(api(key).name for key in CHECKS)  # every key is a Kafka API


async def test_acl_apis_answer_security_disabled_without_an_authorizer() -> None:
    async with MockCluster(brokers=1) as mc:
        client = await _client(mc)
        created = await client.request(CREATE_ACLS, 3, {"creations": [
            {"resource_type": TOPIC, "resource_name": "t", "resource_pattern_type": LITERAL,
             "principal": ANON, "host": "*", "operation": int(Op.READ),
             "permission_type": ALLOW}]})
        assert [r.error_code for r in created.results] == [SECURITY_DISABLED]
        described = await client.request(DESCRIBE_ACLS, 3, {
            "resource_type_filter": ANY, "resource_name_filter": None,
            "pattern_type_filter": ANY, "principal_filter": None, "host_filter": None,
            "operation": int(Op.ANY), "permission_type": ANY})
        assert described.error_code == SECURITY_DISABLED
        # and with no authorizer everything else is allowed
        await create_topic(client, "open", 1, 1)
        assert (await produce(client, "open", 0, [b"v"])).error_code == 0


async def test_acl_apis_need_cluster_alter_and_describe(secured: MockCluster) -> None:
    client = await _client(secured)
    created = await client.request(CREATE_ACLS, 1, {"creations": [
        {"resource_type": TOPIC, "resource_name": "t", "resource_pattern_type": LITERAL,
         "principal": ANON, "host": "*", "operation": int(Op.READ), "permission_type": ALLOW}]})
    # no ALTER on the cluster: every creation is refused
    assert [r.error_code for r in created.results] == [CLUSTER_AUTHORIZATION_FAILED]
    await secured.control.create_acl("CLUSTER", "kafka-cluster", ANON, "ALTER")
    created = await client.request(CREATE_ACLS, 1, {"creations": [
        {"resource_type": TOPIC, "resource_name": "orders-", "resource_pattern_type": PREFIXED,
         "principal": ANON, "host": "*", "operation": int(Op.WRITE), "permission_type": ALLOW},
        {"resource_type": TOPIC, "resource_name": "x", "resource_pattern_type": MATCH,
         "principal": ANON, "host": "*", "operation": int(Op.READ),
         "permission_type": ALLOW}]})
    # MATCH is no pattern: Kafka's broker cannot build the binding and fails the request
    assert [r.error_code for r in created.results] == [UNKNOWN_SERVER_ERROR] * 2
    created = await client.request(CREATE_ACLS, 1, {"creations": [
        {"resource_type": TOPIC, "resource_name": "orders-", "resource_pattern_type": PREFIXED,
         "principal": ANON, "host": "*", "operation": int(Op.WRITE), "permission_type": ALLOW}]})
    assert [r.error_code for r in created.results] == [0]
    # ALTER implies DESCRIBE, so DescribeAcls is allowed now
    described = await client.request(DESCRIBE_ACLS, 1, {
        "resource_type_filter": TOPIC, "resource_name_filter": "orders-eu",
        "pattern_type_filter": MATCH, "principal_filter": None, "host_filter": None,
        "operation": int(Op.ANY), "permission_type": ANY})
    assert described.error_code == 0
    assert [(r.resource_type, r.resource_name, r.pattern_type,
             [(a.principal, a.host, a.operation, a.permission_type) for a in r.acls])
            for r in described.resources] == [
        (TOPIC, "orders-", PREFIXED, [(ANON, "*", int(Op.WRITE), ALLOW)])]
    deleted = await client.request(DELETE_ACLS, 1, {"filters": [
        {"resource_type_filter": TOPIC, "resource_name_filter": None,
         "pattern_type_filter": ANY, "principal_filter": ANON, "host_filter": None,
         "operation": int(Op.ANY), "permission_type": ANY}]})
    [result] = deleted.filter_results
    assert [(m.resource_name, m.pattern_type, m.operation) for m in result.matching_acls] \
        == [("orders-", PREFIXED, int(Op.WRITE))]
    assert [a["resource_type"] for a in (await secured.control.acls())["acls"]] == ["CLUSTER"]
    view = render_view(await secured.control.state())  # the web view lists the bindings
    assert f"<td>CLUSTER</td><td>kafka-cluster</td><td>LITERAL</td><td>{ANON}</td>" in view
    assert "orders-" not in view


async def test_metadata_omits_and_refuses_topics_without_describe(secured: MockCluster) -> None:
    secured.cluster.create_topic("visible", 1, 1)
    secured.cluster.create_topic("hidden", 1, 1)
    await secured.control.create_acl("TOPIC", "visible", ANON, "READ")
    client = await _client(secured)
    everything = await client.request(METADATA, 12, {
        "topics": None, "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": True})
    assert [(t.name, t.error_code) for t in everything.topics] == [("visible", 0)]
    # READ implies DESCRIBE: the bitfield has READ and DESCRIBE only
    assert everything.topics[0].topic_authorized_operations == bits(Op.READ, Op.DESCRIBE)
    named = await client.request(METADATA, 12, {
        "topics": [{"topic_id": None, "name": "hidden"}, {"topic_id": None, "name": "visible"},
                   {"topic_id": None, "name": "new-one"}],
        "allow_auto_topic_creation": True, "include_topic_authorized_operations": False})
    assert sorted((t.name, t.error_code, t.topic_authorized_operations)
                  for t in named.topics) == [
        ("hidden", TOPIC_AUTHORIZATION_FAILED, UNSET), ("new-one", TOPIC_AUTHORIZATION_FAILED,
                                                        UNSET), ("visible", 0, UNSET)]
    assert "new-one" not in secured.cluster.image.topics  # no auto-create without CREATE


async def test_metadata_auto_create_needs_create(secured: MockCluster) -> None:
    await secured.control.create_acl("TOPIC", "auto-", ANON, "DESCRIBE", pattern_type="PREFIXED")
    client = await _client(secured)
    body = {"topics": [{"topic_id": None, "name": "auto-a"}], "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False}
    first = await client.request(METADATA, 12, body)
    assert [(t.name, t.error_code) for t in first.topics] == [("auto-a", 29)]  # as Kafka: denied
    await secured.control.create_acl("CLUSTER", "kafka-cluster", ANON, "CREATE")
    await client.request(METADATA, 12, body)
    assert "auto-a" in secured.cluster.image.topics


async def test_produce_needs_write_and_deny_wins(secured: MockCluster) -> None:
    secured.cluster.create_topic("orders", 1, 1)
    await secured.control.create_acl("TOPIC", "*", "User:*", "ALL")
    await secured.control.create_acl("TOPIC", "orders", ANON, "WRITE", permission_type="DENY")
    client = await leader_client(secured, "orders", 0)
    refused = await produce(client, "orders", 0, [b"no"])
    assert refused.error_code == TOPIC_AUTHORIZATION_FAILED
    topic_id = secured.cluster.image.topics["orders"].topic_id
    log = secured.cluster.log(topic_id, 0)
    assert log is not None and log.log_end_offset == 0  # nothing was written
    await secured.control.delete_acls(permission_type="DENY")
    assert (await produce(client, "orders", 0, [b"yes"])).error_code == 0
    assert log.log_end_offset == 1


async def test_produce_with_acks_zero_refused_by_an_acl_closes_the_connection(
        secured: MockCluster) -> None:
    """acks=0 expects no response, so a refused partition is told by closing the connection,
    as for any other partition error: the refusal's response is not written (a client would
    take it for the answer to its next request)."""
    import asyncio
    import struct

    from kafka_protocol_codec import encode_request
    from kafka_protocol_codec.records import RecordSpec, build_batch

    secured.cluster.create_topic("orders", 1, 1)
    node = secured.cluster.brokers[0]
    reader, writer = await asyncio.open_connection(node.host, node.port)
    body = {"transactional_id": None, "acks": 0, "timeout_ms": 5000, "topic_data": [
        {"name": "orders", "partition_data": [
            {"index": 0, "records": build_batch([RecordSpec(value=b"no")])}]}]}
    for api_key, version, request, correlation_id in ((0, 9, body, 1),  # Produce
                                                       (METADATA, 12, {"topics": None}, 2)):
        frame = encode_request(api_key, version, request, correlation_id=correlation_id)
        writer.write(struct.pack(">i", len(frame)) + frame)
    await writer.drain()
    assert await asyncio.wait_for(reader.read(100), 10) == b""  # closed, nothing answered
    writer.close()
    topic_id = secured.cluster.image.topics["orders"].topic_id
    log = secured.cluster.log(topic_id, 0)
    assert log is not None and log.log_end_offset == 0


async def test_cluster_and_group_authorized_operations(secured: MockCluster) -> None:
    await secured.control.create_acl("CLUSTER", "kafka-cluster", ANON, "ALTER_CONFIGS")
    await secured.control.create_acl("GROUP", "g", ANON, "DELETE")
    await secured.control.create_acl("GROUP", "g", ANON, "DESCRIBE")
    client = await _client(secured)
    cluster = await client.request(DESCRIBE_CLUSTER, 0, {
        "include_cluster_authorized_operations": True})
    assert cluster.cluster_authorized_operations == 0  # Kafka: 0 without DESCRIBE
    await secured.control.create_acl("CLUSTER", "kafka-cluster", ANON, "DESCRIBE")
    cluster = await client.request(DESCRIBE_CLUSTER, 0, {
        "include_cluster_authorized_operations": True})
    # ALTER_CONFIGS implies DESCRIBE_CONFIGS
    assert cluster.cluster_authorized_operations == bits(Op.DESCRIBE, Op.ALTER_CONFIGS,
                                                         Op.DESCRIBE_CONFIGS)
    not_asked = await client.request(DESCRIBE_CLUSTER, 0, {
        "include_cluster_authorized_operations": False})
    assert not_asked.cluster_authorized_operations == UNSET
    meta = await client.request(METADATA, 10, {
        "topics": [], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": False})
    assert meta.cluster_authorized_operations == bits(Op.DESCRIBE, Op.ALTER_CONFIGS,
                                                      Op.DESCRIBE_CONFIGS)
    groups = await client.request(DESCRIBE_GROUPS, 5, {
        "groups": ["g", "other"], "include_authorized_operations": True})
    assert sorted((g.group_id, g.error_code, g.authorized_operations)
                  for g in groups.groups) == [
        ("g", 0, bits(Op.DELETE, Op.DESCRIBE)), ("other", GROUP_AUTHORIZATION_FAILED, UNSET)]


async def test_group_operations_include_its_configs(secured: MockCluster) -> None:
    """Kafka 4 groups have configs (KIP-848): a group's operations are READ, DESCRIBE,
    DELETE, DESCRIBE_CONFIGS and ALTER_CONFIGS (AclEntry.supportedOperations)."""
    await secured.control.create_acl("GROUP", "g", ANON, "ALTER_CONFIGS")
    await secured.control.create_acl("GROUP", "g", ANON, "DESCRIBE")
    client = await _client(secured)
    groups = await client.request(DESCRIBE_GROUPS, 5, {
        "groups": ["g"], "include_authorized_operations": True})
    # ALTER_CONFIGS implies DESCRIBE_CONFIGS
    assert [(g.group_id, g.error_code, g.authorized_operations) for g in groups.groups] == [
        ("g", 0, bits(Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS))]


async def test_find_coordinator_needs_group_describe(secured: MockCluster) -> None:
    await secured.control.create_acl("GROUP", "mine", ANON, "READ")
    client = await _client(secured)
    answer = await client.request(FIND_COORDINATOR, 4, {
        "key_type": 0, "coordinator_keys": ["mine", "theirs"]})
    assert sorted((c.key, c.error_code) for c in answer.coordinators) == [
        ("mine", 0), ("theirs", GROUP_AUTHORIZATION_FAILED)]


async def test_super_users_and_allow_everyone() -> None:
    async with MockCluster(brokers=1, authorizer=True, super_users="User:ANONYMOUS") as mc:
        client = await _client(mc)
        await create_topic(client, "free", 1, 1)
        assert (await produce(client, "free", 0, [b"v"])).error_code == 0
    async with MockCluster(brokers=1, authorizer=True,
                           allow_everyone_if_no_acl_found=True) as mc:
        mc.cluster.create_topic("t", 1, 1)
        client = await _client(mc)
        assert (await produce(client, "t", 0, [b"v"])).error_code == 0
        # once an ACL names the topic, only what it allows is allowed
        await mc.control.create_acl("TOPIC", "t", "User:someone-else", "WRITE")
        assert (await produce(client, "t", 0, [b"v"])).error_code == TOPIC_AUTHORIZATION_FAILED


async def test_reset_drops_acls_and_restores_the_switch(secured: MockCluster) -> None:
    await secured.control.create_acl("TOPIC", "t", ANON, "READ")
    await secured.control.set_authorizer(False)
    await secured.control.reset()
    state = await secured.control.acls()
    assert (state["enabled"], state["acls"]) == (True, [])


async def test_admin_apis_answer_per_resource(secured: MockCluster) -> None:
    secured.cluster.create_topic("kept", 1, 1)
    secured.cluster.create_topic("gone", 1, 1)
    await secured.control.create_acl("TOPIC", "new-", ANON, "CREATE", pattern_type="PREFIXED")
    await secured.control.create_acl("TOPIC", "gone", ANON, "DELETE")
    await secured.control.create_acl("TOPIC", "kept", ANON, "ALTER_CONFIGS")
    client = await _client(secured)
    created = await client.request(19, 7, {"topics": [
        {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
         "configs": []} for name in ("new-a", "other")], "timeout_ms": 5000,
        "validate_only": False})
    assert sorted((t.name, t.error_code) for t in created.topics) == [
        ("new-a", 0), ("other", TOPIC_AUTHORIZATION_FAILED)]
    deleted = await client.request(20, 5, {"topic_names": ["gone", "kept"], "timeout_ms": 5000})
    assert sorted((r.name, r.error_code) for r in deleted.responses) == [
        ("gone", 0), ("kept", TOPIC_AUTHORIZATION_FAILED)]
    assert sorted(secured.cluster.image.topics) == ["kept", "new-a"]
    described = await client.request(32, 4, {"resources": [
        {"resource_type": TOPIC, "resource_name": "kept", "configuration_keys": None},
        {"resource_type": TOPIC, "resource_name": "new-a", "configuration_keys": None},
        {"resource_type": 4, "resource_name": "0", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    # ALTER_CONFIGS implies DESCRIBE_CONFIGS on "kept"; nothing on new-a or the broker
    assert sorted((r.resource_name, r.error_code, bool(r.configs))
                  for r in described.results) == [
        ("0", CLUSTER_AUTHORIZATION_FAILED, False), ("kept", 0, True),
        ("new-a", TOPIC_AUTHORIZATION_FAILED, False)]


async def test_consumer_group_describe_operations_and_list_groups(
        secured: MockCluster) -> None:
    await secured.control.create_acl("GROUP", "cg", ANON, "READ")
    client = await _client(secured)
    await client.request(68, 0, {
        "group_id": "cg", "member_id": "", "member_epoch": 0, "instance_id": None,
        "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": [],
        "server_assignor": None, "topic_partitions": []})
    answer = await client.request(69, 0, {"group_ids": ["cg", "nope"],
                                          "include_authorized_operations": True})
    assert sorted((g.group_id, g.error_code, g.authorized_operations)
                  for g in answer.groups) == [
        ("cg", 0, bits(Op.READ, Op.DESCRIBE)), ("nope", GROUP_AUTHORIZATION_FAILED, UNSET)]
    listed = await client.request(16, 4, {"states_filter": []})
    assert [g.group_id for g in listed.groups] == ["cg"]  # READ implies DESCRIBE
    await secured.control.delete_acls()
    assert (await client.request(16, 4, {"states_filter": []})).groups == []


async def test_delete_topics_by_id_is_checked_by_name(secured: MockCluster) -> None:
    secured.cluster.create_topic("by-id", 1, 1)
    topic_id = secured.cluster.image.topics["by-id"].topic_id
    client = await _client(secured)
    body = {"topics": [{"name": None, "topic_id": topic_id}], "timeout_ms": 5000}
    refused = await client.request(20, 6, body)  # the name is not revealed
    assert [(r.name, r.topic_id, r.error_code) for r in refused.responses] == [
        (None, topic_id, TOPIC_AUTHORIZATION_FAILED)]
    await secured.control.create_acl("TOPIC", "by-id", ANON, "DESCRIBE")
    described = await client.request(20, 6, body)  # DESCRIBE but not DELETE: named
    assert [(r.name, r.topic_id, r.error_code) for r in described.responses] == [
        ("by-id", topic_id, TOPIC_AUTHORIZATION_FAILED)]
    await secured.control.create_acl("TOPIC", "by-id", ANON, "DELETE")
    deleted = await client.request(20, 6, body)
    assert [r.error_code for r in deleted.responses] == [0]
    assert "by-id" not in secured.cluster.image.topics


async def test_offset_commit_and_fetch_check_group_and_topics(secured: MockCluster) -> None:
    secured.cluster.create_topic("a", 1, 1)
    secured.cluster.create_topic("b", 1, 1)
    await secured.control.create_acl("GROUP", "og", ANON, "READ")
    await secured.control.create_acl("TOPIC", "a", ANON, "READ")
    client = await _client(secured)
    committed = await client.request(8, 8, {
        "group_id": "og", "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "topics": [
            {"name": name, "partitions": [{"partition_index": 0, "committed_offset": 7,
                                           "committed_leader_epoch": -1,
                                           "committed_metadata": None}]}
            for name in ("a", "b")]})
    assert sorted((t.name, t.partitions[0].error_code) for t in committed.topics) == [
        ("a", 0), ("b", TOPIC_AUTHORIZATION_FAILED)]
    named = await client.request(9, 7, {"group_id": "og", "require_stable": False, "topics": [
        {"name": "a", "partition_indexes": [0]}, {"name": "b", "partition_indexes": [0]}]})
    assert sorted((t.name, t.partitions[0].committed_offset, t.partitions[0].error_code)
                  for t in named.topics) == [("a", 7, 0), ("b", -1, TOPIC_AUTHORIZATION_FAILED)]
    everything = await client.request(9, 7, {"group_id": "og", "require_stable": False,
                                             "topics": None})
    assert [t.name for t in everything.topics] == ["a"]
    refused = await client.request(9, 7, {"group_id": "other", "require_stable": False,
                                          "topics": None})
    assert refused.error_code == GROUP_AUTHORIZATION_FAILED


@pytest.mark.parametrize("key", [35, 45, 46, 55, 57, 78, 79, 29, 48])
def test_cluster_and_group_refusals_encode_at_every_version(key: int) -> None:
    """Whole-response refusals of APIs checked on the cluster or a group (some handled on
    other branches) encode at every version of their schema, carrying the error."""
    schema = api(key)
    for version in range(schema.min_version, schema.max_version + 1):
        refusal = whole_error(key, CLUSTER_AUTHORIZATION_FAILED)
        frame = encode_response(key, version, 1, refusal)
        assert len(frame) > 4  # a correlation id and a body
        decoded = decode_response(key, version, frame)
        if any(f.name == "error_code" and f.versions[0] <= version
               and (f.versions[1] is None or version <= f.versions[1])
               for f in schema.response.fields):
            assert decoded.body.error_code == CLUSTER_AUTHORIZATION_FAILED


async def test_a_broker_with_paused_metadata_describes_and_authorizes_by_its_old_acls() -> None:
    """ACLs travel in the metadata log: CreateAcls on broker 0 reaches broker 1's
    authorizer only once broker 1 applies the AccessControlEntryRecord."""
    async with MockCluster(brokers=2, authorizer=True, super_users="User:admin") as mc:
        await mc.control.create_acl("CLUSTER", "kafka-cluster", ANON, "ALTER")
        mc.cluster.create_topic("t", 1, 2)
        first, second = await connect_broker(mc, 0), await connect_broker(mc, 1)
        describe_all = {"resource_type_filter": ANY, "resource_name_filter": None,
                        "pattern_type_filter": ANY, "principal_filter": None,
                        "host_filter": None, "operation": int(Op.ANY), "permission_type": ANY}
        topic_metadata = {"topics": [{"name": "t", "topic_id": None}],
                          "allow_auto_topic_creation": False,
                          "include_topic_authorized_operations": False}
        await mc.control.pause_metadata(1)
        created = await first.request(CREATE_ACLS, 3, {"creations": [
            {"resource_type": TOPIC, "resource_name": "t", "resource_pattern_type": LITERAL,
             "principal": ANON, "host": "*", "operation": int(Op.DESCRIBE),
             "permission_type": ALLOW}]})
        assert [r.error_code for r in created.results] == [0]
        on_first = await first.request(DESCRIBE_ACLS, 3, describe_all)
        on_second = await second.request(DESCRIBE_ACLS, 3, describe_all)
        assert sorted(r.resource_type for r in on_first.resources) == [TOPIC, CLUSTER]
        assert [r.resource_type for r in on_second.resources] == [CLUSTER]
        assert (await first.request(METADATA, 12, topic_metadata)).topics[0].error_code == 0
        assert (await second.request(METADATA, 12, topic_metadata)).topics[0].error_code \
            == TOPIC_AUTHORIZATION_FAILED
        await mc.control.resume_metadata(1)
        on_second = await second.request(DESCRIBE_ACLS, 3, describe_all)
        assert sorted(r.resource_type for r in on_second.resources) == [TOPIC, CLUSTER]
        assert (await second.request(METADATA, 12, topic_metadata)).topics[0].error_code == 0


async def test_create_topics_withholds_configs_without_describe_configs(
        secured: MockCluster) -> None:
    """CREATE alone creates the topic, but the v5+ answer withholds its configs and counts
    (topic_config_error_code TOPIC_AUTHORIZATION_FAILED), as Kafka's; with
    DESCRIBE_CONFIGS on the topic they are there."""
    client = await _client(secured)

    def spec(name: str) -> dict[str, object]:
        return {"name": name, "num_partitions": 2, "replication_factor": 1,
                "assignments": [], "configs": [{"name": "retention.ms", "value": "1000"}]}

    for name in ("blind", "seeing"):
        await secured.control.create_acl("TOPIC", name, ANON, "CREATE")
    await secured.control.create_acl("TOPIC", "seeing", ANON, "DESCRIBE_CONFIGS")
    answer = await client.request(19, 7, {"topics": [spec("blind"), spec("seeing")],
                                          "timeout_ms": 5000, "validate_only": False})
    blind, seeing = answer.topics
    assert (blind.error_code, blind.topic_config_error_code, blind.num_partitions,
            blind.replication_factor, list(blind.configs)) == (
        0, TOPIC_AUTHORIZATION_FAILED, -1, -1, [])
    assert (seeing.error_code, seeing.topic_config_error_code, seeing.num_partitions,
            seeing.replication_factor) == (0, 0, 2, 1)
    assert {c.name: c.value for c in seeing.configs}["retention.ms"] == "1000"
    assert sorted(secured.cluster.image.topics) == ["blind", "seeing"]
