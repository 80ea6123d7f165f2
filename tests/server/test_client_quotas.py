"""Client quotas over the wire with the raw codec: AlterClientQuotas / DescribeClientQuotas
(entities, defaults, filters, validate-only, refusals) and produce-rate enforcement on a
manual clock, where the throttle time is exact: (rate - quota) / quota * 10 s window.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import ManualClock
from mockbroker.embedded import MockCluster
from tests.support.admin import leader_client
from tests.support.rawclient import RawClient, connect_broker

# quota sample windows are aligned to the clock: a start on a window boundary keeps the
# expected throttle times exact
WINDOW_ALIGNED_START_MS = 1_700_000_000_000

DESCRIBE, ALTER, PRODUCE = 48, 49, 0
EXACT, DEFAULT, ANY = 0, 1, 2
INVALID_REQUEST = 42


@pytest.fixture
async def cluster() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=1, clock=ManualClock(WINDOW_ALIGNED_START_MS)) as mc:
        yield mc


def _entity(**parts: str | None) -> list[dict[str, Any]]:
    return [{"entity_type": k.replace("_", "-"), "entity_name": v} for k, v in parts.items()]


def _op(key: str, value: float = 0.0, remove: bool = False) -> dict[str, Any]:
    return {"key": key, "value": value, "remove": remove}


async def _alter(client: RawClient, *entries: dict[str, Any],
                 validate_only: bool = False) -> list[tuple[int, str | None]]:
    answer = await client.request(ALTER, 1, {"entries": list(entries),
                                             "validate_only": validate_only})
    return [(e.error_code, e.error_message) for e in answer.entries]


async def _describe(client: RawClient, *components: tuple[str, int, str | None],
                    strict: bool = False) -> list[tuple[tuple[tuple[str, str | None], ...],
                                                        dict[str, float]]]:
    answer = await client.request(DESCRIBE, 1, {"components": [
        {"entity_type": t, "match_type": m, "match": n} for t, m, n in components],
        "strict": strict})
    assert answer.error_code == 0, answer.error_message
    return sorted(((tuple((e.entity_type, e.entity_name) for e in entry.entity),
                    {v.key: v.value for v in entry["values"]}) for entry in answer.entries),
                  key=repr)


async def test_alter_and_describe_client_quotas(cluster: MockCluster) -> None:
    client = await connect_broker(cluster, 0)
    assert await _alter(
        client,
        {"entity": _entity(user="alice"), "ops": [_op("producer_byte_rate", 1024)]},
        {"entity": _entity(user="alice", client_id=None),
         "ops": [_op("consumer_byte_rate", 2048)]},
        {"entity": _entity(client_id=None), "ops": [_op("request_percentage", 50)]},
        {"entity": _entity(ip="127.0.0.1"), "ops": [_op("connection_creation_rate", 5)]},
    ) == [(0, None)] * 4
    # validate-only stores nothing; refusals as Kafka's controller words them
    assert await _alter(client, {"entity": _entity(user="bob"),
                                 "ops": [_op("producer_byte_rate", 1)]},
                        validate_only=True) == [(0, None)]
    refused = await _alter(
        client,
        {"entity": _entity(user="bob"), "ops": [_op("bogus_rate", 1)]},
        {"entity": _entity(user="bob", ip="1.2.3.4"), "ops": [_op("producer_byte_rate", 1)]},
        {"entity": _entity(group="g"), "ops": [_op("producer_byte_rate", 1)]})
    assert [code for code, _ in refused] == [INVALID_REQUEST] * 3
    assert refused[0][1] == "Invalid configuration key bogus_rate"

    assert await _describe(client, ("user", EXACT, "alice")) == [
        ((("client-id", None), ("user", "alice")), {"consumer_byte_rate": 2048.0}),
        ((("user", "alice"),), {"producer_byte_rate": 1024.0})]
    assert await _describe(client, ("user", EXACT, "alice"), strict=True) == [
        ((("user", "alice"),), {"producer_byte_rate": 1024.0})]
    assert await _describe(client, ("client-id", DEFAULT, None)) == [
        ((("client-id", None), ("user", "alice")), {"consumer_byte_rate": 2048.0}),
        ((("client-id", None),), {"request_percentage": 50.0})]
    assert [e for e, _ in await _describe(client, ("ip", ANY, None))] == [
        (("ip", "127.0.0.1"),)]
    # remove: the entity disappears with its last value
    assert await _alter(client, {"entity": _entity(user="alice"),
                                 "ops": [_op("producer_byte_rate", remove=True)]}) == [(0, None)]
    assert await _describe(client, ("user", EXACT, "alice"), strict=True) == []


async def test_produce_over_its_byte_rate_is_throttled_and_muted(cluster: MockCluster) -> None:
    cluster.cluster.create_topic("metered", 1, 1)
    client = await leader_client(cluster, "metered", 0)  # client id "rawclient"
    batch = build_batch([RecordSpec(value=b"x" * 1000) for _ in range(5)], base_timestamp=1)
    size = len(batch)
    # rate = size / 10 s (the window before 10 full samples); quota a little below it
    quota = size / 10 / 1.02
    await cluster.control.set_quota({"client-id": "rawclient"}, {"producer_byte_rate": quota})
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "metered", "partition_data": [{"index": 0, "records": batch}]}]}
    first = await client.request(PRODUCE, 9, body)
    expected = int((size / 10 - quota) / quota * 10_000)  # 0.02 * 10 s
    assert first.throttle_time_ms == expected and 195 <= expected <= 200
    assert first.responses[0].partition_responses[0].error_code == 0
    state = (await cluster.control.state())["quotas"]
    assert state["recorded"]["producer_byte_rate"] == size
    assert state["throttled_responses"]["producer_byte_rate"] == 1
    assert state["throttles"] == [{"broker": 0, "user": "ANONYMOUS", "client_id": "rawclient",
                                   "quota": "producer_byte_rate",
                                   "throttle_time_ms": expected, "active": True}]
    # the manual clock never moves, yet the muted connection answers its next request
    # (the mute is a loop timer): bounded by the client's 5 s timeout
    second = await client.request(PRODUCE, 9, body, timeout=expected / 1000 + 5)
    assert second.responses[0].partition_responses[0].base_offset == 5
    assert second.throttle_time_ms > expected  # twice the bytes in the same window


async def test_no_quota_no_throttle(cluster: MockCluster) -> None:
    cluster.cluster.create_topic("free", 1, 1)
    client = await leader_client(cluster, "free", 0)
    batch = build_batch([RecordSpec(value=b"y" * 1000)], base_timestamp=1)
    answer = await client.request(PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": "free", "partition_data": [{"index": 0, "records": batch}]}]})
    assert answer.throttle_time_ms == 0
    state = (await cluster.control.state())["quotas"]
    assert state["recorded"]["producer_byte_rate"] == len(batch)
    assert state["throttled_responses"]["producer_byte_rate"] == 0


async def test_request_percentage_throttles_any_api(cluster: MockCluster) -> None:
    """Any request counts its handling time against request_percentage; far over a tiny
    quota the throttle is Kafka's cap, the whole 11 s window."""
    await cluster.control.set_quota({"user": None, "client-id": "rawclient"},
                                    {"request_percentage": 1e-9})
    client = await connect_broker(cluster, 0)
    answer = await client.request(3, 12, {"topics": [], "allow_auto_topic_creation": False,
                                          "include_topic_authorized_operations": False})
    assert answer.throttle_time_ms == 11_000
    state = (await cluster.control.quotas())
    assert state["throttled_responses"] == {"producer_byte_rate": 0, "consumer_byte_rate": 0,
                                            "request_percentage": 1}
    assert [(t["user"], t["quota"]) for t in state["throttles"]] == [
        ("ANONYMOUS", "request_percentage")]
