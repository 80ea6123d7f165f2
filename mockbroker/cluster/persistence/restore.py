"""Start-up from a data directory: replica logs, transactions and committed offsets.

Theory of operation. The metadata log has already been replayed into the controller's
image (Controller(replay=...)), so the topics, partitions, leaders, leader epochs, ISRs,
configs, ACLs and SASL credentials are those of the last run. Here every partition gets its replicas back: each
replica's segment is recovered (replica_files.py: CRC checked, a bad tail truncated) and its
batches are appended as a follower appends fetched batches (`append_replicated`), which
rebuilds the leader-epoch cache, the producer states (idempotent sequences, open
transactions) and the aborted-transaction index from the batch headers, as Kafka rebuilds
producer state from the log. The checkpoints then restore the log start offset and the
epoch cache (with the epochs started on election that no batch carries). Replicas holding
the same batch share one StoredBatch, as replication does in memory.

The transaction coordinator takes back its stored state first (data_dir.py's
transaction-state log, as Kafka's coordinator loads __transaction_state): every
transactional id keeps its producer id and epoch; an Ongoing transaction stays open, and
its timeout aborts it unless its producer ends it; a PrepareCommit or PrepareAbort one
(EndTxn was answered, not every marker acknowledged) writes its markers again at the first
tick once the leaders take them, and completes. A transaction a partition holds open is left
open when its coordinator state is Ongoing or Prepare* with that partition; any other (a
directory written before the coordinator's state was kept) is aborted with a marker on the
leader, since nothing else could ever end it.

Groups with committed offsets come back as Empty classic groups (Kafka loads a group from
__consumer_offsets the same way; members rejoin); transactional offsets still pending come
back with their producer's transaction (dropped when no open transaction holds their
group). High watermarks are recomputed (the leader's is the lowest log end over the ISR).
Leader epochs are kept: the brokers register again with new
broker epochs (RegisterBrokerRecord) and every partition keeps its leader and epoch, as in
KRaft when the leader comes back unfenced before any election; each broker then rejoins
(Cluster.start_broker runs dynamics.rejoin_broker once): a replica left out of the ISR
catches up and re-enters, an offline partition gets a leader (a new epoch).
"""

from __future__ import annotations

from typing import Protocol

from kafka_protocol_codec.record_batches import BatchHeader

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.groups.classic_groups import GroupCoordinator
from mockbroker.cluster.kraft.broker import BrokerNode
from mockbroker.cluster.kraft.metadata_log import MetadataImage
from mockbroker.cluster.log.partition import PartitionLog, StoredBatch
from mockbroker.cluster.log.replicas import Replication, apply_fetch
from mockbroker.cluster.persistence.data_dir import MemoryStorage, StorageError
from mockbroker.cluster.persistence.replica_files import ReplicaFiles
from mockbroker.cluster.producers.txn_coordinator import TransactionCoordinator, TxnState


class RestoreModel(Protocol):
    """The parts of the Cluster a restore fills."""

    clock: Clock
    brokers: dict[int, BrokerNode]
    replication: Replication
    groups: GroupCoordinator
    transactions: TransactionCoordinator

    @property
    def image(self) -> MetadataImage: ...


def restore(cluster: RestoreModel, storage: MemoryStorage) -> None:
    """Rebuild the partition data and offsets the data directory holds."""
    if not storage.persistent:
        return
    missing = sorted(set(cluster.image.brokers) - set(cluster.brokers))
    if missing:  # their replicas and leaderships would wait forever for them
        raise StorageError(f"the data directory holds brokers {sorted(cluster.image.brokers)}: "
                           f"start at least {max(missing) + 1} brokers, not "
                           f"{len(cluster.brokers)}")
    now = cluster.clock.now_ms()
    coordinator = cluster.transactions
    coordinator.load(storage.load_transactions())
    for name, topic in cluster.image.topics.items():
        for index, part in sorted(topic.partitions.items()):
            replica_set = cluster.replication.add(topic.topic_id, name, index,
                                                  list(part.replicas))
            shared: dict[int, StoredBatch] = {}
            for broker_id, log in replica_set.logs.items():
                files = storage.replica_files(broker_id, name, index)
                if files is not None:
                    load_log(log, files, shared)
            leader = replica_set.logs.get(part.leader)
            if leader is None:
                continue
            for pid, entry in list(leader.producer_states.items()):
                if entry.current_txn_first_offset is not None and not _still_open(
                        coordinator, pid, (name, index)):
                    leader.append_marker(pid, entry.epoch, entry.coordinator_epoch,
                                         False, part.leader_epoch, now)
            for log in replica_set.logs.values():
                if log is not leader and log.log_end_offset < leader.log_end_offset:
                    apply_fetch(log, leader)  # the brokers are not up yet to replicate it
            replica_set.update_high_watermark(wake=False)
            for log in replica_set.logs.values():
                if log is not leader:
                    log.high_watermark = min(leader.high_watermark, log.log_end_offset)
    storage.remove_strays()  # every replica of the metadata has its files open by now
    offsets = cluster.groups.offsets
    stored = storage.load_offsets()
    for group, topic_name, partition, committed in stored.committed:
        offsets.commit(group, topic_name, partition, committed.offset, committed.leader_epoch,
                       committed.metadata, committed.commit_timestamp_ms)
    orphans = set()
    for producer_id, group, topic_name, partition, committed in stored.pending:
        offsets.add_pending(group, producer_id, topic_name, partition, committed.offset,
                            committed.leader_epoch, committed.metadata)
        meta = coordinator.for_producer(producer_id)
        if meta is None or meta.state not in _OPEN or group not in meta.groups:
            orphans.add(producer_id)
    for group in sorted(offsets.groups()):
        cluster.groups.get_or_create(group)  # Empty, as Kafka loads a group from its offsets
    offsets.journal = storage
    coordinator.journal = storage
    for producer_id in sorted(orphans):  # no transaction will ever end them
        offsets.complete_pending(producer_id, commit=False)


# the coordinator states in which a transaction's partitions may hold it open
_OPEN = (TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


def _still_open(coordinator: TransactionCoordinator, producer_id: int,
                partition: tuple[str, int]) -> bool:
    """Whether the stored coordinator state will end this partition's open transaction
    (its producer's transaction is Ongoing or Prepare* and holds the partition); if not (a
    directory of a version that kept no coordinator state) it is aborted here."""
    meta = coordinator.for_producer(producer_id)
    return meta is not None and meta.state in _OPEN and partition in meta.partitions


def load_log(log: PartitionLog, files: ReplicaFiles, shared: dict[int, StoredBatch]) -> None:
    """Fill an empty replica log from its files (nothing is written back while loading)."""
    store, hook = log.store, log.replication_hook
    log.store, log.replication_hook = None, None
    try:
        batches, log_start, epochs = files.load()
        stored = []
        for data in batches:
            header = BatchHeader.parse(data)
            same = shared.get(header.base_offset)
            if same is None or same.data != data:
                same = StoredBatch(header.base_offset,
                                   header.base_offset + header.last_offset_delta,
                                   header.max_timestamp, data, header.producer_id,
                                   header.is_transactional, header.is_control)
                shared[header.base_offset] = same
            stored.append(same)
        log.append_replicated(stored)
        if log_start is not None and log_start > log.log_start_offset:
            log.delete_records_before(log_start)
            log.log_end_offset = max(log.log_end_offset, log.log_start_offset)
        if epochs is not None:
            kept = [(e, s) for e, s in epochs if s <= log.log_end_offset]
            rebuilt = [(e, s) for e, s in log.epoch_cache if not kept or e > kept[-1][0]]
            log.epoch_cache = kept + rebuilt
    finally:
        log.store, log.replication_hook = store, hook
