"""Helpers shared by the transaction APIs: coordinator ownership and version-dependent
fencing errors.

A transactional request must reach the coordinator of its key (FindCoordinator key type 1
for a transactional.id, 0 for a group); `coordinator_error` (from find_coordinator) gives
NOT_COORDINATOR on any other broker and COORDINATOR_NOT_AVAILABLE while no live broker can
coordinate the key. KIP-588 introduced PRODUCER_FENCED; a request version that predates it
gets INVALID_PRODUCER_EPOCH, which older clients treat the same way.
"""

from __future__ import annotations

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.internal_topics import GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE
from mockbroker.handlers.find_coordinator import coordinator_error

__all__ = ["GROUP_KEY_TYPE", "TRANSACTION_KEY_TYPE", "coordinator_error", "fenced_for_version"]


def fenced_for_version(error: ErrorCode, version: int, first_fenced_version: int) -> ErrorCode:
    """PRODUCER_FENCED as the request version can express it."""
    if error == ErrorCode.PRODUCER_FENCED and version < first_fenced_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
