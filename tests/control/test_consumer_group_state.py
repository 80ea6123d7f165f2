"""The control API with KIP-848 consumer groups: `state`, the web view, wait-group-stable and
reset. Members are driven through the cluster's coordinator, as ConsumerGroupHeartbeat
requests would drive them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.groups.consumer_group_model import HeartbeatRequest, HeartbeatResult
from mockbroker.control.api import ControlError
from mockbroker.control.webview import render_view
from mockbroker.embedded import MockCluster


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=3) as cluster:
        await cluster.control.create_topic("t", partitions=2)
        yield cluster


def join(mc: MockCluster, member_id: str) -> HeartbeatResult:
    result = mc.cluster.consumer_groups.heartbeat(HeartbeatRequest(
        "cg", member_id, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",),
        owned=frozenset()))
    assert result.error == ErrorCode.NONE
    return result


async def test_state_and_web_view_show_epochs_and_assignments(mc: MockCluster) -> None:
    join(mc, "a")
    second = join(mc, "b")  # b waits for a to release its partition
    state = await mc.control.state()
    group = state["groups"]["cg"]
    assert group["type"] == "consumer" and group["state"] == "Reconciling"
    assert (group["group_epoch"], group["assignment_epoch"], group["assignor"]) == (
        2, 2, "uniform")
    members = {m["member_id"]: m for m in group["members"]}
    assert members["a"]["assigned"] == {"t": [0, 1]} and members["a"]["member_epoch"] == 1
    assert members["b"]["assigned"] == {} and members["b"]["member_epoch"] == second.member_epoch
    assert members["b"]["member_state"] == "unreleased_partitions"
    assert len(members["b"]["target"]["t"]) == 1
    html = render_view(state)
    assert "a (epoch 1: t-0 t-1)" in html and "b (epoch 2: none)" in html


async def test_wait_group_stable_waits_for_reconciliation(mc: MockCluster) -> None:
    join(mc, "a")
    join(mc, "b")
    with pytest.raises(ControlError) as timed_out:
        await mc.control.wait_group_stable(group="cg", members=2, timeout_ms=50)
    assert timed_out.value.status == 408
    coordinator = mc.cluster.consumer_groups
    group = coordinator.get("cg")
    assert group is not None
    waiting = asyncio.ensure_future(
        mc.control.wait_group_stable(group="cg", members=2, timeout_ms=5_000))
    owned_a = group.members["a"].assigned | group.members["a"].pending_revocation
    kept = coordinator.heartbeat(HeartbeatRequest("cg", "a", 1, owned=owned_a)).assignment
    assert kept is not None
    coordinator.heartbeat(HeartbeatRequest("cg", "a", 1, owned=kept))  # released
    coordinator.heartbeat(HeartbeatRequest("cg", "b", 2, owned=frozenset()))
    result = await waiting
    assert result["observed"] == {"state": "Stable", "members": 2, "group_epoch": 2}


async def test_reset_drops_consumer_groups(mc: MockCluster) -> None:
    join(mc, "a")
    await mc.control.reset()
    state = await mc.control.state()
    assert state["groups"] == {}
    assert mc.cluster.consumer_groups.get("cg") is None
