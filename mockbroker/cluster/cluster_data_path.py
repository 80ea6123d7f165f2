"""The data path: what a broker does with a partition of a Produce or Fetch request.

Theory of operation: `check_leader` (leadership.py) fences a stale leader epoch and then
checks leadership as broker `node` sees it in its own image, so a broker with older metadata
answers as that broker would. `produce` runs the checks of produce_path.py in Kafka's order (a
stopped broker, min.insync.replicas for acks=all, the batch itself) and only then appends
through PartitionLog.append_producer_batch, with a callback into the transaction coordinator
for KIP-890 verification (made only for a transactional batch, the one kind it asks); an acks=all answer then waits for the high watermark
(`replication_wait`, `ack_status`, replicas.py). `preferred_read_replica` is KIP-392's
choice of a follower for a consumer, `aborted_transactions` what a read_committed fetch
skips. These methods run per partition per request and keep no state of their own: the
topic-config cache and the per-broker replica lookups they read live in ClusterState.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.cluster_state import ClusterState
from mockbroker.cluster.kraft.broker import BrokerNode
from mockbroker.cluster.kraft.metadata_log import PartitionImage, TopicImage
from mockbroker.cluster.log.leadership import NO_EPOCH_CHECK, LeaderCheck, check_leader
from mockbroker.cluster.log.partition import (
    AppendResult,
    PartitionLog,
    TransactionCheck,
    not_transactional,
)
from mockbroker.cluster.log.produce_path import (
    VALID_ACKS,
    as_kafka_reports,
    check_produced_records,
    effective_min_isr,
    produce_settings,
)
from mockbroker.cluster.log.read_replicas import NO_PREFERRED_REPLICA, preferred_read_replica
from mockbroker.cluster.log.replicas import ReplicationWait
from mockbroker.cluster.producers.txn_coordinator import ProduceVerification


class DataPath(ClusterState):
    """Leadership checks, produce, acks=all waits and fetch helpers (joined into Cluster)."""

    # -- the data path ----------------------------------------------------------------------

    def check_leader(self, node: BrokerNode, topic: str, partition: int,
                     current_leader_epoch: int = NO_EPOCH_CHECK,
                     topic_image: TopicImage | None = None, *,
                     leader_only: bool = True) -> LeaderCheck:
        """Fencing and leadership of `partition` as broker `node` sees it (leadership.py);
        `leader_only=False`: any replica may serve (KIP-392 consumer reads)."""
        return check_leader(node.image, node.broker_id, topic, partition,
                            self._replica_lookup(node.broker_id), current_leader_epoch,
                            topic_image, leader_only=leader_only)

    def preferred_read_replica(self, node: BrokerNode, topic: TopicImage, part: PartitionImage,
                               client_rack: str | None, fetch_offset: int) -> int:
        """KIP-392: the follower leader `node` sends a consumer in `client_rack` to, or -1
        (replica.selector.class decides; read_replicas.py)."""
        selector = self.config.replica_selector_class
        replica_set = self.replication.get(topic.topic_id, part.partition) if selector else None
        if replica_set is None:
            return NO_PREFERRED_REPLICA
        return preferred_read_replica(selector, node.image, part, replica_set, client_rack,
                                      fetch_offset, self.clock.now_ms())

    def _replica_lookup(self, broker_id: int) -> Callable[[uuid.UUID, int], PartitionLog | None]:
        lookup = self._replica_lookups.get(broker_id)
        if lookup is None:
            def lookup(topic_id: uuid.UUID, partition: int) -> PartitionLog | None:
                return self.replica_log(topic_id, partition, broker_id)
            self._replica_lookups[broker_id] = lookup
        return lookup

    def replication_wait(self, node: BrokerNode, topic: str, partition: int,
                         result: AppendResult) -> ReplicationWait | None:
        """After an acks=all append answered `result` on `node`: what the answer must wait
        for (the high watermark to cover the batch), None when it may go out now."""
        if result.error != ErrorCode.NONE:  # AppendResult.ok, without the property call
            return None
        min_isr = produce_settings(self.topic_config(topic, node.image)).min_insync_replicas
        return self.replication.wait_for(node, topic, partition, min_isr)

    def ack_status(self, wait: ReplicationWait) -> ErrorCode | None:
        """The waiting acks=all answer's error code once decided, else None."""
        return self.replication.ack_status(wait)

    def produce(self, node: BrokerNode, topic: str, partition: int,
                records: bytes | memoryview | None, *, acks: int,
                current_leader_epoch: int = NO_EPOCH_CHECK,
                zstd_allowed: bool = True,
                verification: ProduceVerification = ProduceVerification.DEFAULT_ERROR
                ) -> AppendResult:
        """One partition of a Produce request received by `node` (produce_path.py has the order
        of the checks). Nothing is written unless every check passes. `zstd_allowed`:
        the request's version permits zstd (Produce v7+); `verification`: what a
        transactional batch asks of the coordinator (KIP-890, by Produce version)."""
        broker_id, image = node.broker_id, node.image
        error, _, part, log = check_leader(image, broker_id, topic, partition,
                                           self._replica_lookup(broker_id),
                                           current_leader_epoch)
        if acks not in VALID_ACKS and error != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return AppendResult(ErrorCode.INVALID_REQUIRED_ACKS)
        if error != ErrorCode.NONE or log is None or part is None:
            return AppendResult(error)
        if not node.up:  # stopped: requests read before its sockets closed append nothing
            return AppendResult(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                message=f"Broker {broker_id} is shutting down and no longer leads "
                        f"{topic}-{partition}")
        config = self.topic_config(topic, image, broker_id)
        settings = produce_settings(config)
        min_isr = effective_min_isr(settings.min_insync_replicas, len(part.replicas))
        if acks == -1 and len(part.isr) < min_isr:
            # Partition.appendRecordsToLeader throws: the log start offset, no message
            return AppendResult(ErrorCode.NOT_ENOUGH_REPLICAS,
                                log_start_offset=log.log_start_offset)
        now = self.clock.now_ms()
        checked = check_produced_records(records, config, now, zstd_allowed=zstd_allowed,
                                         topic=topic, partition=partition, settings=settings)
        if isinstance(checked, AppendResult):
            return as_kafka_reports(checked, records, log.log_start_offset)
        batch, header = checked
        append_time = now if settings.log_append_time else None
        # only a transactional batch asks the coordinator: the others need no closure
        verify_transaction = not_transactional if not header.is_transactional \
            else self.transaction_verifier(topic, partition, verification)
        return log.append_producer_batch(batch, header, part.leader_epoch,
                                         verify_transaction=verify_transaction,
                                         log_append_time_ms=append_time)

    def transaction_verifier(self, topic: str, partition: int,
                             verification: ProduceVerification) -> TransactionCheck:
        """KIP-890: the coordinator's answer for a transactional batch of this partition."""
        def verify_transaction(producer_id: int, epoch: int) -> ErrorCode:
            return self.transactions.verify_produce(producer_id, epoch, topic, partition,
                                                    verification)
        return verify_transaction

    # -- fetch ------------------------------------------------------------------------------

    def aborted_transactions(self, log: PartitionLog, start: int,
                             end: int) -> list[dict[str, int]]:
        """Aborted transactions overlapping [start, end) for read_committed fetches."""
        return [{"producer_id": pid, "first_offset": first}
                for pid, first, last in log.aborted_index if last >= start and first < end]

