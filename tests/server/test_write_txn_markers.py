"""WriteTxnMarkers (key 27) over the wire: what kafka-transactions abort sends to a
partition's leader for a hanging transaction. The marker closes the producer's transaction
on the partition (the last stable offset moves past it, an abort enters the aborted index),
each partition is answered on its own, and older producer or coordinator epochs are refused
as Kafka's producer state refuses them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E
from kafka_protocol_codec.records import decode_batch

from mockbroker.embedded import MockCluster
from tests.server.test_transactions_wire import (
    TOPIC,
    Brokers,
    add_partitions,
    batch,
    coordinator,
    init_pid,
    leader,
    produce,
)
from tests.support.admin import running_cluster
from tests.support.rawclient import connect_broker

WRITE_TXN_MARKERS, API_VERSIONS, DESCRIBE_PRODUCERS = 27, 18, 61


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=3) as cluster:
        cluster.cluster.create_topic(TOPIC, 2)
        yield cluster


@pytest.fixture
async def call(mc: MockCluster) -> AsyncIterator[Brokers]:
    brokers = Brokers(mc)
    try:
        yield brokers
    finally:
        await brokers.close()


def marker(pid: int, epoch: int, partitions: list[int], *, commit: bool = False,
           coordinator_epoch: int = 0) -> dict[str, object]:
    return {"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
            "topics": [{"name": TOPIC, "partition_indexes": partitions}],
            "coordinator_epoch": coordinator_epoch}


async def write(call: Brokers, broker: int, *markers: dict[str, object]) -> list[dict[int, int]]:
    """Each marker's {partition: error}."""
    response = await call(broker, WRITE_TXN_MARKERS, 1, {"markers": list(markers)})
    return [{p.partition_index: p.error_code for t in m.topics for p in t.partitions}
            for m in response.markers]


async def test_an_abort_marker_closes_a_hanging_transaction(mc, call):
    coord, _ = coordinator(mc)
    init = await init_pid(call, coord)
    pid, epoch = init.producer_id, init.producer_epoch
    assert await add_partitions(call, coord, pid, epoch, [0]) == {0: E.NONE}
    assert (await produce(call, mc, batch(pid, epoch, 0, 2, transactional=True))).error_code \
        == E.NONE
    log = mc.cluster.log(mc.cluster.image.topics[TOPIC].topic_id, 0)
    assert log is not None and log.producer_states[pid].current_txn_first_offset == 0
    assert log.last_stable_offset == 0
    owner = leader(mc, 0)
    other = next(b for b in mc.cluster.brokers if b != owner)
    assert await write(call, other, marker(pid, epoch, [0])) == [
        {0: E.NOT_LEADER_OR_FOLLOWER}]
    assert await write(call, owner, marker(pid, epoch, [0, 99], coordinator_epoch=5)) == [
        {0: E.NONE, 99: E.UNKNOWN_TOPIC_OR_PARTITION}]
    assert log.batches[-1].is_control and log.batches[-1].base_offset == 2
    assert log.producer_states[pid].current_txn_first_offset is None
    assert (log.last_stable_offset, log.aborted_index) == (3, [(pid, 0, 2)])
    # the producer's last timestamp is now the marker's (Kafka's lastTimestamp)
    described = await call(owner, DESCRIBE_PRODUCERS, 0, {"topics": [
        {"name": TOPIC, "partition_indexes": [0]}]})
    [producer] = described.topics[0].partitions[0].active_producers
    marker_time = decode_batch(log.batches[-1].data).records[0].timestamp
    assert marker_time > 0
    assert (producer.producer_id, producer.last_timestamp, producer.current_txn_start_offset,
            producer.coordinator_epoch) == (pid, marker_time, -1, 5)
    assert await write(call, owner, marker(pid, epoch, [0], coordinator_epoch=4),
                       marker(pid, epoch - 1, [0], coordinator_epoch=5)) == [
        {0: E.TRANSACTION_COORDINATOR_FENCED}, {0: E.INVALID_PRODUCER_EPOCH}]
    assert log.log_end_offset == 3


async def test_write_txn_markers_is_advertised_and_needs_cluster_action() -> None:
    async with running_cluster(brokers=1, authorizer=True) as mc:
        mc.cluster.create_topic(TOPIC, 1)
        async with await connect_broker(mc, 0) as client:
            versions = await client.request(API_VERSIONS, 3, {
                "client_software_name": "t", "client_software_version": "1"})
            assert [(k.min_version, k.max_version) for k in versions.api_keys
                    if k.api_key == WRITE_TXN_MARKERS] == [(1, 1)]  # Kafka 4.0's range
            response = await client.request(WRITE_TXN_MARKERS, 1, {"markers": [
                marker(7, 0, [0])]})
            assert [(p.partition_index, p.error_code) for m in response.markers
                    for t in m.topics for p in t.partitions] == [
                (0, E.CLUSTER_AUTHORIZATION_FAILED)]
