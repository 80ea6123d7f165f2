"""The plain Produce lane: the common Produce request answered without the general decoder,
dispatcher and response encoder, with the same outcome.

Theory of operation: most Produce requests a broker sees are alike: acks 1 or all, one
CreateTime batch per partition (plain, idempotent, or transactional within the producer's
ongoing transaction), to partitions this broker leads, whose followers keep up. For those the
general path (decode_request, the authorization dispatcher, handlers/produce.py,
Cluster.produce, the quota recording, the generic encoder) spends most of its time on
generality. `PlainProduceLane.answer` takes a request only when it can prove the general path
would accept every partition and answer at once, and then does what the general path does on
success, through the same functions where they matter: the checks and append of
Cluster.produce (check_produced_records, then PartitionLog.append_producer_batch, whose
replication hook lets the followers fetch), the quota meter's recording, and the answer
(written by the compiled codec byte for byte as the general encoder writes it, a test compares
them).

What it proves, before anything is written (anything unproven returns None and the request
goes the general way, which then decides everything as before):
- the connection: no SASL session, no request trace, no fault or request observer installed,
  not hung, ACLs off, client quotas not enforced on this broker (so no throttle is possible);
- the request: `parse_plain_produce` accepts it (see protocol/plain_produce.py) and its version
  is advertised on the listener;
- every partition: its table entry (below) exists, the broker is up, the replica log is still
  the one the entry names, and the batch passes check_produced_records; a transactional batch
  asks the coordinator what Cluster.produce asks (Cluster.transaction_verifier, for the
  request's version: a pure check up to Produce v11; v12's adds the partition to the
  transaction, so a transactional batch in v12 goes the general way); a producer's batch
  (idempotent or transactional) must pass PartitionLog.producer_check as a new batch (in its
  transaction when transactional; no sequence or epoch error, no duplicate, no transaction
  open for a plain batch; those the general path answers) and be the only batch of its
  partition in the request (a second would be checked against state the first changes);
- with acks=all, every partition: the ISR is at min.insync.replicas, and, with followers,
  PartitionReplicas.in_step_for says every other ISR member is reachable, may fetch and is
  caught up, so its fetch in the append's replication hook takes the batch and the high
  watermark covers it at once, as Replication.wait_for would then find (else the general path
  answers, after waiting). acks=1 waits for nobody: the followers fetch as they would.
The table maps (topic, partition) to what the general path would find: this broker leads it in
its own image, the topic is not internal and uses CreateTime. Only partitions of the broker's
image have an entry (taken or not), so the table is never larger than the image, whatever
topic names and partition indexes requests make up. It is rebuilt whenever the
broker's image or the controller's moves (any metadata record: leadership, ISR, configs,
topics), and the lane is off while the broker's image lags the controller's, so the
replication checks of Replication._appended and _ack_status see the same leadership the table
saw.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.plain_produce import (
    encode_plain_produce_response,
    parse_plain_produce,
)

from mockbroker.cluster.internal_topics import INTERNAL_TOPICS
from mockbroker.cluster.log.partition import PartitionLog, TransactionCheck, not_transactional
from mockbroker.cluster.log.produce_path import (
    ZSTD_FROM_PRODUCE_VERSION,
    check_produced_records,
    effective_min_isr,
    produce_settings,
)
from mockbroker.cluster.producers.txn_coordinator import ProduceVerification
from mockbroker.cluster.quotas.quota_manager import PRODUCE, REQUEST
from mockbroker.handlers.produce import VERIFICATION

if TYPE_CHECKING:
    from mockbroker.cluster import Cluster
    from mockbroker.cluster.kraft.broker import BrokerNode
    from mockbroker.cluster.log.replicas import PartitionReplicas


FLEXIBLE_FROM_VERSION = 9


def null_transactional_id(frame: Any, version: int) -> bool:
    """Whether the Produce request in `frame` (request header first, as the lane gets it)
    has a null transactional id: read past the header (api key, version, correlation id,
    client id, and from v9 its tagged fields, which the lane's shape has none of)."""
    view = memoryview(frame)
    client_id_length = int.from_bytes(view[8:10], "big", signed=True)
    position = 10 + max(client_id_length, 0)
    if version >= FLEXIBLE_FROM_VERSION:
        return view[position + 1] == 0  # no tagged fields, then a compact string: 0 is null
    return int.from_bytes(view[position:position + 2], "big", signed=True) < 0


class LaneEntry(NamedTuple):
    """What the general path would find for a partition this broker leads."""

    log: PartitionLog
    logs: dict[int, PartitionLog]  # the replica set's logs, to see the log is still this one
    leader_epoch: int
    config: dict[str, str]
    isr_at_minimum: bool  # len(ISR) >= min.insync.replicas (else acks=all is refused)
    # the replica set when it has followers: an acks=all request asks it first whether the
    # append would be covered at once (PartitionReplicas.in_step_for); None: one replica
    followed: PartitionReplicas | None


class PlainProduceLane:
    """One broker's lane (see the module docstring); None-returning whenever in doubt."""

    def __init__(self, cluster: Cluster, node: BrokerNode) -> None:
        self.cluster = cluster
        self.node = node
        self.meter = cluster.quotas.broker(node.broker_id)
        self._table: dict[tuple[str, int], LaneEntry | None] = {}
        self._table_key: tuple[int, int] = (0, -2)  # the image it was built from
        # meter.enforcing() for that image: whether its client quotas have any entity
        self._quotas_enforced = True
        self.taken = 0  # requests answered here (tests read it)

    def _entries(self) -> dict[tuple[str, int], LaneEntry | None] | None:
        node, cluster = self.node, self.cluster
        image = node.image
        if image.offset != cluster.image.offset:
            return None  # lagging metadata: the general path answers as that broker would
        key = (id(image), image.offset)  # the controller's offset is the same (above)
        if key != self._table_key:
            self._table = {}
            self._table_key = key
            self._quotas_enforced = self.meter.enforcing()  # the image's quota entities
        return self._table

    def _entry(self, table: dict[tuple[str, int], LaneEntry | None], topic: str,
               index: int) -> LaneEntry | None:
        entry = table.get((topic, index), False)
        if entry is not False:
            return entry  # type: ignore[return-value]
        entry = None
        node, cluster = self.node, self.cluster
        known = node.image.topics.get(topic)
        if known is None or index not in known.partitions:
            return None  # not kept: the names and indexes a client can make up are endless
        if topic not in INTERNAL_TOPICS:
            check = cluster.check_leader(node, topic, index, topic_image=known)
            replicas = cluster.replicas(topic, index)
            if check.error == ErrorCode.NONE and check.log is not None \
                    and check.partition is not None and replicas is not None \
                    and replicas.logs.get(node.broker_id) is check.log:
                config = cluster.topic_config(topic, node.image, node.broker_id)
                settings = produce_settings(config)
                if not settings.log_append_time:
                    entry = LaneEntry(check.log, replicas.logs, check.partition.leader_epoch,
                                      config,
                                      len(check.partition.isr) >= effective_min_isr(
                                          settings.min_insync_replicas,
                                          len(check.partition.replicas)),
                                      replicas if len(replicas.logs) > 1 else None)
        table[(topic, index)] = entry
        return entry

    def answer(self, frame: Any,
               advertised: tuple[int, int] | None) -> tuple[bytes, str | None] | None:
        """The encoded answer and the request's client id, after appending every batch;
        None, with nothing changed, when the general path must take the request. The caller
        has checked the connection (no SASL, trace, faults or hang)."""
        started = time.perf_counter()
        parsed = parse_plain_produce(frame)  # type: ignore[misc]
        if parsed is None or advertised is None:
            return None
        version, correlation_id, client_id, acks, _timeout, topics = parsed
        if not advertised[0] <= version <= advertised[1] or acks not in (-1, 1):
            return None
        cluster, node = self.cluster, self.node
        if not node.up or cluster.acls.enabled:
            return None
        table = self._entries()
        if table is None or self._quotas_enforced:
            return None
        now = cluster.clock.now_ms()
        zstd_allowed = version >= ZSTD_FROM_PRODUCE_VERSION
        broker_id = node.broker_id
        checked = []
        producer_logs: set[int] = set()  # ids of the logs a producer's batch goes to
        produced = 0
        verification = VERIFICATION[version]  # what a transactional batch asks (KIP-890)
        add_partition = verification is ProduceVerification.ADD_PARTITION
        named: set[tuple[str, int]] = set()
        for name, partitions in topics:
            for index, records in partitions:
                if (name, index) in named:
                    return None  # a partition named twice: the general path keeps the last
                named.add((name, index))
                entry = self._entry(table, name, index)
                if entry is None or entry.logs.get(broker_id) is not entry.log:
                    return None
                if acks == -1 and (not entry.isr_at_minimum or (
                        entry.followed is not None
                        and not entry.followed.in_step_for(entry.log))):
                    return None  # refused, or the answer would wait for followers
                batch = check_produced_records(records, entry.config, now,
                                               zstd_allowed=zstd_allowed, topic=name,
                                               partition=index)
                if type(batch) is not tuple:
                    return None  # the general path words the error
                header = batch[1]
                verify: TransactionCheck = not_transactional
                if header.is_transactional:
                    if add_partition or null_transactional_id(frame, version):
                        # Produce v12 adds the partition to the transaction; without a
                        # transactional id the general path refuses the request
                        return None
                    verify = cluster.transaction_verifier(name, index, verification)
                if header.producer_id >= 0 or header.is_transactional:
                    # a producer's batch: appended as new (in its transaction, when it is
                    # transactional; no sequence error, duplicate or misplaced transaction),
                    # and its partition's only batch here, so the checks of every partition
                    # hold when the appends follow
                    log = entry.log
                    if id(log) in producer_logs \
                            or log.producer_check(header, verify) is not None:
                        return None
                    producer_logs.add(id(log))
                checked.append((entry, batch[0], header, verify))
                produced += len(records)
        answers: list[tuple[str, list[tuple[int, int, int]]]] = []
        position = 0
        for name, partitions in topics:
            done = []
            for index, _ in partitions:
                entry, view, header, verify = checked[position]
                position += 1
                log = entry.log
                result = log.append_producer_batch(view, header, entry.leader_epoch,
                                                   verify_transaction=verify)
                if result.error != ErrorCode.NONE:  # producer_check passed it just before
                    raise AssertionError(f"plain Produce lane: {name}-{index} refused "
                                         f"after its checks passed: {result.error!r}")
                if acks == -1 and log.high_watermark < log.log_end_offset:
                    # cannot happen: in_step_for said the followers take the batch in the
                    # append itself (see the module docstring); were it to, answering now
                    # would break acks=all
                    raise AssertionError(f"plain Produce lane: {name}-{index} appended "
                                         "without its high watermark following")
                done.append((index, result.base_offset, result.log_start_offset))
            answers.append((name, done))
        # what apply_quotas records for a broker that enforces no quota (checked above)
        self.meter.record_unlimited(PRODUCE, produced)
        self.meter.record_unlimited(REQUEST, (time.perf_counter() - started) * 1000 / 10)
        self.taken += 1
        return encode_plain_produce_response(  # type: ignore[misc]
            version, correlation_id, answers), client_id


def plain_produce_lane(cluster: Cluster, node: BrokerNode) -> PlainProduceLane | None:
    """A lane for the broker (its owner keeps one per broker, shared by its listeners), or
    None when the compiled plain Produce codec is not built."""
    if parse_plain_produce is None or encode_plain_produce_response is None:
        return None
    return PlainProduceLane(cluster, node)
