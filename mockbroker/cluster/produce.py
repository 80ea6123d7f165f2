"""The produce path: a client's records for one partition, from wire bytes to the log.

Theory of operation: `Cluster.produce` owns every decision a leader makes about a produced
batch, in Kafka's order (ReplicaManager.appendRecords -> Partition.appendRecordsToLeader ->
UnifiedLog.appendAsLeader):
1. leader-epoch fencing and leadership on the receiving broker's image (leadership.py);
2. with acks=all, the ISR must hold at least min.insync.replicas (NOT_ENOUGH_REPLICAS);
3. the records must be exactly one magic-2 batch (`check_produced_records` here: older
   formats UNSUPPORTED_FOR_MESSAGE_FORMAT, more than one batch INVALID_RECORD, a bad CRC
   CORRUPT_MESSAGE, over max.message.bytes MESSAGE_TOO_LARGE, a client control batch
   INVALID_RECORD);
4. the producer checks and the append (PartitionLog.append_producer_batch: transaction
   verification, idempotent sequences, duplicates, the last stable offset).
The handler only reads the wire shape and turns the AppendResult into a response entry.
This module holds step 3; the batch header is parsed once here and handed on.
"""

from __future__ import annotations

from kafka_protocol_codec import CodecError
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.records import BatchHeader, peek_magic, split_batches, verify_crc

from mockbroker.cluster.partition import AppendResult

CheckedBatch = tuple[memoryview, BatchHeader]


def check_produced_records(records: bytes | memoryview | None,
                           max_message_bytes: int) -> CheckedBatch | AppendResult:
    """The one batch of a Produce partition and its header, or the error to answer."""
    try:
        batches = split_batches(records or b"")
        magics = [peek_magic(b) for b in batches]
    except CodecError as exc:
        return AppendResult(ErrorCode.CORRUPT_MESSAGE, message=str(exc))
    if any(m < 2 for m in magics):
        return AppendResult(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                            message="Produce v3+ requires magic 2 record batches")
    if len(batches) != 1 or magics[0] != 2:
        return AppendResult(ErrorCode.INVALID_RECORD,
                            message="Produce requests must carry exactly one record batch "
                                    "per partition")
    batch = batches[0]
    if not verify_crc(batch):
        return AppendResult(ErrorCode.CORRUPT_MESSAGE,
                            message="Record batch CRC-32C does not match")
    if len(batch) > max_message_bytes:
        return AppendResult(ErrorCode.MESSAGE_TOO_LARGE,
                            message=f"The batch size {len(batch)} exceeds max.message.bytes "
                                    f"{max_message_bytes}")
    header = BatchHeader.parse(batch)
    if header.is_control:
        return AppendResult(ErrorCode.INVALID_RECORD,
                            message="Clients may not write control batches")
    return batch, header
