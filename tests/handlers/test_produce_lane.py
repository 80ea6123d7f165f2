"""The plain Produce lane (handlers/produce_lane.py) against the general path.

Each case sends the same request to two identical clusters: through the lane on one, through
the general path (decode_request, the authorization dispatcher with quota recording,
handlers/produce.py, the generic encoder) on the other. Where the lane takes a request its
answer must be the general answer byte for byte, and both logs must hold the same batches at
the same offsets with the same high watermark. Where it must not (anything but the plain
case), it returns None and the cluster is untouched, including when only one partition of
several is not plain.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from kafka_protocol_codec.api import decode_request, encode_request, encode_response_frame
from kafka_protocol_codec.compression import Compression
from kafka_protocol_codec.plain_produce import parse_plain_produce
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster.broker_sessions import crash
from mockbroker.cluster.clock import ManualClock
from mockbroker.cluster.quotas.quota_manager import PRODUCE, make_entity
from mockbroker.handlers.authorization import dispatch
from mockbroker.handlers.produce_lane import PlainProduceLane, plain_produce_lane
from tests.support.handlers import HandlerHarness

pytestmark = pytest.mark.skipif(parse_plain_produce is None,
                                reason="compiled plain Produce codec not built")

NOW = 1_700_000_000_000  # the records' own timestamps (in the broker's past)


def batch(count: int = 3, **kwargs: Any) -> bytes:
    return build_batch([RecordSpec(value=b"v%d" % i, key=b"k%d" % i) for i in range(count)],
                       base_timestamp=NOW, **kwargs)


def frame(version: int, topics: list[tuple[str, list[tuple[int, bytes]]]], acks: int = -1,
          transactional_id: str | None = None, correlation_id: int = 11) -> bytes:
    body = {"transactional_id": transactional_id, "acks": acks, "timeout_ms": 5000,
            "topic_data": [{"name": name, "partition_data": [
                {"index": index, "records": records} for index, records in parts]}
                for name, parts in topics]}
    return encode_request(0, min(version, 11), body, correlation_id=correlation_id,
                          client_id="lane-test")


class Twins:
    """Two identical clusters: `lane` answers through the lane, `general` the general way."""

    def __init__(self, brokers: int = 1, topics: dict[str, dict[str, Any]] | None = None,
                 **config: Any) -> None:
        # one start for both clocks: what each side writes carries its clock's time
        start = ManualClock().now_ms()
        self.lane_side = HandlerHarness(brokers, clock=ManualClock(start), **config)
        self._lanes: dict[int, PlainProduceLane | None] = {}
        self.general_side = HandlerHarness(brokers, clock=ManualClock(start), **config)
        for harness in self.sides:
            for name, spec in (topics or {"t": {}}).items():
                harness.cluster.create_topic(name, spec.get("partitions", 2),
                                             spec.get("rf", 1), spec.get("configs"))

    @property
    def sides(self) -> tuple[HandlerHarness, HandlerHarness]:
        return self.lane_side, self.general_side

    def lane(self, broker: int = 0) -> PlainProduceLane:
        """The lane-side broker's lane, one per broker as the server keeps them."""
        lane = self._lanes.get(broker)
        if lane is None:
            node = self.lane_side.cluster.brokers[broker]
            lane = self._lanes[broker] = plain_produce_lane(self.lane_side.cluster, node)
        assert lane is not None
        return lane

    def through_lane(self, data: bytes, broker: int = 0) -> bytes | None:
        lane = self.lane(broker)
        taken = lane.answer(data, self.lane_side.advertised.get(0))
        return None if taken is None else taken[0]

    async def through_general(self, data: bytes, broker: int = 0,
                              side: HandlerHarness | None = None) -> bytes:
        request = decode_request(data)
        ctx = (side or self.general_side).context(broker, request)
        result = dispatch(request.body, ctx)
        if inspect.isawaitable(result):
            result = await result
        assert result is not None
        return bytes(encode_response_frame(0, request.api_version, request.correlation_id,
                                           result))

    def logs(self, harness: HandlerHarness) -> list[Any]:
        out = []
        for name, topic in sorted(harness.cluster.image.topics.items()):
            for index in sorted(topic.partitions):
                replicas = harness.cluster.replicas(name, index)
                assert replicas is not None
                for broker_id, log in sorted(replicas.logs.items()):
                    out.append((name, index, broker_id, log.log_end_offset, log.high_watermark,
                                [(b.base_offset, b.last_offset, bytes(b.data))
                                 for b in log.batches]))
        return out


@pytest.mark.parametrize("version", [3, 5, 7, 8, 9, 10, 11])
@pytest.mark.parametrize("acks", [1, -1])
async def test_lane_answers_and_appends_as_the_general_path(version: int, acks: int) -> None:
    twins = Twins(topics={"a": {"partitions": 2}, "b": {"partitions": 1}})
    for round_ in range(3):
        data = frame(version, [("a", [(0, batch(1 + round_)), (1, batch(2))]),
                               ("b", [(0, batch(5))])], acks=acks, correlation_id=round_)
        answer = twins.through_lane(data)
        assert answer is not None
        assert answer == await twins.through_general(data)
    assert twins.logs(twins.lane_side) == twins.logs(twins.general_side)
    assert twins.lane().taken == 3
    meters = [h.cluster.quotas.broker(0).recorded[PRODUCE] for h in twins.sides]
    assert meters[0] == meters[1] > 0


async def test_version_12_is_answered_as_the_general_path_answers_it() -> None:
    twins = Twins()
    data = bytearray(frame(11, [("t", [(0, batch())])]))
    data[3] = 12
    answer = twins.through_lane(bytes(data))
    assert answer is not None and answer == await twins.through_general(bytes(data))


def _untouched(twins: Twins) -> None:
    assert all(entry[3] == 0 for entry in twins.logs(twins.lane_side))
    assert twins.lane().taken == 0


@pytest.mark.parametrize("case", [
    "transactional batch", "acks 0",
    "unknown topic", "unknown partition", "bad crc", "second partition bad",
    "internal topic", "log append time", "compacted without key",
])
async def test_lane_leaves_what_is_not_plain_to_the_general_path(case: str) -> None:
    topics: dict[str, dict[str, Any]] = {"t": {}}
    good = batch()
    records = good
    name, acks, txn = "t", -1, None
    parts: list[tuple[int, bytes]] | None = None
    if case == "transactional batch":  # of a producer id the coordinator does not know
        records = batch(producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
        txn = "txn"
    elif case == "acks 0":
        acks = 0
    elif case == "unknown topic":
        name = "nope"
    elif case == "unknown partition":
        parts = [(0, good), (9, good)]
    elif case == "bad crc":
        corrupt = bytearray(good)
        corrupt[-1] ^= 0xFF
        records = bytes(corrupt)
    elif case == "second partition bad":
        corrupt = bytearray(good)
        corrupt[-1] ^= 0xFF
        parts = [(0, good), (1, bytes(corrupt))]
    elif case == "internal topic":
        name = "__consumer_offsets"
    elif case == "log append time":
        topics = {"t": {"configs": {"message.timestamp.type": "LogAppendTime"}}}
    elif case == "compacted without key":
        topics = {"t": {"configs": {"cleanup.policy": "compact"}}}
        records = build_batch([RecordSpec(value=b"v")], base_timestamp=NOW)
    twins = Twins(topics=topics)
    if case == "internal topic":
        for harness in twins.sides:
            harness.cluster.create_topic("__consumer_offsets", 1, 1)
    data = frame(9, [(name, parts or [(0, records)])], acks=acks, transactional_id=txn)
    assert twins.through_lane(data) is None
    _untouched(twins)


def idempotent(sequence: int, epoch: int = 0, producer_id: int = 7) -> bytes:
    return batch(3, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)


async def test_idempotent_batches_take_the_lane_only_when_appended_as_new() -> None:
    """Idempotent producers' batches are answered by the lane when the producer checks
    would append them as new; a duplicate, a sequence gap, a stale epoch, a producer with a
    transaction open on the partition, or two batches for one partition in a request go the
    general way with nothing changed. Each step is sent to both twins (to the lane side's
    general path when the lane declines), and answers, logs and producer states match."""
    twins = Twins()
    steps: list[tuple[bool, list[tuple[int, bytes]]]] = [
        (True, [(0, idempotent(0)), (1, idempotent(0, producer_id=8))]),  # new producers
        (True, [(0, idempotent(3))]),  # in sequence
        (False, [(0, idempotent(3))]),  # a retry of the last batch: a duplicate
        (False, [(0, idempotent(9))]),  # a gap: OUT_OF_ORDER_SEQUENCE_NUMBER
        (True, [(0, idempotent(0, epoch=1))]),  # a new epoch starts at sequence 0
        (False, [(0, idempotent(3, epoch=0))]),  # the old epoch: INVALID_PRODUCER_EPOCH
        # twice: as Kafka, the general path writes the last batch only
        (False, [(0, idempotent(9, epoch=1)), (0, idempotent(3, epoch=1))]),
        (True, [(1, batch()), (0, idempotent(6, epoch=1))]),  # with a plain batch
        (False, [(1, idempotent(3, producer_id=8))]),  # its transaction open: see below
    ]
    taken = []
    for step, (_, parts) in enumerate(steps):
        if step == len(steps) - 1:  # as a transactional batch of producer 8 would leave it
            for harness in twins.sides:
                replicas = harness.cluster.replicas("t", 1)
                assert replicas is not None
                replicas.logs[0].producer_states[8].current_txn_first_offset = 0
        data = frame(9, [("t", parts)], correlation_id=step)
        lane_before = twins.logs(twins.lane_side)
        answer = twins.through_lane(data)
        taken.append(answer is not None)
        if answer is None:
            assert twins.logs(twins.lane_side) == lane_before  # untouched
            answer = await twins.through_general(data, side=twins.lane_side)
        assert answer == await twins.through_general(data), f"step {step}"
    assert taken == [expected for expected, _ in steps]
    assert twins.logs(twins.lane_side) == twins.logs(twins.general_side)
    states = []
    for harness in twins.sides:
        logs = [harness.cluster.replicas("t", index) for index in (0, 1)]
        states.append([(index, sorted((pid, entry.epoch, list(entry.batches))
                                      for pid, entry in replicas.logs[0].producer_states.items()))
                       for index, replicas in enumerate(logs) if replicas is not None])
    assert states[0] == states[1]
    # producer 7 on t-0: epoch 1, its batches from sequence 0 on (3 by the general path)
    pid, epoch, remembered = states[0][0][1][0]
    assert (pid, epoch, [meta.first_seq for meta in remembered]) == (7, 1, [0, 3, 6])


def in_transaction(sequence: int, producer_id: int, epoch: int) -> bytes:
    return batch(3, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                 transactional=True)


async def test_transactional_batches_take_the_lane_inside_their_transaction() -> None:
    """A transactional producer's batches are answered by the lane when the coordinator has
    the partition in the producer's ongoing transaction and the producer checks would append
    them as new. A partition not in the transaction, a duplicate, a fenced epoch, or Produce
    v12 (whose verification adds the partition to the transaction) go the general way with
    nothing changed. Each step is sent to both twins (to the lane side's general path when
    the lane declines); answers, logs, producer states and last stable offsets match, before
    and after the commit's markers."""
    twins = Twins()
    inits = [h.cluster.transactions.init_producer_id("tx", 60_000) for h in twins.sides]
    assert inits[0] == inits[1]
    pid, epoch = inits[0].producer_id, inits[0].producer_epoch
    for harness in twins.sides:
        assert harness.cluster.transactions.add_partitions("tx", pid, epoch, [("t", 0)]) == 0
    steps: list[tuple[bool, int, list[tuple[int, bytes]]]] = [
        (True, 9, [(0, in_transaction(0, pid, epoch))]),
        (True, 7, [(0, in_transaction(3, pid, epoch)), (1, batch())]),  # beside a plain one
        (False, 9, [(1, in_transaction(0, pid, epoch))]),  # t-1 is not in the transaction
        (False, 9, [(0, in_transaction(3, pid, epoch))]),  # a retry: a duplicate
        (False, 9, [(0, in_transaction(6, pid, epoch + 1))]),  # an epoch it does not have
        (False, 12, [(0, in_transaction(6, pid, epoch))]),  # v12: adds the partition
        (True, 11, [(0, in_transaction(9, pid, epoch))]),
    ]
    taken = []
    for step, (_, version, parts) in enumerate(steps):
        data = bytearray(frame(version, [("t", parts)], transactional_id="tx",
                               correlation_id=step))
        data[3] = version  # v12 has v11's layout (KIP-890's alias)
        lane_before = twins.logs(twins.lane_side)
        answer = twins.through_lane(bytes(data))
        taken.append(answer is not None)
        if answer is None:
            assert twins.logs(twins.lane_side) == lane_before  # untouched
            answer = await twins.through_general(bytes(data), side=twins.lane_side)
        assert answer == await twins.through_general(bytes(data)), f"step {step}"
    assert taken == [expected for expected, _, _ in steps]

    def state(harness: HandlerHarness) -> list[Any]:
        replicas = [harness.cluster.replicas("t", index) for index in (0, 1)]
        return [(log.last_stable_offset, log.aborted_index,
                 sorted((p, e.epoch, e.current_txn_first_offset, list(e.batches))
                        for p, e in log.producer_states.items()))
                for log in (r.logs[0] for r in replicas if r is not None)]

    assert twins.logs(twins.lane_side) == twins.logs(twins.general_side)
    assert state(twins.lane_side) == state(twins.general_side)
    assert state(twins.lane_side)[0][0] == 0  # the open transaction holds t-0's LSO at 0
    for harness in twins.sides:
        assert harness.cluster.transactions.end_txn("tx", pid, epoch, commit=True) == 0
    assert twins.logs(twins.lane_side) == twins.logs(twins.general_side)
    assert state(twins.lane_side) == state(twins.general_side)
    log = twins.lane_side.cluster.replicas("t", 0)
    assert log is not None and log.logs[0].last_stable_offset == log.logs[0].log_end_offset


@pytest.mark.parametrize("compression", [Compression.GZIP, Compression.ZSTD])
async def test_a_compressed_batch_takes_the_lane(compression: int) -> None:
    twins = Twins()
    data = frame(9, [("t", [(0, batch(compression=compression))])])
    answer = twins.through_lane(data)
    assert answer is not None and answer == await twins.through_general(data)
    assert twins.logs(twins.lane_side) == twins.logs(twins.general_side)


async def test_zstd_below_v7_is_left_to_the_general_path() -> None:
    twins = Twins()
    assert twins.through_lane(frame(5, [("t", [(0, batch(compression=Compression.ZSTD))])])) \
        is None
    _untouched(twins)


async def test_a_compacted_topic_with_keys_takes_the_lane() -> None:
    twins = Twins(topics={"t": {"configs": {"cleanup.policy": "compact"}}})
    data = frame(9, [("t", [(0, batch())])])
    answer = twins.through_lane(data)
    assert answer is not None and answer == await twins.through_general(data)


@pytest.mark.parametrize("acks", [1, -1])
async def test_replicated_partitions_take_the_lane_while_the_followers_keep_up(acks: int) -> None:
    """Three replicas: the leader's lane answers as the general path, the followers fetch in
    the append on both twins (same logs and high watermarks on every replica); a broker that
    does not lead the partition leaves it to the general path."""
    twins = Twins(brokers=3, topics={"r": {"partitions": 3, "rf": 3},
                                     "s": {"partitions": 3, "rf": 1}})
    cluster = twins.lane_side.cluster
    for round_ in range(2):
        for index in range(3):
            data = frame(9, [("r", [(index, batch(1 + round_))])], acks=acks,
                         correlation_id=round_)
            leader = cluster.image.topics["r"].partitions[index].leader
            follower = next(b for b in cluster.brokers if b != leader)
            assert twins.through_lane(data, broker=follower) is None  # not its leader
            answer = twins.through_lane(data, broker=leader)
            assert answer is not None and answer == await twins.through_general(data, leader)
            leader_s = cluster.image.topics["s"].partitions[index].leader
            other = next(b for b in cluster.brokers if b != leader_s)
            assert twins.through_lane(frame(9, [("s", [(index, batch())])]), other) is None
    logs = twins.logs(twins.lane_side)
    assert logs == twins.logs(twins.general_side)
    replicated = [entry for entry in logs if entry[0] == "r"]
    assert len(replicated) == 9 and all(entry[3] == entry[4] == 3 for entry in replicated)


async def test_acks_all_leaves_a_partition_whose_follower_does_not_fetch() -> None:
    """A follower in the ISR that may not fetch (replication paused, or its broker crashed
    and not yet out of the ISR) would make an acks=all answer wait: the lane declines it,
    untouched, while acks=1 still takes the lane. Once the follower fetches again and has
    caught up, acks=all takes the lane again."""
    twins = Twins(brokers=3, topics={"r": {"partitions": 1, "rf": 3}})
    cluster = twins.lane_side.cluster
    leader = cluster.image.topics["r"].partitions[0].leader
    follower = next(b for b in cluster.image.topics["r"].partitions[0].isr if b != leader)
    all_acks, one_ack = (frame(9, [("r", [(0, batch())])], acks=acks) for acks in (-1, 1))

    for harness in twins.sides:
        harness.cluster.replication.pause(broker_id=follower)
    before = twins.logs(twins.lane_side)
    assert twins.through_lane(all_acks, leader) is None
    assert twins.logs(twins.lane_side) == before
    answer = twins.through_lane(one_ack, leader)
    assert answer is not None and answer == await twins.through_general(one_ack, leader)
    assert twins.logs(twins.lane_side) == twins.logs(twins.general_side)

    for harness in twins.sides:
        harness.cluster.replication.resume(broker_id=follower)  # it fetches at once
    answer = twins.through_lane(all_acks, leader)
    assert answer is not None and answer == await twins.through_general(all_acks, leader)
    assert twins.logs(twins.lane_side) == twins.logs(twins.general_side)

    crash(cluster, follower)
    assert follower in cluster.image.topics["r"].partitions[0].isr  # not yet removed
    before = twins.logs(twins.lane_side)
    assert twins.through_lane(all_acks, leader) is None
    assert twins.logs(twins.lane_side) == before
    assert twins.lane(leader).taken == 2


async def test_min_insync_replicas_above_the_replica_count_is_capped() -> None:
    """Kafka's Partition.effectiveMinIsr caps min.insync.replicas at the replica count: a
    single replica takes acks=all, through the lane as the general way."""
    twins = Twins(topics={"t": {"configs": {"min.insync.replicas": "2"}}})
    all_acks = frame(9, [("t", [(0, batch())])], acks=-1)
    answer = twins.through_lane(all_acks)
    assert answer is not None and answer == await twins.through_general(all_acks)
    assert twins.through_lane(frame(9, [("t", [(0, batch())])], acks=1)) is not None


async def test_acls_quotas_a_stopped_broker_and_lagging_metadata_turn_the_lane_off() -> None:
    twins = Twins(brokers=2, topics={"t": {"partitions": 2, "rf": 1}})
    cluster = twins.lane_side.cluster
    leader = cluster.image.topics["t"].partitions[0].leader
    data = frame(9, [("t", [(0, batch())])])

    cluster.acls.enabled = True
    assert twins.through_lane(data, leader) is None
    cluster.acls.enabled = False

    cluster.quotas.alter(make_entity({"client-id": None}), [(PRODUCE, 1_000_000.0)])
    assert twins.through_lane(data, leader) is None
    cluster.quotas.alter(make_entity({"client-id": None}), [(PRODUCE, None)])

    other = next(b for b in cluster.brokers if b != leader)
    cluster.pause_metadata(leader)
    cluster.create_topic("later", 1, 1, None, assignments=[[other]])
    assert twins.through_lane(data, leader) is None  # its image lags the controller's
    cluster.resume_metadata(leader)

    crash(cluster, leader)
    assert twins.through_lane(data, leader) is None
    assert twins.lane(leader).taken == 0


def test_made_up_topics_and_partitions_leave_no_entry_behind() -> None:
    """The lane's table holds the broker's own partitions only: Produce requests naming
    topics and partition indexes a client made up (a fuzzer's, issue 24) are declined each
    time, and the table stays as small as the image."""
    twins = Twins(topics={"t": {"partitions": 2}})
    lane = twins.lane()
    for n in range(500):
        assert twins.through_lane(frame(9, [(f"made-up-{n}", [(0, batch())])])) is None
        assert twins.through_lane(frame(9, [("t", [(1000 + n, batch())])])) is None
        assert twins.through_lane(frame(9, [("__consumer_offsets", [(900 + n, batch())])])) \
            is None
    assert twins.through_lane(frame(9, [("t", [(0, batch())]), ("t", [(1, batch())])])) \
        is not None
    assert len(lane._table) <= 2 + 50  # t's partitions, those of the offsets topic at most
