"""Decoding of the metrics a client pushes (KIP-714): OTLP `MetricsData` protobuf.

Why a decoder of our own rather than the `opentelemetry-proto` package: that package is
generated code pinned to narrow `protobuf` runtime versions (a C extension of a few MB), and
the broker needs only to read one message family, never to write it. The protobuf wire
format is small (varints, fixed 32/64-bit words, length-delimited fields) and the part of
the OTLP schema read here (metrics/v1, common/v1, resource/v1; field numbers as in
opentelemetry-proto) fits in this module, which keeps the broker's dependencies as they are.

Theory of operation: `parse_fields` splits one message into (field number, wire type,
value) triples; the `_metric`/`_data_point`/`_any_value` readers pick the fields they know
and ignore the others, as protobuf readers do. Everything a client sends is untrusted, so
every read is bounded: a truncated varint or a length that runs past its message raises
OtlpError, nesting of attribute values is capped at MAX_DEPTH, and the number of metrics and
data points at MAX_ITEMS. What comes out is plain frozen dataclasses: each Metric carries
its resource attributes and instrumentation scope, so a reader need not walk the nesting.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TypeAlias

AttributeValue: TypeAlias = (
    "str | bool | int | float | bytes | list[AttributeValue] | dict[str, AttributeValue] | None"
)

MAX_DEPTH = 8  # nesting of array / key-value list attribute values
MAX_ITEMS = 100_000  # metrics plus data points in one payload

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
_DOUBLE = struct.Struct("<d")
_INT64 = struct.Struct("<q")
_UINT64 = struct.Struct("<Q")

# Metric.data oneof: field number -> metric type
METRIC_TYPES = {5: "gauge", 7: "sum", 9: "histogram", 10: "exponential_histogram",
                11: "summary"}
TEMPORALITY = {0: "unspecified", 1: "delta", 2: "cumulative"}

Field: TypeAlias = tuple[int, int, int | bytes]


class OtlpError(ValueError):
    """The payload is not a well-formed OTLP MetricsData message."""


@dataclass(frozen=True)
class DataPoint:
    """One data point: a number (gauge, sum) or a distribution's count and sum."""

    attributes: dict[str, AttributeValue]
    value: int | float | None
    time_unix_nano: int = 0
    start_time_unix_nano: int = 0
    count: int | None = None  # histogram and summary points
    sum: float | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"attributes": json_attributes(self.attributes),
                                  "value": self.value, "time_unix_nano": self.time_unix_nano}
        if self.start_time_unix_nano:
            out["start_time_unix_nano"] = self.start_time_unix_nano
        if self.count is not None:
            out["count"] = self.count
            out["sum"] = self.sum
        return out


@dataclass(frozen=True)
class Metric:
    name: str
    type: str  # gauge, sum, histogram, exponential_histogram, summary or unknown
    unit: str
    description: str
    data_points: tuple[DataPoint, ...]
    temporality: str | None = None  # sums and histograms: delta or cumulative
    monotonic: bool | None = None  # sums
    resource: tuple[tuple[str, AttributeValue], ...] = ()
    scope_name: str = ""
    scope_version: str = ""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "type": self.type, "unit": self.unit,
                                  "data_points": [p.to_json() for p in self.data_points]}
        if self.temporality is not None:
            out["temporality"] = self.temporality
        if self.monotonic is not None:
            out["monotonic"] = self.monotonic
        return out


@dataclass(frozen=True)
class MetricsData:
    """A decoded push: its metrics, and the resources and scopes they came under."""

    metrics: tuple[Metric, ...]
    resource_attributes: dict[str, AttributeValue]  # merged over the payload's resources
    scopes: tuple[tuple[str, str], ...]  # (name, version) of each instrumentation scope

    def names(self) -> list[str]:
        return [m.name for m in self.metrics]


# -- wire format ------------------------------------------------------------------------------

def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise OtlpError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise OtlpError("varint longer than 10 bytes")


def parse_fields(data: bytes) -> list[Field]:
    """The (field number, wire type, value) triples of one message, in order."""
    fields: list[Field] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise OtlpError("field number 0")
        value: int | bytes
        if wire == VARINT:
            value, pos = _varint(data, pos)
        elif wire == FIXED64 or wire == FIXED32:
            size = 8 if wire == FIXED64 else 4
            if pos + size > len(data):
                raise OtlpError("truncated fixed-width field")
            value = data[pos:pos + size]
            pos += size
        elif wire == LEN:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise OtlpError(f"field {number}: length {length} runs past the message")
            value = data[pos:pos + length]
            pos += length
        else:
            raise OtlpError(f"unsupported wire type {wire}")
        fields.append((number, wire, value))
    return fields


def _bytes(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise OtlpError("expected a length-delimited field")
    return value


def _text(value: int | bytes) -> str:
    try:
        return _bytes(value).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OtlpError(f"string is not UTF-8: {exc}") from None


def _int(value: int | bytes) -> int:
    if not isinstance(value, int):
        raise OtlpError("expected a varint field")
    return value


def _double(value: int | bytes) -> float:
    if not isinstance(value, bytes) or len(value) != 8:
        raise OtlpError("expected a 64-bit field")
    return float(_DOUBLE.unpack(value)[0])


def _fixed(value: int | bytes, signed: bool = False) -> int:
    if not isinstance(value, bytes) or len(value) != 8:
        raise OtlpError("expected a 64-bit field")
    return int((_INT64 if signed else _UINT64).unpack(value)[0])


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


# -- OTLP messages ----------------------------------------------------------------------------

def _any_value(data: bytes, depth: int) -> AttributeValue:
    if depth > MAX_DEPTH:
        raise OtlpError(f"attribute values nested deeper than {MAX_DEPTH}")
    result: AttributeValue = None
    for number, _, value in parse_fields(data):
        if number == 1:
            result = _text(value)
        elif number == 2:
            result = bool(_int(value))
        elif number == 3:
            result = _signed64(_int(value))
        elif number == 4:
            result = _double(value)
        elif number == 5:
            result = [_any_value(_bytes(v), depth + 1)
                      for n, _, v in parse_fields(_bytes(value)) if n == 1]
        elif number == 6:
            result = _key_values(_bytes(value), depth + 1)
        elif number == 7:
            result = _bytes(value)
    return result


def _key_values(data: bytes, depth: int) -> dict[str, AttributeValue]:
    """A KeyValueList's (or any message's field-1 KeyValue list's) entries."""
    return dict(_key_value(_bytes(v), depth) for n, _, v in parse_fields(data) if n == 1)


def _key_value(data: bytes, depth: int) -> tuple[str, AttributeValue]:
    key, value = "", None
    for number, _, raw in parse_fields(data):
        if number == 1:
            key = _text(raw)
        elif number == 2:
            value = _any_value(_bytes(raw), depth)
    return key, value


def _attributes(fields: list[Field], number: int) -> dict[str, AttributeValue]:
    return dict(_key_value(_bytes(v), 0) for n, _, v in fields if n == number)


def _number_point(data: bytes) -> DataPoint:
    fields = parse_fields(data)
    value: int | float | None = None
    start = time = 0
    for number, _, raw in fields:
        if number == 2:
            start = _fixed(raw)
        elif number == 3:
            time = _fixed(raw)
        elif number == 4:
            value = _double(raw)
        elif number == 6:
            value = _fixed(raw, signed=True)
    return DataPoint(_attributes(fields, 7), value, time, start)


def _distribution_point(data: bytes, attributes_field: int) -> DataPoint:
    """A histogram, exponential histogram or summary point: its count and sum."""
    fields = parse_fields(data)
    start = time = 0
    count: int | None = None
    total: float | None = None
    for number, _, raw in fields:
        if number == 2:
            start = _fixed(raw)
        elif number == 3:
            time = _fixed(raw)
        elif number == 4:
            count = _fixed(raw)
        elif number == 5:
            total = _double(raw)
    return DataPoint(_attributes(fields, attributes_field), None, time, start, count, total)


# where each metric type's points keep their attributes
_POINT_ATTRIBUTES = {"histogram": 9, "exponential_histogram": 1, "summary": 7}


def _metric(data: bytes, resource: tuple[tuple[str, AttributeValue], ...],
            scope: tuple[str, str], budget: list[int]) -> Metric:
    name = unit = description = ""
    kind = "unknown"
    points: list[DataPoint] = []
    temporality: str | None = None
    monotonic: bool | None = None
    for number, _, raw in parse_fields(data):
        if number == 1:
            name = _text(raw)
        elif number == 2:
            description = _text(raw)
        elif number == 3:
            unit = _text(raw)
        elif number in METRIC_TYPES:
            kind = METRIC_TYPES[number]
            for inner, _, value in parse_fields(_bytes(raw)):
                if inner == 1:
                    _spend(budget)
                    if kind in ("gauge", "sum"):
                        points.append(_number_point(_bytes(value)))
                    else:
                        points.append(_distribution_point(_bytes(value),
                                                          _POINT_ATTRIBUTES[kind]))
                elif inner == 2 and kind != "summary":
                    temporality = TEMPORALITY.get(_int(value), str(_int(value)))
                elif inner == 3 and kind == "sum":
                    monotonic = bool(_int(value))
    return Metric(name, kind, unit, description, tuple(points), temporality, monotonic,
                  resource, *scope)


def _spend(budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise OtlpError(f"more than {MAX_ITEMS} metrics and data points")


def decode_metrics_data(data: bytes) -> MetricsData:
    """Decode an (uncompressed) OTLP MetricsData message; OtlpError if malformed."""
    metrics: list[Metric] = []
    merged: dict[str, AttributeValue] = {}
    scopes: list[tuple[str, str]] = []
    budget = [MAX_ITEMS]
    for number, _, raw in parse_fields(bytes(data)):
        if number != 1:
            continue
        resource: dict[str, AttributeValue] = {}
        scope_blocks: list[bytes] = []
        for inner, _, value in parse_fields(_bytes(raw)):
            if inner == 1:
                resource = _attributes(parse_fields(_bytes(value)), 1)
            elif inner == 2:
                scope_blocks.append(_bytes(value))
        merged.update(resource)
        frozen = tuple(resource.items())
        for block in scope_blocks:
            scope = ("", "")
            metric_blocks: list[bytes] = []
            for inner, _, value in parse_fields(block):
                if inner == 1:
                    scope_fields = parse_fields(_bytes(value))
                    names = [_text(v) for n, _, v in scope_fields if n == 1]
                    versions = [_text(v) for n, _, v in scope_fields if n == 2]
                    scope = (names[-1] if names else "", versions[-1] if versions else "")
                elif inner == 2:
                    metric_blocks.append(_bytes(value))
            scopes.append(scope)
            for metric in metric_blocks:
                _spend(budget)
                metrics.append(_metric(metric, frozen, scope, budget))
    return MetricsData(tuple(metrics), merged, tuple(scopes))


def json_attributes(values: dict[str, AttributeValue]) -> dict[str, object]:
    """Attributes as JSON-ready values (bytes as hex)."""
    return {key: _json_value(value) for key, value in values.items()}


def _json_value(value: AttributeValue) -> object:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return json_attributes(value)
    return value
