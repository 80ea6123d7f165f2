"""The produce path: a client's records for one partition, from wire bytes to the log.

Theory of operation: `Cluster.produce` owns every decision a leader makes about a produced
batch, in Kafka's order (ReplicaManager.appendRecords -> Partition.appendRecordsToLeader ->
UnifiedLog.appendAsLeader -> LogValidator):
1. acks other than -1, 0 or 1: INVALID_REQUIRED_ACKS for every partition of a topic this
   broker knows (ReplicaManager.appendRecords checks it before anything of the log);
   leader-epoch fencing and leadership on the receiving broker's image (leadership.py);
   a stopped broker (stop-broker moves its leadership at once, while requests it already
   read are still handled as its sockets close) appends nothing: NOT_LEADER_OR_FOLLOWER, as
   Kafka's broker answers after a controlled shutdown moved its leadership. A broker that is
   merely behind (paused metadata, isolate-broker) still appends to its own replica log: a
   zombie leader whose writes replication truncates later;
2. with acks=all, the ISR must hold at least min.insync.replicas, capped at the partition's
   replica count as Kafka's Partition.effectiveMinIsr caps it (NOT_ENOUGH_REPLICAS): a
   single-replica topic with min.insync.replicas=2 takes acks=all writes;
3. the records must be exactly one valid magic-2 batch (`check_produced_records` here, with
   the codec's `validate_batch`: framing, size against max.message.bytes, CRC-32C, codec and
   decompression, the offset range and record count, an exact walk of every record, keys on
   compacted topics, timestamps against message.timestamp.before/after.max.ms), each failure
   answered with the error code Kafka gives (CORRUPT_MESSAGE, INVALID_RECORD with
   record_errors, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP, UNKNOWN_SERVER_ERROR for an unknown
   codec or a body that does not decompress, UNSUPPORTED_COMPRESSION_TYPE for zstd before
   Produce v7, RECORD_LIST_TOO_LARGE for a batch larger than segment.bytes). Nothing that
   fails is stored, so every reader can parse what is;
4. the producer checks and the append (PartitionLog.append_producer_batch: transaction
   verification, idempotent sequences, duplicates, the last stable offset).
The handler only reads the wire shape and turns the AppendResult into a response entry.
This module holds step 3; the batch header is parsed once here and handed on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from kafka_protocol_codec.compression import Compression
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.record_batches import LOG_OVERHEAD, BatchHeader
from kafka_protocol_codec.validation import BatchValidationError, validate_batch

from mockbroker.cluster.configs.config_defs import segment_bytes
from mockbroker.cluster.log.partition import AppendResult

CheckedBatch = tuple[memoryview, BatchHeader]
# A compressed batch may inflate to this much at most (Kafka has no bound; a batch past it is
# MESSAGE_TOO_LARGE, which a Java producer answers by splitting the batch).
MAX_UNCOMPRESSED_BATCH_BYTES = 128 * 1024 * 1024
LONG_MAX = 2**63 - 1
MAGIC_OFFSET = 16  # baseOffset, batchLength, partitionLeaderEpoch, then magic
ZSTD_FROM_PRODUCE_VERSION = 7  # KIP-110: Produce v7 is the first that may carry zstd
VALID_ACKS = frozenset({-1, 0, 1})  # anything else: INVALID_REQUIRED_ACKS


class ProduceSettings(NamedTuple):
    """The topic configuration a produced batch is checked against, parsed once per
    effective configuration instead of once per batch (`produce_settings`)."""

    min_insync_replicas: int
    max_message_bytes: int
    require_keys: bool  # cleanup.policy has compact
    log_append_time: bool  # message.timestamp.type is LogAppendTime
    before_max_ms: int  # message.timestamp.before.max.ms
    after_max_ms: int  # message.timestamp.after.max.ms
    segment_bytes: int  # the segment size (config_defs.segment_bytes): a batch must fit one

    def timestamp_bounds(self, now_ms: int) -> tuple[int, int] | None:
        """The window record timestamps of a CreateTime topic must fall in (KIP-937), or
        None when neither bound is set (Kafka's defaults are Long.MAX_VALUE)."""
        before, after = self.before_max_ms, self.after_max_ms
        if before >= LONG_MAX and after >= LONG_MAX:
            return None
        return (now_ms - before if before < LONG_MAX else -LONG_MAX - 1,
                now_ms + after if after < LONG_MAX else LONG_MAX)


# id(config) -> (config, its settings); the config is held so its id cannot be reused
_SETTINGS: dict[int, tuple[Mapping[str, str], ProduceSettings]] = {}
_SETTINGS_MAX = 4096


def produce_settings(config: Mapping[str, str]) -> ProduceSettings:
    """`config` parsed for the produce path. Effective topic configurations are cached and
    never mutated (Cluster.topic_config), so the parse is cached by the mapping itself."""
    cached = _SETTINGS.get(id(config))
    if cached is not None and cached[0] is config:
        return cached[1]
    settings = ProduceSettings(
        int(config["min.insync.replicas"]), int(config["max.message.bytes"]),
        "compact" in config["cleanup.policy"].split(","),
        config["message.timestamp.type"] == "LogAppendTime",
        int(config["message.timestamp.before.max.ms"]),
        int(config["message.timestamp.after.max.ms"]),
        segment_bytes(config))
    if len(_SETTINGS) >= _SETTINGS_MAX:
        _SETTINGS.clear()
    _SETTINGS[id(config)] = (config, settings)
    return settings


def effective_min_isr(min_insync_replicas: int, replicas: int) -> int:
    """The ISR size acks=all needs: min.insync.replicas, but never more than the partition
    has replicas (Kafka's Partition.effectiveMinIsr)."""
    return min(min_insync_replicas, replicas)


def timestamp_bounds(config: Mapping[str, str], now_ms: int) -> tuple[int, int] | None:
    """The window record timestamps of a CreateTime topic must fall in (KIP-937), or None
    when neither bound is set (Kafka's defaults are Long.MAX_VALUE)."""
    return produce_settings(config).timestamp_bounds(now_ms)


NO_KEY = "Compacted topic cannot accept message without key"


def _name_partition(text: str, topic: str, partition: int) -> str:
    """Kafka's LogValidator names the partition in the missing-key record error."""
    return text.replace(NO_KEY, f"{NO_KEY} in topic partition {topic}-{partition}.")


# refusals Kafka's ReplicaManager answers without the log start offset (its own catch cases,
# and the request-level checks of ProduceRequest.validateRecords)
_WITHOUT_LOG_START = frozenset({ErrorCode.CORRUPT_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE,
                                ErrorCode.RECORD_LIST_TOO_LARGE,
                                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE})


def as_kafka_reports(refusal: AppendResult, records: bytes | memoryview | None,
                     log_start_offset: int) -> AppendResult:
    """A refused batch as Kafka's Produce response reports it: an error message only with
    record errors (a RecordValidationException; every other refusal is a plain exception
    without a custom message), and the partition's log start offset when the log layer threw
    (LogValidator, UnifiedLog.analyzeAndValidateRecords), -1 when the request's framing was
    refused before (no batch, a truncated one, bytes after it, magic 0/1) or the error is
    one of CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE,
    UNSUPPORTED_COMPRESSION_TYPE."""
    message = refusal.message if refusal.record_errors else None
    framing = not _single_v2_batch(records)
    start = -1 if framing or refusal.error in _WITHOUT_LOG_START else log_start_offset
    return AppendResult(refusal.error, message=message, record_errors=refusal.record_errors,
                        log_start_offset=start)


def _single_v2_batch(records: bytes | memoryview | None) -> bool:
    """The records hold exactly one whole batch of magic 2 (what ProduceRequest checks)."""
    if not records or len(records) < MAGIC_OFFSET + 1:
        return False
    view = memoryview(records)
    declared = int.from_bytes(view[8:12], "big", signed=True)
    return LOG_OVERHEAD + declared == len(view) and view[MAGIC_OFFSET] == 2


def check_produced_records(records: bytes | memoryview | None, config: Mapping[str, str],
                           now_ms: int, *, zstd_allowed: bool = True, topic: str = "",
                           partition: int = -1, settings: ProduceSettings | None = None
                           ) -> CheckedBatch | AppendResult:
    """The one batch of a Produce partition and its header, or the error to answer
    (`topic` and `partition` name it in the errors that do, as Kafka's). `settings`:
    produce_settings(config), when the caller has it already."""
    if not records:
        return AppendResult(ErrorCode.INVALID_RECORD,
                            message="Produce requests must carry exactly one record batch "
                                    "per partition")
    if settings is None:
        settings = produce_settings(config)
    log_append_time = settings.log_append_time
    try:
        checked = validate_batch(
            records, max_uncompressed_bytes=MAX_UNCOMPRESSED_BATCH_BYTES,
            require_keys=settings.require_keys, max_batch_bytes=settings.max_message_bytes,
            log_append_time=log_append_time,
            timestamp_bounds=None if log_append_time else settings.timestamp_bounds(now_ms))
    except BatchValidationError as exc:
        message, record_errors = exc.message, tuple(exc.record_errors)
        if topic and any(NO_KEY in why for _, why in record_errors):
            message = _name_partition(message, topic, partition)
            record_errors = tuple((i, _name_partition(why, topic, partition))
                                  for i, why in record_errors)
        return AppendResult(ErrorCode(exc.error_code), message=message,
                            record_errors=record_errors)
    header = checked.header
    if header.compression == Compression.ZSTD and not zstd_allowed:
        return AppendResult(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                            message="Produce requests below v7 may not use zstd compression")
    if len(records) > settings.segment_bytes:  # UnifiedLog.append, after validation
        return AppendResult(ErrorCode.RECORD_LIST_TOO_LARGE,
                            message=f"The batch of {len(records)} bytes is larger than the "
                                    f"segment size {settings.segment_bytes}")
    return memoryview(records), header
