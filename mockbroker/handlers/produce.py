"""Produce (key 0): advertised 0-9, handled from v3 (magic-2 record batches).

Per partition, in Kafka's order: the partition must exist and be led by this broker; with
acks=-1 the ISR must be at least min.insync.replicas; the records must be exactly one
magic-2 batch (older formats: UNSUPPORTED_FOR_MESSAGE_FORMAT) with a good CRC-32C
(CORRUPT_MESSAGE) and within max.message.bytes (MESSAGE_TOO_LARGE); idempotent producers
pass the sequence checks (a duplicate is acknowledged with its original offset and not
written again). A transactional batch must come from the producer's current epoch and go to
a partition added to its ongoing transaction (the coordinator's verification, KIP-890 part 1:
INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE); it opens the transaction on the partition, which
holds the last stable offset back until the marker. A plain batch from a producer with an open
transaction here is INVALID_TXN_STATE, as in Kafka. The batch is then stored as sent, with
base offset and partition leader epoch patched in. acks=0 gets no response at all.

Two opt-in extensions (tagged fields of Produce v9+, registered in
mockbroker.cluster.wire_extensions, documented in docs/extensions.md) come first:
- per topic, PartitionCount (KIP-253): when set and different from the number of
  partitions in this broker's image, every partition of the topic gets INVALID_PARTITIONS
  (37), with a message saying which side is behind;
- per partition, CurrentLeaderEpoch (KIP-359): checked against this broker's view
  before leadership, as on Fetch: older -> FENCED_LEADER_EPOCH, newer ->
  UNKNOWN_LEADER_EPOCH. Absent (-1): no check, as real clients expect.
"""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec import CodecError, Struct
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import BatchHeader, peek_magic, split_batches, verify_crc

from mockbroker.cluster.producer_state import (
    BatchMeta,
    check_batch,
    last_sequence,
    record_batch,
)
from mockbroker.cluster.transactions import update_last_stable_offset
from mockbroker.cluster.wire_extensions import NO_CHECK
from mockbroker.handlers.common import check_leader
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

FIRST_HANDLED_VERSION = 3


def _partition_result(index: int, error: ErrorCode, base_offset: int = -1,
                      log_append_time: int = -1, log_start: int = -1,
                      message: str | None = None) -> dict[str, Any]:
    return {"index": index, "error_code": error, "base_offset": base_offset,
            "log_append_time_ms": log_append_time, "log_start_offset": log_start,
            "record_errors": [], "error_message": message}


@handler(0, 0, 9)
def handle_produce(req: Struct, ctx: RequestContext) -> dict[str, Any] | None:
    responses = []
    for topic in req.topic_data:
        stale = _partition_count_error(ctx, topic.name, topic.partition_count)
        if stale is not None:
            results = [_partition_result(p.index, ErrorCode.INVALID_PARTITIONS, message=stale)
                       for p in topic.partition_data]
        else:
            results = [produce_partition(ctx, topic.name, p.index, p.records, req.acks,
                                         p.current_leader_epoch)
                       for p in topic.partition_data]
        responses.append({"name": topic.name, "partition_responses": results})
    if req.acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}


def _partition_count_error(ctx: RequestContext, topic: str, count: int) -> str | None:
    """KIP-253: the producer's partition count against this broker's (None: no mismatch)."""
    if count == NO_CHECK:
        return None
    known = ctx.image.topics.get(topic)
    if known is None or len(known.partitions) == count:
        return None
    side = "the producer's metadata is stale" if count < len(known.partitions) \
        else "this broker's metadata is behind"
    return (f"Partition count {count} does not match the {len(known.partitions)} partitions "
            f"of topic '{topic}' on broker {ctx.broker_id}: {side}")


def produce_partition(ctx: RequestContext, topic: str, index: int, records: bytes | None,
                      acks: int, current_leader_epoch: int = NO_CHECK) -> dict[str, Any]:
    if ctx.api_version < FIRST_HANDLED_VERSION:
        return _partition_result(index, ErrorCode.UNSUPPORTED_VERSION,
                                 message="Produce below v3 (message format v0/v1) is not "
                                         "supported")
    check = check_leader(ctx, topic, index, current_leader_epoch)
    if check.error != ErrorCode.NONE or check.log is None:
        return _partition_result(index, check.error)
    log = check.log
    part = check.partition
    assert part is not None
    config = ctx.cluster.topic_config(topic, ctx.image)
    if acks == -1 and len(part.isr) < int(config["min.insync.replicas"]):
        return _partition_result(
            index, ErrorCode.NOT_ENOUGH_REPLICAS,
            message=f"The size of the current ISR {list(part.isr)} is insufficient to satisfy "
                    f"the min.isr requirement of {config['min.insync.replicas']}")
    try:
        batches = split_batches(records or b"")
        magics = [peek_magic(b) for b in batches]
    except CodecError as exc:
        return _partition_result(index, ErrorCode.CORRUPT_MESSAGE, message=str(exc))
    if any(m < 2 for m in magics):
        return _partition_result(index, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                                 message="Produce v3+ requires magic 2 record batches")
    if len(batches) != 1 or magics[0] != 2:
        return _partition_result(index, ErrorCode.INVALID_RECORD,
                                 message="Produce requests must carry exactly one record batch "
                                         "per partition")
    batch = batches[0]
    if not verify_crc(batch):
        return _partition_result(index, ErrorCode.CORRUPT_MESSAGE,
                                 message="Record batch CRC-32C does not match")
    if len(batch) > int(config["max.message.bytes"]):
        return _partition_result(
            index, ErrorCode.MESSAGE_TOO_LARGE,
            message=f"The batch size {len(batch)} exceeds max.message.bytes "
                    f"{config['max.message.bytes']}")
    header = BatchHeader.parse(batch)
    if header.is_control:
        return _partition_result(index, ErrorCode.INVALID_RECORD,
                                 message="Clients may not write control batches")
    meta_seq: tuple[int, int] | None = None
    if header.is_transactional:
        txn_error = ctx.cluster.transactions.verify_produce(
            header.producer_id, header.producer_epoch, topic, index)
        if txn_error != ErrorCode.NONE:
            return _partition_result(index, txn_error, log_start=log.log_start_offset)
    if header.producer_id >= 0:
        first = header.base_sequence
        last = last_sequence(first, header.last_offset_delta)
        entry = log.producer_states.get(header.producer_id)
        verdict = check_batch(entry, header.producer_epoch, first, last)
        if verdict.error != ErrorCode.NONE:
            return _partition_result(index, verdict.error, log_start=log.log_start_offset)
        if verdict.duplicate_of is not None:
            dup = verdict.duplicate_of
            return _partition_result(index, ErrorCode.NONE, dup.base_offset,
                                     log_start=log.log_start_offset)
        if not header.is_transactional and entry is not None \
                and entry.current_txn_first_offset is not None:
            return _partition_result(index, ErrorCode.INVALID_TXN_STATE,
                                     log_start=log.log_start_offset,
                                     message="Expected a transactional write from producer "
                                             f"{header.producer_id}")
        meta_seq = (first, last)
    now = ctx.now_ms()
    append_time = now if config["message.timestamp.type"] == "LogAppendTime" else None
    stored = log.append(batch, part.leader_epoch, append_time)
    if meta_seq is not None:
        record_batch(log.producer_states, header.producer_id, header.producer_epoch,
                     BatchMeta(meta_seq[0], meta_seq[1], stored.base_offset,
                               stored.last_offset, stored.max_timestamp),
                     transactional=header.is_transactional)
        if header.is_transactional:
            update_last_stable_offset(log)
    return _partition_result(index, ErrorCode.NONE, stored.base_offset,
                             append_time if append_time is not None else -1,
                             log.log_start_offset)
