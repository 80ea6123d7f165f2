"""Errors raised by cluster operations, each carrying the Kafka error code to report."""

from __future__ import annotations

from kafka_protocol_codec.error_codes import ErrorCode


class ClusterError(Exception):
    """A cluster operation refused: `code` is the Kafka error to answer with."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
