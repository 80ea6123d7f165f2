"""Waits instead of sleeps: verbs that block until a condition holds, or answer 408.

Driven with real clients where the condition comes from clients (aiokafka consumers joining
a group and committing, a producer writing), and with the model where it does not. A wait
that cannot be satisfied names what it expected and what it saw last. No test asserts on
durations: only on what the wait answered and in which order things happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.control import ControlError
from mockbroker.embedded import MockCluster, MockClusterThread
from tests.support.cli import http_json
from tests.support.rawclient import connect_broker

TOPIC = "waits"
SHORT_MS = 300  # for waits that must time out
METADATA = 3


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=3, control_port=0) as cluster:
        await cluster.control.create_topic(TOPIC, partitions=2)
        yield cluster


def _produce_model(mc: MockCluster, partition: int, values: list[bytes],
                   **batch: Any) -> None:
    part = mc.cluster.image.partition(TOPIC, partition)
    assert part is not None
    result = mc.cluster.produce(mc.cluster.brokers[part.leader], TOPIC, partition,
                                build_batch([RecordSpec(value=v) for v in values], **batch),
                                acks=1)
    assert result.ok, result


async def test_group_stable_and_committed_offset_with_real_consumers(mc: MockCluster) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    boot = mc.bootstrap_servers
    first = AIOKafkaConsumer(TOPIC, bootstrap_servers=boot, group_id="g",
                             enable_auto_commit=False, auto_offset_reset="earliest")
    await first.start()
    second: AIOKafkaConsumer | None = None
    try:
        # the consumer joins in the background (its first getmany drives the rebalance)
        polling = asyncio.ensure_future(first.getmany(timeout_ms=5000))
        one = await mc.control.wait_group_stable("g", 1)
        assert one["satisfied"] and one["observed"]["state"] == "Stable"
        assert one["observed"]["members"] == 1
        await polling

        second = AIOKafkaConsumer(TOPIC, bootstrap_servers=boot, group_id="g",
                                  enable_auto_commit=False, auto_offset_reset="earliest")
        await second.start()
        polls = [asyncio.ensure_future(c.getmany(timeout_ms=8000)) for c in (first, second)]
        two = await mc.control.wait_group_stable("g", 2, timeout_ms=20_000)
        assert two["observed"]["members"] == 2
        assert two["observed"]["generation"] > one["observed"]["generation"]
        await asyncio.gather(*polls)

        # a commit from the consumer that owns partition 0 satisfies the offset wait
        owner = first if TopicPartition(TOPIC, 0) in first.assignment() else second
        waiting = asyncio.ensure_future(
            mc.control.wait_committed_offset("g", TOPIC, 0, 7, timeout_ms=20_000))
        await asyncio.sleep(0)
        assert not waiting.done()
        await owner.commit({TopicPartition(TOPIC, 0): 7})
        committed = await waiting
        assert committed["observed"] == {"committed_offset": 7}

        with pytest.raises(ControlError) as info:
            await mc.control.wait_group_stable("g", 3, timeout_ms=SHORT_MS)
        assert info.value.status == 408
        assert "group 'g' to be Stable with 3 member(s)" in info.value.message
        assert "'members': 2" in info.value.message
    finally:
        await first.stop()
        if second is not None:
            await second.stop()


async def test_topic_messages_counts_records_not_markers(mc: MockCluster) -> None:
    waiting = asyncio.ensure_future(mc.control.wait_topic_messages(TOPIC, 5))
    _produce_model(mc, 0, [b"a", b"b"])
    await asyncio.sleep(0.05)
    assert not waiting.done()  # 2 of 5
    _produce_model(mc, 1, [b"c", b"d", b"e"])
    assert (await waiting)["observed"] == {"messages": 5}

    # a committed transaction adds its data records; its COMMIT marker does not count
    txn = mc.cluster.transactions
    init = txn.init_producer_id("tx", 10_000)
    txn.add_partitions("tx", init.producer_id, init.producer_epoch, [(TOPIC, 0)])
    _produce_model(mc, 0, [b"t1"], producer_id=init.producer_id,
                   producer_epoch=init.producer_epoch, base_sequence=0, transactional=True)
    txn.end_txn("tx", init.producer_id, init.producer_epoch, commit=True)
    only_0 = await mc.control.wait_topic_messages(TOPIC, 3, partition=0)
    assert only_0["observed"] == {"messages": 3}
    with pytest.raises(ControlError) as info:
        await mc.control.wait_topic_messages(TOPIC, 7, timeout_ms=SHORT_MS)
    assert info.value.status == 408 and "'messages': 6" in info.value.message

    # a topic that does not exist yet is waited for, not refused
    with pytest.raises(ControlError) as info:
        await mc.control.wait_topic_messages("later", 1, timeout_ms=SHORT_MS)
    assert info.value.status == 408 and "does not exist" in info.value.message


async def test_fault_consumed_after_its_last_firing(mc: MockCluster) -> None:
    fault = await mc.control.inject_error("Metadata", "LEADER_NOT_AVAILABLE", topic=TOPIC,
                                          count=2)
    with pytest.raises(ControlError) as info:
        await mc.control.wait_fault_consumed(fault["id"], timeout_ms=SHORT_MS)
    assert info.value.status == 408 and "'remaining': 2" in info.value.message
    body = {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}
    async with await connect_broker(mc, 0) as client:
        waiting = asyncio.ensure_future(mc.control.wait_fault_consumed(fault["id"]))
        for _ in range(2):
            await client.request(METADATA, 8, body)
        consumed = await waiting
    assert consumed["observed"] == {"active": False}
    with pytest.raises(ControlError) as unknown:
        await mc.control.wait_fault_consumed(99)
    assert unknown.value.status == 404


async def test_broker_fenced_and_unfenced(mc: MockCluster) -> None:
    with pytest.raises(ControlError) as info:
        await mc.control.wait_broker_fenced(1, timeout_ms=SHORT_MS)
    assert info.value.status == 408 and "broker 1 to be fenced" in info.value.message
    await mc.control.stop_broker(1)
    assert (await mc.control.wait_broker_fenced(1))["observed"]["fenced"] is True
    await mc.control.start_broker(1)
    assert (await mc.control.wait_broker_fenced(1, fenced=False))["observed"] == {
        "fenced": False, "registered": True}


async def test_bad_arguments_are_400s(mc: MockCluster) -> None:
    for call in (mc.control.wait_group_stable("", 1),
                 mc.control.wait_group_stable("g", -1),
                 mc.control.wait_topic_messages(TOPIC, 1, timeout_ms=10**9),
                 mc.control.wait_broker_fenced(0, fenced="yes")):  # type: ignore[arg-type]
        with pytest.raises(ControlError) as info:
            await call
        assert info.value.status == 400, info.value.message


def _post(url: str, verb: str, body: dict[str, Any]) -> tuple[int, Any]:
    return http_json(f"{url}/{verb}", "POST", body)


async def test_waits_over_http(mc: MockCluster) -> None:
    url = mc.control_url
    assert url is not None
    _produce_model(mc, 0, [b"x"])
    status, body = await asyncio.to_thread(_post, url, "wait-topic-messages",
                                           {"topic": TOPIC, "count": 1})
    assert status == 200 and body["observed"] == {"messages": 1}
    status, body = await asyncio.to_thread(_post, url, "wait-topic-messages",
                                           {"topic": TOPIC, "count": 2, "timeout_ms": SHORT_MS})
    assert status == 408 and "to hold 2 message(s)" in body["error"]
    status, body = await asyncio.to_thread(_post, url, "wait-broker-fenced", {"broker": 9})
    assert status == 404


def test_blocking_waits_on_the_thread_backed_cluster() -> None:
    with MockClusterThread(brokers=1) as mock:
        mock.control.create_topic("sync", partitions=1)
        batch = build_batch([RecordSpec(value=b"v")])

        def produce() -> None:
            node = mock.cluster.brokers[0]
            assert mock.cluster.produce(node, "sync", 0, batch, acks=1).ok

        later = mock.submit(asyncio.sleep, 0.05)  # the produce comes after the wait began
        later.add_done_callback(lambda _: mock.submit(produce))
        result = mock.control.wait_topic_messages("sync", 1, timeout_ms=20_000)
        assert result["observed"] == {"messages": 1}
