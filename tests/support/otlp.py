"""A minimal OTLP MetricsData protobuf writer for tests: what a KIP-714 client pushes.

Only the fields the broker reads (cluster/client_telemetry/otlp.py), written as a protobuf encoder
would, so tests can build payloads without the opentelemetry-proto package.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def field_fixed64(number: int, raw: bytes) -> bytes:
    return varint(number << 3 | 1) + raw


def any_value(value: Any) -> bytes:
    if isinstance(value, bool):
        return field_varint(2, int(value))
    if isinstance(value, int):
        return field_varint(3, value)
    if isinstance(value, float):
        return field_fixed64(4, struct.pack("<d", value))
    if isinstance(value, list):
        return field(5, b"".join(field(1, any_value(v)) for v in value))
    return field(1, str(value).encode())


def attributes(number: int, values: Mapping[str, Any]) -> bytes:
    return b"".join(field(number, field(1, k.encode()) + field(2, any_value(v)))
                    for k, v in values.items())


def number_point(value: float | int, attrs: Mapping[str, Any] | None = None,
                 time_ns: int = 1_700_000_000_000_000_000) -> bytes:
    raw = (field_fixed64(6, struct.pack("<q", value)) if isinstance(value, int)
           else field_fixed64(4, struct.pack("<d", value)))
    return field_fixed64(3, struct.pack("<Q", time_ns)) + raw + attributes(7, attrs or {})


def metric(name: str, points: Sequence[bytes], kind: str = "gauge", unit: str = "1",
           monotonic: bool = True) -> bytes:
    body = b"".join(field(1, p) for p in points)
    if kind == "sum":
        body += field_varint(2, 1) + field_varint(3, int(monotonic))  # delta temporality
        return field(1, name.encode()) + field(3, unit.encode()) + field(7, body)
    return field(1, name.encode()) + field(3, unit.encode()) + field(5, body)


def metrics_data(metrics: Sequence[bytes], resource: Mapping[str, Any] | None = None,
                 scope: tuple[str, str] = ("test-client", "1.0")) -> bytes:
    scope_msg = field(1, scope[0].encode()) + field(2, scope[1].encode())
    scope_metrics = field(1, scope_msg) + b"".join(field(2, m) for m in metrics)
    resource_metrics = field(1, attributes(1, resource or {})) + field(2, scope_metrics)
    return field(1, resource_metrics)
