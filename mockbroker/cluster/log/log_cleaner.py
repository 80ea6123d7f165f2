"""Retention and compaction of one partition log, as Kafka's log manager and cleaner do them.

Theory of operation: both act on whole segments (partition.py) and are plain functions of a
PartitionLog, its topic's configuration (`LogConfig`) and the time, so every replica runs
them on its own log; log_manager.py decides when.

Retention (cleanup.policy has `delete`; Kafka's UnifiedLog.deleteOldSegments): from the
oldest segment on, delete segments whose largest timestamp is more than retention.ms old,
then, while the log is larger than retention.bytes, the oldest segments whose removal keeps
it at or above that size. A segment is deletable only when all its offsets are below the
high watermark, so the log start (which moves to the next segment's base offset) never
passes it. An expired active segment goes too, leaving a new empty active segment at the
log end (Kafka rolls it first and deletes it at the next check; here both happen in one
pass).

Compaction (cleanup.policy has `compact`; Kafka's LogCleaner). The cleanable part of the log
runs from the log start to the first uncleanable segment: the active one, the first that
reaches the last stable offset (open transactions, and the high watermark), or the first
whose largest timestamp is younger than min.compaction.lag.ms. The dirty part starts at the
cleaner checkpoint (where the previous pass ended). A pass runs when the dirty share of the
cleanable bytes reaches min.cleanable.dirty.ratio (measured per segment, as Kafka), when a
KIP-534 delete horizon has passed, or when forced; max.compaction.lag.ms is not enforced.
It maps every key of the dirty part to its last offset, then rewrites every cleanable batch
keeping a record only if no later record of its key is in the map: records of aborted
transactions and records without a key go, tombstones (null value) stay until their batch's
delete horizon (the time of the pass that first kept them plus delete.retention.ms, stored
in the batch as KIP-534 does) has passed. Control batches (transaction markers) are kept.
A rewritten batch keeps its base offset, last offset delta, producer fields and leader epoch
(records.rebuild_batch: offsets keep their gaps, the CRC is recomputed), and consecutive
cleaned segments that together fit in segment.bytes become one (Kafka groups them by their
size before cleaning, here after, so a little more merges); a batch left empty
is dropped (Kafka keeps a producer's last batch as an empty header; producer state here lives
outside the log, so nothing needs it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from kafka_protocol_codec.record_batches import BatchHeader
from kafka_protocol_codec.records import Record, decode_batch, rebuild_batch

from mockbroker.cluster.configs.config_defs import segment_bytes
from mockbroker.cluster.log.partition import PartitionLog, StoredBatch


class LogConfig(NamedTuple):
    """The topic configs retention and the cleaner read, parsed once per pass."""

    delete: bool
    compact: bool
    retention_ms: int
    retention_bytes: int
    delete_retention_ms: int
    min_compaction_lag_ms: int
    min_cleanable_dirty_ratio: float
    segment_bytes: int = 1 << 30

    @classmethod
    def of(cls, config: Mapping[str, str]) -> LogConfig:
        policies = {p.strip() for p in config["cleanup.policy"].split(",")}
        return cls("delete" in policies, "compact" in policies, int(config["retention.ms"]),
                   int(config["retention.bytes"]), int(config["delete.retention.ms"]),
                   int(config["min.compaction.lag.ms"]),
                   float(config["min.cleanable.dirty.ratio"]), segment_bytes(config))


# -- retention -------------------------------------------------------------------------------

def _deletable_prefix(log: PartitionLog, expired: list[bool]) -> int:
    """How many leading segments may go: each one `expired` and wholly below the HW."""
    count = 0
    for index, segment in enumerate(log.segments):
        last = index == len(log.segments) - 1
        if (last and not segment.batch_count) or not expired[index] \
                or log.segment_end_offset(index) > log.high_watermark:
            break
        count += 1
    return count


def apply_retention(log: PartitionLog, config: LogConfig, now_ms: int) -> int:
    """Delete the segments retention.ms and retention.bytes retire; returns how many."""
    if not config.delete:
        return 0
    deleted = 0
    if config.retention_ms >= 0:
        expired = [now_ms - s.max_timestamp > config.retention_ms for s in log.segments]
        count = _deletable_prefix(log, expired)
        log.delete_segments_before(count)
        deleted += count
    if config.retention_bytes >= 0:
        excess = log.size_bytes - config.retention_bytes
        expired = []
        for segment in log.segments:
            expired.append(excess - segment.size_bytes >= 0)
            if expired[-1]:
                excess -= segment.size_bytes
        count = _deletable_prefix(log, expired)
        log.delete_segments_before(count)
        deleted += count
    return deleted


# -- compaction ------------------------------------------------------------------------------

class Cleanable(NamedTuple):
    """The cleanable part of a log: [log start, end_offset) over segments [0, end_index)."""

    end_index: int
    end_offset: int
    first_dirty: int
    dirty_ratio: float


def cleanable(log: PartitionLog, config: LogConfig, now_ms: int) -> Cleanable:
    """Where cleaning must stop and how dirty the part before it is."""
    stable = min(log.last_stable_offset, log.high_watermark)
    end_index = len(log.segments) - 1  # the active segment is never cleaned
    for index, segment in enumerate(log.segments[:-1]):
        too_young = config.min_compaction_lag_ms > 0 \
            and segment.max_timestamp > now_ms - config.min_compaction_lag_ms
        if log.segment_end_offset(index) > stable or too_young:
            end_index = index
            break
    end_offset = log.segments[end_index].base_offset if end_index < len(log.segments) \
        else log.log_end_offset
    first_dirty = max(log.cleaner_checkpoint, log.log_start_offset)
    clean_bytes = dirty_bytes = 0
    for segment in log.segments[:end_index]:
        if segment.base_offset >= first_dirty:
            dirty_bytes += segment.size_bytes
        else:
            clean_bytes += segment.size_bytes
    total = clean_bytes + dirty_bytes
    return Cleanable(end_index, end_offset, first_dirty, dirty_bytes / total if total else 0.0)


def needs_cleaning(log: PartitionLog, config: LogConfig, span: Cleanable, now_ms: int) -> bool:
    """Dirty enough, or a tombstone's delete horizon has passed."""
    if span.end_index == 0:
        return False
    if span.dirty_ratio > 0 and span.dirty_ratio >= config.min_cleanable_dirty_ratio:
        return True
    horizon = log.next_delete_horizon_ms
    return horizon is not None and horizon <= now_ms


class CleanedBatches(NamedTuple):
    """One pass's output for a cleanable range (kept so replicas holding the very same
    batches can take it instead of rewriting their own copies)."""

    source: tuple[StoredBatch, ...]
    batches: list[StoredBatch]
    next_delete_horizon_ms: int | None
    records_removed: int


def _aborted(log: PartitionLog) -> dict[int, list[tuple[int, int]]]:
    by_producer: dict[int, list[tuple[int, int]]] = {}
    for producer_id, first, last in log.aborted_index:
        by_producer.setdefault(producer_id, []).append((first, last))
    return by_producer


def _is_aborted(batch: StoredBatch, aborted: dict[int, list[tuple[int, int]]]) -> bool:
    if not batch.is_transactional or batch.is_control:
        return False
    return any(first <= batch.base_offset <= last
               for first, last in aborted.get(batch.producer_id, ()))


def clean_batches(log: PartitionLog, config: LogConfig, source: list[StoredBatch],
                  first_dirty: int, now_ms: int) -> CleanedBatches:
    """The cleaned copy of `source` (the batches of the cleanable segments)."""
    aborted = _aborted(log)
    decoded: list[tuple[StoredBatch, BatchHeader, list[Record]] | None] = []
    offset_map: dict[bytes, int] = {}
    for batch in source:
        if batch.is_control or _is_aborted(batch, aborted):
            decoded.append(None)
            continue
        whole = decode_batch(batch.data)
        decoded.append((batch, whole.header, whole.records))
        if batch.last_offset >= first_dirty:
            for record in whole.records:
                if record.key is not None and record.offset >= first_dirty:
                    offset_map[record.key] = record.offset
    out: list[StoredBatch] = []
    next_horizon: int | None = None
    removed = 0
    for batch, entry in zip(source, decoded, strict=True):
        if entry is None:
            if batch.is_control:
                out.append(batch)
            else:
                removed += BatchHeader.parse(batch.data).record_count
            continue
        _, header, records = entry
        horizon = header.base_timestamp if header.has_delete_horizon else None
        kept = [r for r in records
                if r.key is not None and offset_map.get(r.key, -1) <= r.offset
                and not (r.value is None and horizon is not None and horizon <= now_ms)]
        removed += len(records) - len(kept)
        has_tombstones = any(r.value is None for r in kept)
        new_horizon = (horizon if horizon is not None else now_ms + config.delete_retention_ms) \
            if has_tombstones else None
        if has_tombstones and new_horizon is not None:
            next_horizon = new_horizon if next_horizon is None else min(next_horizon, new_horizon)
        if not kept:
            continue
        if len(kept) == len(records) and new_horizon == horizon:
            out.append(batch)  # unchanged: the same bytes, still shared with other replicas
            continue
        data = rebuild_batch(header, kept, delete_horizon_ms=new_horizon)
        rebuilt = BatchHeader.parse(data)
        out.append(StoredBatch(batch.base_offset, batch.last_offset, rebuilt.max_timestamp,
                               data, batch.producer_id, batch.is_transactional,
                               batch.is_control))
    return CleanedBatches(tuple(source), out, next_horizon, removed)


MemoKey = tuple[int, ...]


def clean_log(log: PartitionLog, config: LogConfig, now_ms: int, *, force: bool = False,
              memo: dict[MemoKey, CleanedBatches] | None = None) -> CleanedBatches | None:
    """One cleaner pass over `log` when it needs one (or `force`); None when it did not.

    `memo` holds this pass's results by the identity of the batches cleaned and the range:
    replicas share their StoredBatch objects, so a follower whose cleanable range is the
    leader's takes the leader's cleaned batches (deterministic for the same input, time
    and aborted transactions) and the cleaned bytes stay shared."""
    span = cleanable(log, config, now_ms)
    if span.end_index == 0 or not (force or needs_cleaning(log, config, span, now_ms)):
        return None
    first, _ = log.segment_bounds(0)
    _, end = log.segment_bounds(span.end_index - 1)
    source = log.batches[first:end]
    key: MemoKey = (span.first_dirty, span.end_offset, now_ms, *map(id, source))
    result = memo.get(key) if memo is not None else None
    if result is None:  # the key's ids stay valid: the memo holds the source batches
        result = clean_batches(log, config, source, span.first_dirty, now_ms)
        if memo is not None:
            memo[key] = result
    log.replace_batches(log.segments[0].base_offset, span.end_offset, result.batches)
    log.merge_segments(span.end_index, config.segment_bytes)
    log.cleaner_checkpoint = span.end_offset
    log.cleaner_last_run_ms = now_ms
    log.next_delete_horizon_ms = result.next_delete_horizon_ms
    return result
