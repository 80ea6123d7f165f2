"""The idempotent and transactional producer APIs over the wire, with a raw codec client.

What real clients hide: a re-sent batch gets its original offset back and is stored once;
a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER; the transaction APIs answer NOT_COORDINATOR
on the wrong broker; PRODUCER_FENCED is sent only to versions that know it (KIP-588) and
INVALID_PRODUCER_EPOCH to older ones; read_committed fetches stop at the LSO and carry the
aborted transactions; the admin views (DescribeTransactions, ListTransactions,
DescribeProducers) report the coordinator's and the partitions' state; and ApiVersions
advertises exactly the versions handled; and transactions v2 (KIP-890 part 2: Produce v12,
TxnOffsetCommit v5, EndTxn v5 with its epoch bump) and part 1's verification errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.embedded import MockCluster
from tests.support.rawclient import RawClient, connect_broker

PRODUCE, FETCH, API_VERSIONS, INIT_PID = 0, 1, 18, 22
ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 24, 25, 26, 28
DESCRIBE_PRODUCERS, DESCRIBE_TXNS, LIST_TXNS = 61, 65, 66
TOPIC = "txn-wire"
TID = "wire-txn"
TIMEOUT_MS = 60_000
E = ErrorCode


class Brokers:
    """One RawClient per broker, opened on first use."""

    def __init__(self, mc: MockCluster) -> None:
        self.mc = mc
        self._clients: dict[int, RawClient] = {}

    async def __call__(self, broker: int, api_key: int, version: int,
                       body: dict[str, Any]) -> Struct:
        if broker not in self._clients:
            self._clients[broker] = await connect_broker(self.mc, broker,
                                                         client_id="test-txn-wire")
        return await self._clients[broker].request(api_key, version, body)

    async def close(self) -> None:
        for raw in self._clients.values():
            await raw.close()


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


def leader(mc: MockCluster, partition: int = 0) -> int:
    part = mc.cluster.image.partition(TOPIC, partition)
    assert part is not None
    return part.leader


def coordinator(mc: MockCluster) -> tuple[int, int]:
    """(the transactional id's coordinator, some other broker)."""
    owner = mc.cluster.coordinator_for(1, TID)
    assert owner is not None
    return owner, next(b for b in mc.cluster.brokers if b != owner)


async def produce(call: Brokers, mc: MockCluster, batch: bytes, partition: int = 0) -> Struct:
    """Produce v9 with the transactional id (Kafka refuses a transactional batch without
    one: TRANSACTIONAL_ID_AUTHORIZATION_FAILED, see test_transactional_batch_needs_an_id)."""
    body = await call(leader(mc, partition), PRODUCE, 9, {
        "transactional_id": TID, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [
            {"index": partition, "records": batch}]}]})
    return body.responses[0].partition_responses[0]


def batch(pid: int, epoch: int, seq: int, n: int, transactional: bool = False,
          tag: str = "v") -> bytes:
    return build_batch([RecordSpec(value=f"{tag}-{seq + i}".encode()) for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       transactional=transactional)


async def fetch(call: Brokers, mc: MockCluster, isolation: int) -> Struct:
    body = await call(leader(mc), FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": TOPIC, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
             "last_fetched_epoch": -1, "log_start_offset": -1,
             "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    return body.responses[0].partitions[0]


async def init_pid(call: Brokers, broker: int, version: int = 4,
                   txn_id: str | None = TID, timeout_ms: int = TIMEOUT_MS,
                   producer_id: int = -1, epoch: int = -1) -> Struct:
    return await call(broker, INIT_PID, version, {
        "transactional_id": txn_id, "transaction_timeout_ms": timeout_ms,
        "producer_id": producer_id, "producer_epoch": epoch})


async def add_partitions(call: Brokers, broker: int, pid: int, epoch: int,
                         partitions: list[int], version: int = 3) -> dict[int, int]:
    body = await call(broker, ADD_PARTITIONS, version, {
        "v3_and_below_transactional_id": TID, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": TOPIC, "partitions": partitions}]})
    [topic] = body.results_by_topic_v3_and_below
    return {r.partition_index: r.partition_error_code for r in topic.results_by_partition}


async def end_txn(call: Brokers, broker: int, pid: int, epoch: int, commit: bool,
                  version: int = 3) -> int:
    body = await call(broker, END_TXN, version, {
        "transactional_id": TID, "producer_id": pid, "producer_epoch": epoch,
        "committed": commit})
    return int(body.error_code)


# -- idempotence ----------------------------------------------------------------------------

async def test_resent_batch_gets_its_original_offset_and_a_gap_is_refused(mc, call):
    init = await init_pid(call, 0, txn_id=None)
    assert init.error_code == E.NONE and init.producer_epoch == 0
    pid = init.producer_id
    first = batch(pid, 0, 0, 3)
    assert (await produce(call, mc, first)).base_offset == 0
    assert (await produce(call, mc, batch(pid, 0, 3, 2))).base_offset == 3
    again = await produce(call, mc, first)
    assert again.error_code == E.NONE and again.base_offset == 0
    log = mc.cluster.log(mc.cluster.image.topics[TOPIC].topic_id, 0)
    assert log is not None and len(log.batches) == 2 and log.log_end_offset == 5
    gap = await produce(call, mc, batch(pid, 0, 9, 1))
    assert gap.error_code == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    stale = await produce(call, mc, batch(pid, -1, 5, 1))
    assert stale.error_code in (E.INVALID_PRODUCER_EPOCH, E.OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert log.log_end_offset == 5


# -- transactions ---------------------------------------------------------------------------

async def test_transaction_apis_on_the_wire(mc, call):
    coord, other = coordinator(mc)
    assert (await init_pid(call, other)).error_code == E.NOT_COORDINATOR
    assert (await init_pid(call, coord, timeout_ms=900_001)).error_code \
        == E.INVALID_TRANSACTION_TIMEOUT
    init = await init_pid(call, coord)
    assert init.error_code == E.NONE
    pid, epoch = init.producer_id, init.producer_epoch

    assert await add_partitions(call, coord, pid, epoch, [0, 99]) == {
        0: E.OPERATION_NOT_ATTEMPTED, 99: E.UNKNOWN_TOPIC_OR_PARTITION}
    assert await add_partitions(call, other, pid, epoch, [0]) == {0: E.NOT_COORDINATOR}
    assert await add_partitions(call, coord, pid, epoch, [0, 1]) == {0: E.NONE, 1: E.NONE}

    # an open transaction holds read_committed back at its first offset
    assert (await produce(call, mc, batch(pid, epoch, 0, 4, True))).error_code == E.NONE
    committed_view = await fetch(call, mc, isolation=1)
    assert committed_view.last_stable_offset == 0 and committed_view.high_watermark == 4
    assert committed_view.records in (b"", None)
    assert len(split_batches((await fetch(call, mc, isolation=0)).records)) == 1

    assert await end_txn(call, coord, pid, epoch, commit=False) == E.NONE
    after = await fetch(call, mc, isolation=1)
    assert after.last_stable_offset == after.high_watermark == 5  # data + marker
    assert [(a.producer_id, a.first_offset) for a in after.aborted_transactions] == [(pid, 0)]
    assert len(split_batches(after.records)) == 2

    # a new producer fences the old epoch; each version hears it its own way
    renewed = await init_pid(call, coord)
    assert (renewed.producer_id, renewed.producer_epoch) == (pid, epoch + 1)
    assert await end_txn(call, coord, pid, epoch, True, version=1) == E.INVALID_PRODUCER_EPOCH
    assert await end_txn(call, coord, pid, epoch, True, version=2) == E.PRODUCER_FENCED
    assert await add_partitions(call, coord, pid, epoch, [0], version=1) \
        == {0: E.INVALID_PRODUCER_EPOCH}
    assert await add_partitions(call, coord, pid, epoch, [0], version=2) \
        == {0: E.PRODUCER_FENCED}
    for version, expected in ((1, E.INVALID_PRODUCER_EPOCH), (3, E.PRODUCER_FENCED)):
        body = await call(coord, ADD_OFFSETS, version, {
            "transactional_id": TID, "producer_id": pid, "producer_epoch": epoch,
            "group_id": "g"})
        assert body.error_code == expected
    for version, expected in ((3, E.INVALID_PRODUCER_EPOCH), (4, E.PRODUCER_FENCED)):
        kip360 = await init_pid(call, coord, version, producer_id=pid, epoch=epoch)
        assert kip360.error_code == expected
    # the current producer recovers with a KIP-360 bump
    bumped = await init_pid(call, coord, 3, producer_id=pid, epoch=epoch + 1)
    assert (bumped.error_code, bumped.producer_epoch) == (E.NONE, epoch + 2)
    # an Empty transaction cannot end
    assert await end_txn(call, coord, pid, epoch + 2, True) == E.INVALID_TXN_STATE


async def test_txn_offset_commit_needs_the_group_coordinator_and_the_transaction(mc, call):
    coord = mc.cluster.coordinator_for(1, TID)
    group = "wire-group"
    group_coord = mc.cluster.coordinator_for(0, group)
    assert coord is not None and group_coord is not None
    init = await init_pid(call, coord)
    pid, epoch = init.producer_id, init.producer_epoch

    async def commit(broker: int, version: int = 3) -> int:
        body = await call(broker, TXN_OFFSET_COMMIT, version, {
            "transactional_id": TID, "group_id": group, "producer_id": pid,
            "producer_epoch": epoch, "generation_id": -1, "member_id": "",
            "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1,
                 "committed_metadata": "m"}]}]})
        return int(body.topics[0].partitions[0].error_code)

    wrong = next(b for b in mc.cluster.brokers if b != group_coord)
    assert await commit(wrong) == E.NOT_COORDINATOR
    assert await commit(group_coord) == E.INVALID_TXN_STATE  # AddOffsetsToTxn first
    body = await call(coord, ADD_OFFSETS, 3, {"transactional_id": TID, "producer_id": pid,
                                              "producer_epoch": epoch, "group_id": group})
    assert body.error_code == E.NONE
    assert await commit(group_coord) == E.NONE
    offsets = mc.cluster.groups.offsets
    assert offsets.get(group, TOPIC, 0) is None and offsets.has_pending(group, TOPIC, 0)
    assert await end_txn(call, coord, pid, epoch, commit=True) == E.NONE
    stored = offsets.get(group, TOPIC, 0)
    assert stored is not None and stored.offset == 3 and stored.metadata == "m"


async def test_transactional_produce_outside_the_transaction_is_refused(mc, call):
    coord, _ = coordinator(mc)
    init = await init_pid(call, coord)
    pid, epoch = init.producer_id, init.producer_epoch
    refused = await produce(call, mc, batch(pid, epoch, 0, 1, True))
    # ReplicaManager's words for the coordinator's verdict, before the log: no log start
    assert (refused.error_code, refused.log_start_offset) == (E.INVALID_TXN_STATE, -1)
    assert refused.error_message == "Partition was not added to the transaction"
    assert await add_partitions(call, coord, pid, epoch, [0]) == {0: E.NONE}
    assert (await produce(call, mc, batch(pid, epoch, 0, 1, True))).error_code == E.NONE
    stale = await produce(call, mc, batch(pid, epoch - 1, 1, 1, True))
    assert stale.error_code == E.INVALID_PRODUCER_EPOCH


async def test_transactional_batch_needs_an_id(mc, call):
    """KafkaApis: transactional records in a request without a transactional id answer every
    partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED (authorizer or not); nothing is
    written."""
    coord, _ = coordinator(mc)
    init = await init_pid(call, coord)
    pid, epoch = init.producer_id, init.producer_epoch
    assert await add_partitions(call, coord, pid, epoch, [0]) == {0: E.NONE}
    body = await call(leader(mc), PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [
            {"index": 0, "records": batch(pid, epoch, 0, 1, True)}]}]})
    [refused] = body.responses[0].partition_responses
    assert (refused.error_code, refused.base_offset, refused.log_start_offset) == (
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    assert (await produce(call, mc, batch(pid, epoch, 0, 1, True))).base_offset == 0


# -- admin views and ApiVersions ------------------------------------------------------------

async def test_describe_and_list_transactions_and_producers(mc, call):
    coord, other = coordinator(mc)
    init = await init_pid(call, coord)
    pid, epoch = init.producer_id, init.producer_epoch
    await add_partitions(call, coord, pid, epoch, [1])
    await produce(call, mc, batch(pid, epoch, 0, 2, True), partition=1)

    body = await call(coord, DESCRIBE_TXNS, 0, {"transactional_ids": [TID, "unknown"]})
    mine, unknown = body.transaction_states
    assert (mine.error_code, mine.transaction_state, mine.producer_id, mine.producer_epoch) \
        == (E.NONE, "Ongoing", pid, epoch)
    assert [(t.topic, list(t.partitions)) for t in mine.topics] == [(TOPIC, [1])]
    assert mine.transaction_timeout_ms == TIMEOUT_MS and mine.transaction_start_time_ms > 0
    assert unknown.error_code in (E.TRANSACTIONAL_ID_NOT_FOUND, E.NOT_COORDINATOR)
    elsewhere = await call(other, DESCRIBE_TXNS, 0, {"transactional_ids": [TID]})
    assert elsewhere.transaction_states[0].error_code == E.NOT_COORDINATOR

    listed = []
    for broker in mc.cluster.brokers:
        answer = await call(broker, LIST_TXNS, 1, {"state_filters": ["Ongoing", "Bogus"],
                                                   "producer_id_filters": [],
                                                   "duration_filter": -1})
        assert list(answer.unknown_state_filters) == ["Bogus"]
        listed += [(s.transactional_id, s.producer_id, s.transaction_state)
                   for s in answer.transaction_states]
    assert listed == [(TID, pid, "Ongoing")]

    producers = await call(leader(mc, 1), DESCRIBE_PRODUCERS, 0, {
        "topics": [{"name": TOPIC, "partition_indexes": [1]}]})
    [part] = producers.topics[0].partitions
    assert part.error_code == E.NONE
    [state] = part.active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence,
            state.current_txn_start_offset) == (pid, epoch, 1, 0)


async def test_api_versions_advertise_the_handled_transaction_versions(call):
    body = await call(0, API_VERSIONS, 3, {"client_software_name": "raw",
                                           "client_software_version": "1"})
    versions = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    # Kafka 4.0's ranges: transactions v2 (KIP-890) included
    assert versions[INIT_PID] == versions[ADD_PARTITIONS] == versions[END_TXN] == (0, 5)
    assert versions[TXN_OFFSET_COMMIT] == (0, 5) and versions[PRODUCE] == (0, 12)
    assert versions[ADD_OFFSETS] == (0, 4)
    assert versions[DESCRIBE_PRODUCERS] == versions[DESCRIBE_TXNS] == (0, 0)
    assert versions[LIST_TXNS] == (0, 1)


# -- transactions v2 (KIP-890 part 2) -------------------------------------------------------

async def produce_v(call: Brokers, mc: MockCluster, records: bytes, version: int,
                    partition: int = 0) -> Struct:
    body = await call(leader(mc, partition), PRODUCE, version, {
        "transactional_id": TID, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [
            {"index": partition, "records": records}]}]})
    return body.responses[0].partition_responses[0]


async def txn_offset_commit(call: Brokers, mc: MockCluster, group: str, pid: int, epoch: int,
                            offset: int, version: int) -> int:
    group_coord = mc.cluster.coordinator_for(0, group)
    assert group_coord is not None
    body = await call(group_coord, TXN_OFFSET_COMMIT, version, {
        "transactional_id": TID, "group_id": group, "producer_id": pid,
        "producer_epoch": epoch, "generation_id": -1, "member_id": "",
        "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": None}]}]})
    return int(body.topics[0].partitions[0].error_code)


def committed_values(records: bytes | None) -> list[bytes | None]:
    """The data records' values in fetched batches (control batches skipped)."""
    out = []
    for raw in split_batches(records or b""):
        decoded = decode_batch(raw)
        if not decoded.is_control:
            out += [r.value for r in decoded.records]
    return out


async def test_transactions_v2_lifecycle_on_the_wire(mc, call):
    """InitProducerId -> Produce v12 without AddPartitionsToTxn -> TxnOffsetCommit v5 without
    AddOffsetsToTxn -> EndTxn v5 (bumped epoch in the answer) -> the next transaction at the
    bumped epoch -> a zombie on the old epoch fenced on every API."""
    coord, _ = coordinator(mc)
    group = "v2-group"
    versions = await call(0, API_VERSIONS, 3, {"client_software_name": "raw",
                                               "client_software_version": "1"})
    assert [(f.name, f.max_version_level) for f in versions.finalized_features
            if f.name == "transaction.version"] == [("transaction.version", 2)]
    init = await init_pid(call, coord, version=5)
    assert init.error_code == E.NONE
    pid, epoch = init.producer_id, init.producer_epoch

    first = await produce_v(call, mc, batch(pid, epoch, 0, 2, True, tag="one"), 12)
    assert (first.error_code, first.base_offset) == (E.NONE, 0)
    assert await txn_offset_commit(call, mc, group, pid, epoch, 2, version=5) == E.NONE
    described = await call(coord, DESCRIBE_TXNS, 0, {"transactional_ids": [TID]})
    [state] = described.transaction_states
    assert state.transaction_state == "Ongoing"
    assert [(t.topic, list(t.partitions)) for t in state.topics] == [(TOPIC, [0])]

    ended = await call(coord, END_TXN, 5, {"transactional_id": TID, "producer_id": pid,
                                           "producer_epoch": epoch, "committed": True})
    assert (ended.error_code, ended.producer_id, ended.producer_epoch) \
        == (E.NONE, pid, epoch + 1)
    stored = mc.cluster.groups.offsets.get(group, TOPIC, 0)
    assert stored is not None and stored.offset == 2
    shown = (await mc.control.state())["transactions"][TID]
    assert (shown["state"], shown["producer_epoch"], shown["transaction_version"]) \
        == ("CompleteCommit", epoch + 1, 2)

    # the next transaction, at the bumped epoch, aborted
    bumped = epoch + 1
    second = await produce_v(call, mc, batch(pid, bumped, 0, 1, True, tag="two"), 12)
    assert (second.error_code, second.base_offset) == (E.NONE, 3)  # after the first marker
    aborted = await call(coord, END_TXN, 5, {"transactional_id": TID, "producer_id": pid,
                                             "producer_epoch": bumped, "committed": False})
    assert (aborted.error_code, aborted.producer_epoch) == (E.NONE, bumped + 1)

    view = await fetch(call, mc, isolation=1)
    assert view.last_stable_offset == view.high_watermark == 5
    assert [(a.producer_id, a.first_offset) for a in view.aborted_transactions] == [(pid, 3)]
    assert committed_values(view.records) == [b"one-0", b"one-1", b"two-0"]
    # the markers carry the bumped epochs
    log = mc.cluster.log(mc.cluster.image.topics[TOPIC].topic_id, 0)
    assert log is not None
    markers = [decode_batch(b.data) for b in log.batches if b.is_control]
    assert [(m.producer_id, m.producer_epoch) for m in markers] \
        == [(pid, epoch + 1), (pid, epoch + 2)]

    # a zombie still on the first epoch
    zombie = await produce_v(call, mc, batch(pid, epoch, 2, 1, True, tag="z"), 12)
    assert zombie.error_code == E.INVALID_PRODUCER_EPOCH
    # Kafka checks it through the transaction verification, which answers
    # INVALID_PRODUCER_EPOCH for a fenced epoch (real Kafka 4.4: tests/conformance, txn/)
    assert await txn_offset_commit(call, mc, group, pid, epoch, 9, version=5) \
        == E.INVALID_PRODUCER_EPOCH
    fenced = await call(coord, END_TXN, 5, {"transactional_id": TID, "producer_id": pid,
                                            "producer_epoch": epoch, "committed": True})
    assert fenced.error_code == E.PRODUCER_FENCED and fenced.producer_epoch == -1
    assert await end_txn(call, coord, pid, epoch, True, version=1) == E.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == 5
    unchanged = mc.cluster.groups.offsets.get(group, TOPIC, 0)
    assert unchanged is not None and unchanged.offset == 2


async def test_verification_errors_by_produce_version_on_the_wire(mc, call):
    """KIP-890 part 1: a transactional batch for a partition outside the transaction is
    INVALID_TXN_STATE before Produce v11 and TRANSACTION_ABORTABLE from v11; the broker form
    of AddPartitionsToTxn (v4+) answers VerifyOnly per partition."""
    coord, other = coordinator(mc)
    init = await init_pid(call, coord)
    pid, epoch = init.producer_id, init.producer_epoch
    for version, expected in ((9, E.INVALID_TXN_STATE), (10, E.INVALID_TXN_STATE),
                              (11, E.TRANSACTION_ABORTABLE)):
        answer = await produce_v(call, mc, batch(pid, epoch, 0, 1, True), version)
        assert answer.error_code == expected, version

    async def broker_form(broker: int, verify_only: bool, partitions: list[int],
                          producer_epoch: int = epoch, version: int = 5) -> dict[int, int]:
        body = await call(broker, ADD_PARTITIONS, version, {"transactions": [{
            "transactional_id": TID, "producer_id": pid, "producer_epoch": producer_epoch,
            "verify_only": verify_only, "topics": [{"name": TOPIC,
                                                    "partitions": partitions}]}]})
        assert body.error_code == E.NONE
        [txn] = body.results_by_transaction
        assert txn.transactional_id == TID
        [topic] = txn.topic_results
        return {r.partition_index: r.partition_error_code for r in topic.results_by_partition}

    assert await broker_form(coord, True, [0, 1]) == {0: E.TRANSACTION_ABORTABLE,
                                                      1: E.TRANSACTION_ABORTABLE}
    assert await broker_form(other, True, [0]) == {0: E.NOT_COORDINATOR}
    assert await add_partitions(call, coord, pid, epoch, [1]) == {1: E.NONE}
    assert await broker_form(coord, True, [0, 1], version=4) \
        == {0: E.TRANSACTION_ABORTABLE, 1: E.NONE}
    assert await broker_form(coord, True, [1], producer_epoch=epoch + 1) \
        == {1: E.PRODUCER_FENCED}
    assert await broker_form(coord, False, [0]) == {0: E.NONE}  # a Produce v12 leader's add
    assert (await produce_v(call, mc, batch(pid, epoch, 0, 1, True), 11)).error_code == E.NONE


async def test_emulated_39_has_no_transactions_v2() -> None:
    async with MockCluster(brokers=1, kafka_version="3.9") as mc:
        raw = await connect_broker(mc, 0, client_id="test-txn-wire")
        try:
            body = await raw.request(API_VERSIONS, 3, {"client_software_name": "raw",
                                                       "client_software_version": "1"})
        finally:
            await raw.close()
    versions = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert versions[PRODUCE] == (0, 11) and versions[END_TXN] == (0, 4)
    assert versions[TXN_OFFSET_COMMIT] == (0, 4)
    assert "transaction.version" not in {f.name for f in body.supported_features}
    assert "transaction.version" not in {f.name for f in body.finalized_features}
