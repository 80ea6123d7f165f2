"""Where the cluster's state is kept: memory only (the default) or a data directory.

Theory of operation. The cluster writes through a storage object at a few mutation points
only: the controller's metadata append (`append_metadata`), each replica's log (a LogStore
per replica, partition.py calls it on append, truncation, log start and epoch-cache
changes), committed offsets (`OffsetJournal`, offset_store.py) and the transaction coordinator's
state (`TransactionJournal`, txn_coordinator.py); ACLs and SASL credentials are metadata
records, kept with the metadata log. The default,
`MemoryStorage`, does nothing at those points (a replica gets no LogStore at all, so the
produce path pays one `is None` test). `FileStorage` keeps everything under one directory:

    DIR/meta.properties                 cluster.id, as `kafka-storage format` writes it
    DIR/metadata.log                    the metadata log: one frame per record
    DIR/broker-<id>/<topic>-<p>/        each replica's segment and checkpoints
                                        (replica_files.py)
    DIR/consumer-offsets.log            committed offsets: one frame per commit or deletion
    DIR/transaction-state.log           the transaction coordinator: one frame per change

A frame is length (uint32) + CRC-32C (uint32) of the payload + the payload; a load reads
frames until one is torn or fails its CRC and truncates the file there, as Kafka's log
recovery truncates a bad tail. A metadata frame holds the records of one controller
operation (all of a new topic's records, a broker's registration and unfencing: kept or lost
together, as Kafka's controller writes them in one atomic batch), each as its type and
version (int16), length (uint32) and the record as the codec's metadata-record encoder wrote
it (KRaft's schemas), so start-up replays the very records the controller appended, through the same
`MetadataImage.apply` the brokers use.

Committed offsets are a journal like __consumer_offsets (a commit is one appended frame, a
deletion a tombstone), not a snapshot: groups commit often and a snapshot would rewrite every
offset on every commit. An offset committed inside a transaction is a frame with its
producer id, and the transaction's end one frame (producer id, commit or abort), as Kafka's
coordinator writes a marker to __consumer_offsets. The journal is compacted at start-up
(rewritten with the live and still pending entries, through a temporary file and a rename).

The transaction coordinator's state is a journal like __transaction_state: one frame (JSON)
holding the whole state of a transactional id (producer id and epoch, the previous and next
producer ids, timeout, state, partitions, groups, start and update times, transaction
version; Kafka's TransactionLogValue) after each change: InitProducerId, a partition or
group joining the transaction, Prepare* (written before any marker) and Complete*. It is
written before the request is answered, and compacted at start-up to the last frame of each
id.

What is flushed when, and what a crash can lose. Every write is an `os.write` made while
the change is applied, on the event loop, before the answer to the request that caused it is
sent: when a client has an answer, what it reports is in the kernel's page cache. Nothing is
buffered in the process, so a killed process (SIGKILL, an OOM kill) loses nothing it wrote;
what it loses is work not yet applied (a request read but not handled) and answers not yet
sent, which the client retries (an idempotent producer's retried batch is recognized as a
duplicate from the producer state rebuilt from the log; a retried EndTxn finds the
transaction completing or complete). The files are written in the order of the changes,
so a kill leaves a prefix of the writes (never a later one without an earlier one); a
change cut between two of its writes (a marker on the leader but not yet on a follower, a
transaction prepared but not every marker written) is finished at start-up (restore.py).
A machine crash (power loss, kernel panic) can lose what the page cache had not written
back, since writes are not synced unless `fsync` (`--data-dir-fsync`, an fsync after every
write, as a Kafka broker with flush.messages=1); without it, what was acknowledged within the kernel's
write-back delay (vm.dirty_expire_centisecs, 30 s by default) may be gone, each file
independently (a transaction's state may be kept and its marker lost), and recovery
truncates each file's torn tail. Kafka without fsync relies on replication across machines
for this, which one process cannot give.
"""

from __future__ import annotations

import logging
import os
import struct
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_protocol_codec import codec_for, metadata_record
from kafka_protocol_codec.record_batches import crc32c

from mockbroker.cluster.groups.offset_store import CommittedOffset
from mockbroker.cluster.kraft.metadata_log import REMOVE_TOPIC, TOPIC, MetadataRecord
from mockbroker.cluster.persistence.replica_files import ReplicaFiles, write_atomically
from mockbroker.cluster.producers.txn_coordinator import TransactionMetadata, TxnState

META_PROPERTIES = "meta.properties"
METADATA_LOG = "metadata.log"
OFFSETS_LOG = "consumer-offsets.log"
TRANSACTIONS_LOG = "transaction-state.log"
# where SASL users were kept before they became metadata records (no longer read)
LEGACY_CREDENTIALS = "credentials.json"
_log = logging.getLogger(__name__)
_FRAME = struct.Struct(">II")  # payload length, CRC-32C of the payload
_RECORD_HEADER = struct.Struct(">hhI")  # record type, version, length of the encoding


class StorageError(ValueError):
    """The data directory cannot be used (not writable, another cluster's)."""


def frame(payload: bytes) -> bytes:
    return _FRAME.pack(len(payload), crc32c(payload)) + payload


def read_frames(data: bytes) -> tuple[list[bytes], int]:
    """The payloads of the whole, valid frames at the start of `data`, and the length of
    that valid prefix (the place to truncate a torn or corrupt tail)."""
    payloads: list[bytes] = []
    pos = 0
    while len(data) - pos >= _FRAME.size:
        length, crc = _FRAME.unpack_from(data, pos)
        end = pos + _FRAME.size + length
        if end > len(data):
            break
        payload = data[pos + _FRAME.size:end]
        if crc32c(payload) != crc:
            break
        payloads.append(payload)
        pos = end
    return payloads, pos


class FrameFile:
    """An append-only file of frames, recovered (tail truncated) when opened."""

    def __init__(self, path: Path, fsync: bool) -> None:
        self.path = path
        self.fsync = fsync
        self._fd: int | None = None

    def recover(self) -> list[bytes]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        payloads, valid = read_frames(data)
        if valid < len(data):
            with open(self.path, "r+b") as handle:
                handle.truncate(valid)
        return payloads

    def append(self, payload: bytes) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(self._fd, frame(payload))
        if self.fsync:
            os.fsync(self._fd)

    def rewrite(self, payloads: list[bytes]) -> None:
        """Replace the file's content atomically (compaction, or emptying it)."""
        self.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as out:
            out.write(b"".join(frame(p) for p in payloads))
            if self.fsync:
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, self.path)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclass
class StoredOffsets:
    """The committed-offsets journal replayed: the live committed offsets, and the
    transactional offsets still waiting for their transaction's outcome (producer id,
    group, topic, partition, offset)."""

    committed: list[tuple[str, str, int, CommittedOffset]] = field(default_factory=list)
    pending: list[tuple[int, str, str, int, CommittedOffset]] = field(default_factory=list)


class MemoryStorage:
    """Nothing persisted: every hook is a no-op and nothing is loaded."""

    persistent = False

    def cluster_id(self, configured: str, generated: bool) -> str:
        return configured

    def metadata_records(self) -> list[tuple[int, int, bytes]]:
        return []

    def append_metadata(self, records: Sequence[MetadataRecord]) -> None:
        pass

    def replica_files(self, broker_id: int, topic: str, partition: int) -> ReplicaFiles | None:
        return None

    def load_offsets(self) -> StoredOffsets:
        return StoredOffsets()

    def remove_strays(self) -> None:
        pass

    def committed(self, group: str, topic: str, partition: int,
                  entry: CommittedOffset | None) -> None:
        pass

    def pending(self, group: str, topic: str, partition: int, producer_id: int,
                entry: CommittedOffset | None) -> None:
        pass

    def pending_completed(self, producer_id: int, commit: bool, timestamp_ms: int) -> None:
        pass

    def offsets_cleared(self) -> None:
        pass

    def load_transactions(self) -> list[TransactionMetadata]:
        return []

    def transaction_changed(self, meta: TransactionMetadata) -> None:
        pass

    def transactions_cleared(self) -> None:
        pass

    def transaction_removed(self, transactional_id: str) -> None:
        pass

    def close(self) -> None:
        pass


class FileStorage(MemoryStorage):
    """Everything under `directory` (see the module docstring for the layout)."""

    persistent = True

    def __init__(self, directory: str | os.PathLike[str], fsync: bool = False) -> None:
        self.directory = Path(directory)
        self.fsync = fsync
        check_directory(self.directory)
        self._metadata = FrameFile(self.directory / METADATA_LOG, fsync)
        self._offsets = FrameFile(self.directory / OFFSETS_LOG, fsync)
        self._transactions = FrameFile(self.directory / TRANSACTIONS_LOG, fsync)
        self._replicas: dict[tuple[str, int, int], ReplicaFiles] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        if (self.directory / LEGACY_CREDENTIALS).exists():
            _log.warning("%s in %s is no longer read: SASL users are metadata records now; "
                         "add them again (--sasl-users, add-user)", LEGACY_CREDENTIALS,
                         self.directory)

    # -- meta.properties --------------------------------------------------------------------

    def cluster_id(self, configured: str, generated: bool) -> str:
        """The cluster id of the directory: a formatted directory keeps its own (a different
        id given explicitly is an error, as Kafka's meta.properties check); a new one is
        formatted with `configured`."""
        path = self.directory / META_PROPERTIES
        stored = _read_properties(path).get("cluster.id")
        if stored is None:
            write_atomically(path, f"version=1\ncluster.id={configured}\n", self.fsync)
            return configured
        if stored != configured and not generated:
            raise StorageError(f"the data directory {self.directory} belongs to cluster "
                               f"{stored}, not {configured} (meta.properties)")
        return stored

    # -- the metadata log -------------------------------------------------------------------

    def metadata_records(self) -> list[tuple[int, int, bytes]]:
        out = []
        for payload in self._metadata.recover():
            pos = 0
            while pos < len(payload):
                record_type, version, length = _RECORD_HEADER.unpack_from(payload, pos)
                pos += _RECORD_HEADER.size
                encoded = payload[pos:pos + length]
                pos += length
                out.append((record_type, version, encoded))
                if record_type == TOPIC:
                    data = codec_for(metadata_record(TOPIC), version).decode(encoded)
                    self._topic_names[data["topic_id"]] = data["name"]
        return out

    def append_metadata(self, records: Sequence[MetadataRecord]) -> None:
        """One frame for the records of one controller operation (all kept, or none)."""
        self._metadata.append(b"".join(
            _RECORD_HEADER.pack(r.record_type, r.version, len(r.encoded)) + r.encoded
            for r in records))
        for record in records:
            if record.record_type == TOPIC:
                self._topic_names[record.data["topic_id"]] = record.data["name"]
            elif record.record_type == REMOVE_TOPIC:
                # brokers delete a removed topic's logs when they apply the record, as
                # Kafka's do
                name = self._topic_names.pop(record.data["topic_id"], None)
                if name is not None:
                    self._delete_topic(name)

    # -- replicas ---------------------------------------------------------------------------

    def replica_files(self, broker_id: int, topic: str, partition: int) -> ReplicaFiles:
        key = (topic, partition, broker_id)
        files = self._replicas.get(key)
        if files is None:
            files = ReplicaFiles(self.directory / f"broker-{broker_id}" / f"{topic}-{partition}",
                                 self.fsync)
            files.directory.mkdir(parents=True, exist_ok=True)  # as Kafka creates a replica
            self._replicas[key] = files
        return files

    def _delete_topic(self, name: str) -> None:
        import shutil  # json and shutil load with a data directory, not at every start-up

        for key in [k for k in self._replicas if k[0] == name]:
            self._replicas.pop(key).delete()
        for broker_dir in self.directory.glob("broker-*"):  # replicas never opened here
            for path in broker_dir.glob(f"{name}-*"):
                if path.name.rpartition("-")[0] == name:
                    shutil.rmtree(path, ignore_errors=True)

    def remove_strays(self) -> None:
        """Delete replica directories no partition of the metadata owns (a topic whose
        creation was torn from the metadata log, or whose deletion was not finished), as
        Kafka deletes stray logs, so a new topic of the same name starts empty."""
        import shutil  # json and shutil load with a data directory, not at every start-up

        owned = {files.directory for files in self._replicas.values()}
        for path in self.directory.glob("broker-*/*"):
            if path.is_dir() and path not in owned:
                shutil.rmtree(path, ignore_errors=True)

    # -- committed offsets ------------------------------------------------------------------

    def load_offsets(self) -> StoredOffsets:
        """The live committed offsets and the pending transactional ones (the journal
        replayed, then rewritten compacted). A frame with a producer id is a pending
        offset (or its tombstone); one with a producer id and `commit` only is the end of
        that producer's transaction, which moves its pending offsets into the committed
        ones (timestamped then) or drops them."""
        import json  # json and shutil load with a data directory, not at every start-up

        live: dict[tuple[str, str, int], CommittedOffset] = {}
        pending: dict[int, dict[tuple[str, str, int], CommittedOffset]] = {}
        for payload in self._offsets.recover():
            entry = json.loads(payload)
            producer_id = entry.get("producer_id")
            if "commit" in entry:
                ended = pending.pop(producer_id, {})
                if entry["commit"]:
                    for key, value in ended.items():
                        live[key] = CommittedOffset(value.offset, value.leader_epoch,
                                                    value.metadata, entry["timestamp"])
                continue
            key = (entry["group"], entry["topic"], entry["partition"])
            target = live if producer_id is None else pending.setdefault(producer_id, {})
            if entry.get("offset") is None:
                target.pop(key, None)
            else:
                target[key] = CommittedOffset(entry["offset"], entry["leader_epoch"],
                                              entry["metadata"], entry["timestamp"])
        self._offsets.rewrite(
            [_offset_payload(*key, value) for key, value in live.items()]
            + [_offset_payload(*key, value, producer_id=producer_id)
               for producer_id, entries in pending.items() for key, value in entries.items()])
        return StoredOffsets([(*key, value) for key, value in live.items()],
                             [(producer_id, *key, value)
                              for producer_id, entries in pending.items()
                              for key, value in entries.items()])

    def committed(self, group: str, topic: str, partition: int,
                  entry: CommittedOffset | None) -> None:
        self._offsets.append(_offset_payload(group, topic, partition, entry))

    def pending(self, group: str, topic: str, partition: int, producer_id: int,
                entry: CommittedOffset | None) -> None:
        self._offsets.append(_offset_payload(group, topic, partition, entry,
                                             producer_id=producer_id))

    def pending_completed(self, producer_id: int, commit: bool, timestamp_ms: int) -> None:
        import json  # with a data directory only

        self._offsets.append(json.dumps({"producer_id": producer_id, "commit": commit,
                                         "timestamp": timestamp_ms},
                                        separators=(",", ":")).encode())

    def offsets_cleared(self) -> None:
        self._offsets.rewrite([])

    # -- the transaction coordinator's state ------------------------------------------------

    def load_transactions(self) -> list[TransactionMetadata]:
        """Each transactional id's last stored state (the journal replayed, then rewritten
        with one frame per id)."""
        import json  # with a data directory only

        latest: dict[str, bytes] = {}
        for payload in self._transactions.recover():
            value = json.loads(payload)
            if value.get("removed"):  # expired (transactional.id.expiration.ms)
                latest.pop(value["id"], None)
            else:
                latest[value["id"]] = payload
        self._transactions.rewrite(list(latest.values()))
        return [_transaction_from(json.loads(payload)) for payload in latest.values()]

    def transaction_changed(self, meta: TransactionMetadata) -> None:
        self._transactions.append(_transaction_payload(meta))

    def transactions_cleared(self) -> None:
        self._transactions.rewrite([])

    def transaction_removed(self, transactional_id: str) -> None:
        import json  # with a data directory only

        self._transactions.append(json.dumps({"id": transactional_id,
                                              "removed": True}).encode())

    def replicas(self) -> Iterator[ReplicaFiles]:
        yield from self._replicas.values()

    def close(self) -> None:
        self._metadata.close()
        self._offsets.close()
        self._transactions.close()
        for files in self._replicas.values():
            files.close()


def check_directory(directory: Path) -> None:
    """Create the directory if needed; StorageError unless it is a writable directory."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot create the data directory {directory}: "
                           f"{exc.strerror or exc}") from exc
    if not directory.is_dir():
        raise StorageError(f"the data directory {directory} is not a directory")
    probe = directory / ".write-test"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise StorageError(f"the data directory {directory} is not writable: "
                           f"{exc.strerror or exc}") from exc


def _read_properties(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    pairs = (line.split("=", 1) for line in text.splitlines()
             if "=" in line and not line.lstrip().startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def _offset_payload(group: str, topic: str, partition: int,
                    entry: CommittedOffset | None, producer_id: int | None = None) -> bytes:
    import json  # with a data directory only

    value: dict[str, Any] = {"group": group, "topic": topic, "partition": partition}
    if producer_id is not None:
        value["producer_id"] = producer_id
    if entry is not None:
        value.update(offset=entry.offset, leader_epoch=entry.leader_epoch,
                     metadata=entry.metadata, timestamp=entry.commit_timestamp_ms)
    return json.dumps(value, separators=(",", ":")).encode()



def _transaction_payload(meta: TransactionMetadata) -> bytes:
    """What Kafka's TransactionLogValue holds, plus the groups (whose offsets partition
    Kafka lists among the transaction's partitions)."""
    import json  # with a data directory only

    return json.dumps({
        "id": meta.transactional_id, "producer_id": meta.producer_id,
        "producer_epoch": meta.producer_epoch, "last_producer_id": meta.last_producer_id,
        "last_producer_epoch": meta.last_producer_epoch,
        "next_producer_id": meta.next_producer_id, "timeout_ms": meta.timeout_ms,
        "state": meta.state.value, "partitions": meta.sorted_partitions(),
        "groups": sorted(meta.groups), "start_ms": meta.start_ms, "update_ms": meta.update_ms,
        "transaction_version": meta.transaction_version,
    }, separators=(",", ":")).encode()


def _transaction_from(value: dict[str, Any]) -> TransactionMetadata:
    return TransactionMetadata(
        value["id"], value["producer_id"], value["producer_epoch"], value["last_producer_id"],
        value["last_producer_epoch"], value["timeout_ms"], TxnState(value["state"]),
        {(topic, partition) for topic, partition in value["partitions"]}, set(value["groups"]),
        value["start_ms"], value["update_ms"],
        transaction_version=value["transaction_version"],
        next_producer_id=value["next_producer_id"])
