"""KIP-848 consumer groups on the wire with a raw codec client.

ConsumerGroupHeartbeat v0 (coordinator-made member id) and v1 (client-made member id,
regex), ConsumerGroupDescribe, OffsetCommit/OffsetFetch v9 with member epochs, ListGroups
v5 with the type filter, DescribeGroups and JoinGroup against a consumer group, and
NOT_COORDINATOR from a broker that does not coordinate the group.
"""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.groups.group_migration import decode_assignment
from mockbroker.embedded import MockCluster
from mockbroker.handlers.group_order import kafka_order
from tests.cluster.test_group_migration import subscription
from tests.support.rawclient import RawClient, connect_broker


def _join(group: str, member_id: str = "", topics: list[str] | None = None,
          regex: str | None = None) -> dict[str, Any]:
    return {"group_id": group, "member_id": member_id, "member_epoch": 0,
            "rebalance_timeout_ms": 30_000, "subscribed_topic_names": topics,
            "subscribed_topic_regex": regex, "topic_partitions": []}


async def _coordinator(mc: MockCluster, group: str) -> RawClient:
    owner = mc.cluster.coordinator_for(0, group)
    assert owner is not None
    return await connect_broker(mc, owner)


def _owned(resp: Any) -> list[dict[str, Any]]:
    return [{"topic_id": t.topic_id, "partitions": list(t.partitions)}
            for t in resp.assignment.topic_partitions]


async def test_heartbeat_describe_and_offsets_on_the_wire():
    async with MockCluster(brokers=3) as mc:
        mc.cluster.create_topic("orders", 2)
        topic_id = mc.cluster.image.topics["orders"].topic_id
        async with await _coordinator(mc, "wire-g") as client:
            joined = await client.request(68, 0, _join("wire-g", topics=["orders"]))
            assert joined.error_code == ErrorCode.NONE and joined.member_id
            assert joined.member_epoch == 1 and joined.heartbeat_interval_ms == 5000
            assert _owned(joined) == [{"topic_id": topic_id, "partitions": [0, 1]}]
            member = joined.member_id

            owner = mc.cluster.coordinator_for(0, "wire-g")
            nope = next(name for name in (f"nope-{i}" for i in range(100))
                        if mc.cluster.coordinator_for(0, name) == owner)
            described = await client.request(69, 0, {"group_ids": ["wire-g", nope],
                                                     "include_authorized_operations": False})
            # answered in the order of Kafka's coordinator (handlers/group_order.py)
            by_id = {g.group_id: g for g in described.groups}
            assert [g.group_id for g in described.groups] == [
                ["wire-g", nope][i] for i in kafka_order(["wire-g", nope], 50)]
            group, missing = by_id["wire-g"], by_id[nope]
            assert group.error_code == ErrorCode.NONE and group.group_state == "Stable"
            assert (group.group_epoch, group.assignment_epoch) == (1, 1)
            assert group.assignor_name == "uniform"
            [m] = group.members
            assert m.member_id == member and m.member_epoch == 1
            assert list(m.subscribed_topic_names) == ["orders"]
            [assigned] = m.assignment.topic_partitions
            assert assigned.topic_name == "orders" and list(assigned.partitions) == [0, 1]
            assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND

            def commit(epoch: int, version: int = 9) -> dict[str, Any]:
                return {"group_id": "wire-g", "generation_id_or_member_epoch": epoch,
                        "member_id": member, "group_instance_id": None,
                        "topics": [{"name": "orders", "partitions": [
                            {"partition_index": 0, "committed_offset": 7,
                             "committed_leader_epoch": 0, "committed_metadata": ""}]}]}
            ok = await client.request(8, 9, commit(1))
            assert ok.topics[0].partitions[0].error_code == ErrorCode.NONE
            stale = await client.request(8, 9, commit(2))
            assert stale.topics[0].partitions[0].error_code == ErrorCode.STALE_MEMBER_EPOCH

            def fetch(epoch: int) -> dict[str, Any]:
                return {"groups": [{"group_id": "wire-g", "member_id": member,
                                    "member_epoch": epoch, "topics": [
                                        {"name": "orders", "partition_indexes": [0]}]}],
                        "require_stable": False}
            fetched = await client.request(9, 9, fetch(1))
            assert fetched.groups[0].error_code == ErrorCode.NONE
            assert fetched.groups[0].topics[0].partitions[0].committed_offset == 7
            fenced = await client.request(9, 9, fetch(0))
            assert fenced.groups[0].error_code == ErrorCode.STALE_MEMBER_EPOCH

            listed = await client.request(16, 5, {"states_filter": [],
                                                  "types_filter": ["Consumer"]})
            assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == [
                ("wire-g", "consumer", "Stable")]
            classic_only = await client.request(16, 5, {"states_filter": [],
                                                        "types_filter": ["classic"]})
            assert [g.group_id for g in classic_only.groups] == []
            old = await client.request(15, 5, {"groups": ["wire-g"],
                                               "include_authorized_operations": False})
            assert old.groups[0].error_code == ErrorCode.NONE  # before v6 (KIP-1043) ...
            assert old.groups[0].group_state == "Dead"  # ... not a classic group: Dead
            # a classic member joins the consumer group (Kafka 4.0): a member id first,
            # then a join answered at once at generation = its member epoch, and a SyncGroup
            # that carries the server-side assignor's choice as a ConsumerProtocolAssignment
            def classic_join(member_id: str) -> dict[str, Any]:
                return {"group_id": "wire-g", "session_timeout_ms": 10_000,
                        "rebalance_timeout_ms": 10_000, "member_id": member_id,
                        "group_instance_id": None, "protocol_type": "consumer",
                        "protocols": [{"name": "range", "metadata": subscription("orders")}],
                        "reason": None}

            asked = await client.request(11, 9, classic_join(""))
            assert asked.error_code == ErrorCode.MEMBER_ID_REQUIRED and asked.member_id
            classic = await client.request(11, 9, classic_join(asked.member_id))
            assert classic.error_code == ErrorCode.NONE and classic.generation_id == 2
            assert (classic.protocol_type, classic.protocol_name) == ("consumer", "range")
            assert classic.leader == "" and list(classic.members) == []
            synced = await client.request(14, 5, {
                "group_id": "wire-g", "generation_id": 2, "member_id": asked.member_id,
                "group_instance_id": None, "protocol_type": "consumer",
                "protocol_name": "range", "assignments": []})
            assert synced.error_code == ErrorCode.NONE
            assert decode_assignment(bytes(synced.assignment)) == ()  # "orders" still owned
            beat = await client.request(12, 4, {
                "group_id": "wire-g", "generation_id": 2, "member_id": asked.member_id,
                "group_instance_id": None})
            assert beat.error_code == ErrorCode.NONE  # waits: no partition free yet
            listed = await client.request(16, 5, {"states_filter": [], "types_filter": []})
            assert [(g.group_id, g.group_type) for g in listed.groups] == [
                ("wire-g", "consumer")]
            left_classic = await client.request(13, 5, {
                "group_id": "wire-g",
                "members": [{"member_id": asked.member_id, "group_instance_id": None,
                             "reason": None}]})
            assert left_classic.error_code == ErrorCode.NONE
            assert [m.error_code for m in left_classic.members] == [ErrorCode.NONE]

            left = await client.request(68, 0, {"group_id": "wire-g", "member_id": member,
                                                "member_epoch": -1})
            assert left.error_code == ErrorCode.NONE and left.member_epoch == -1
            deleted = await client.request(42, 2, {"groups_names": ["wire-g"]})
            assert deleted.results[0].error_code == ErrorCode.NONE
            assert mc.cluster.consumer_groups.get("wire-g") is None


async def test_v1_client_member_id_regex_and_wrong_coordinator():
    async with MockCluster(brokers=3) as mc:
        mc.cluster.create_topic("logs-a", 1)
        mc.cluster.create_topic("logs-b", 1)
        mc.cluster.create_topic("other", 1)
        async with await _coordinator(mc, "re-g") as client:
            empty_id = await client.request(68, 1, _join("re-g", regex="logs-.*"))
            assert empty_id.error_code == ErrorCode.INVALID_REQUEST
            joined = await client.request(68, 1, _join("re-g", "my-own-id", regex="logs-.*"))
            assert joined.error_code == ErrorCode.NONE and joined.member_id == "my-own-id"
            ids = {mc.cluster.image.topics[n].topic_id for n in ("logs-a", "logs-b")}
            assert {t.topic_id for t in joined.assignment.topic_partitions} == ids
            bad = await client.request(68, 1, _join("re-g", "x", regex="logs-("))
            assert bad.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
        other = next(b for b in range(3) if b != mc.cluster.coordinator_for(0, "re-g"))
        async with await connect_broker(mc, other) as wrong:
            answer = await wrong.request(68, 1, _join("re-g", "y", topics=["other"]))
            assert answer.error_code == ErrorCode.NOT_COORDINATOR
            malformed = await wrong.request(68, 1, _join("", "y", topics=["other"]))
            assert malformed.error_code == ErrorCode.INVALID_REQUEST
            assert malformed.error_message == "GroupId can't be empty."


async def test_offset_commit_to_an_unknown_group_by_version():
    """From OffsetCommit v9 a member epoch for a group that does not exist is
    GROUP_ID_NOT_FOUND; before, ILLEGAL_GENERATION; epoch -1 is a simple commit."""
    async with MockCluster(brokers=1) as mc:
        mc.cluster.create_topic("t", 1)
        async with await connect_broker(mc, 0) as client:
            def commit(group: str, epoch: int) -> dict[str, Any]:
                return {"group_id": group, "generation_id_or_member_epoch": epoch,
                        "member_id": "m", "group_instance_id": None, "retention_time_ms": -1,
                        "topics": [{"name": "t", "partitions": [
                            {"partition_index": 0, "committed_offset": 1,
                             "committed_leader_epoch": -1, "committed_metadata": ""}]}]}
            expected = {9: ErrorCode.GROUP_ID_NOT_FOUND, 8: ErrorCode.ILLEGAL_GENERATION}
            for version, error in expected.items():
                answer = await client.request(8, version, commit(f"unknown-{version}", 3))
                assert answer.topics[0].partitions[0].error_code == error
            simple = await client.request(8, 9, commit("simple", -1))
            assert simple.topics[0].partitions[0].error_code == ErrorCode.NONE
