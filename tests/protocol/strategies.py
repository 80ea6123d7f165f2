"""Hypothesis strategies for any message definition at any version.

`message_values(message, version)` draws a dict holding every field of the message, the way
the codec decodes it: a random value for each field the version carries (tagged fields
included, in flexible versions), and exactly `default_value(field)` for every field it does
not carry, so that `codec.decode(codec.encode(x)) == x` must hold.

The rules mirror the schema language, not the codec's implementation: a field is on the wire
at version v when v is in its `versions` and, for a tagged field, the version is flexible and
in its `taggedVersions`; it may be null when v is in its `nullableVersions`; records fields
are always nullable.
"""

from __future__ import annotations

import uuid
from functools import cache
from typing import Any

from hypothesis import strategies as st
from kafka_protocol_codec.schema import F, Message, in_range
from kafka_protocol_codec.structs import default_value

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

# Text that encodes to UTF-8 (no lone surrogates). Mostly short; sometimes longer than 127
# bytes so compact lengths need a two-byte varint. Even the long ones stay far below the
# 32767-byte limit of legacy (int16-length) strings: 300 chars * 4 bytes.
_CHARS = st.characters(exclude_categories=("Cs",))
TEXT = st.one_of(
    st.text(_CHARS, max_size=12),
    st.text(_CHARS, min_size=128, max_size=300),
)
BINARY = st.one_of(st.binary(max_size=16), st.binary(min_size=128, max_size=300))
RECORDS = st.one_of(st.none(), st.binary(max_size=64))


def field_on_wire(f: F, version: int, flexible: bool) -> bool:
    """Whether a field is carried at this version (tagged ones only in flexible versions)."""
    if not in_range(version, f.versions):
        return False
    if f.tag is not None:
        return flexible and in_range(version, f.tagged)
    return True


def _primitive(type_name: str) -> st.SearchStrategy[Any]:
    if type_name in INT_RANGES:
        low, high = INT_RANGES[type_name]
        return st.integers(low, high)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        return st.floats(allow_nan=False, allow_infinity=False)
    if type_name == "string":
        return TEXT
    if type_name == "bytes":
        return BINARY
    if type_name == "uuid":
        return st.uuids(allow_nil=True)
    if type_name == "records":
        return RECORDS
    raise ValueError(f"unknown primitive {type_name}")


def field_values(f: F, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    """Values of one field that is on the wire at this version."""
    nullable = in_range(version, f.nullable)
    if f.is_struct:
        element: st.SearchStrategy[Any] = struct_values(f.fields, version, flexible)
    else:
        element = _primitive(f.element_type)
    if f.is_array:
        strategy: st.SearchStrategy[Any] = st.lists(element, max_size=3)
    else:
        strategy = element
    if nullable and f.type != "records":  # records already include None
        strategy = st.one_of(strategy, st.none())
    return strategy


def struct_values(
    fields: tuple[F, ...], version: int, flexible: bool
) -> st.SearchStrategy[dict[str, Any]]:
    return _struct_values(fields, version, flexible)


@cache
def _struct_values(
    fields: tuple[F, ...], version: int, flexible: bool
) -> st.SearchStrategy[dict[str, Any]]:
    wire = {
        f.name: field_values(f, version, flexible)
        for f in fields
        if field_on_wire(f, version, flexible)
    }
    absent = [f for f in fields if not field_on_wire(f, version, flexible)]

    def complete(drawn: dict[str, Any]) -> dict[str, Any]:
        # Defaults are built fresh each time: they may be mutable (lists, structs).
        out = {}
        for f in fields:
            out[f.name] = drawn[f.name] if f.name in drawn else default_value(f)
        return out

    if not absent:
        return st.fixed_dictionaries(wire)
    return st.fixed_dictionaries(wire).map(complete)


def message_values(message: Message, version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Values of a whole message at one version (every field of the schema is a key)."""
    flexible = in_range(version, message.flexible)
    return struct_values(message.fields, version, flexible)


# ------------------------------------------------------------------ deterministic values

_SAMPLE = {
    "bool": True,
    "int8": 7,
    "int16": 300,
    "uint16": 65000,
    "int32": 70000,
    "uint32": 3_000_000_000,
    "int64": 1 << 40,
    "float64": 1.5,
    "string": "topic-a",
    "bytes": b"\x00\x01\x02",
    "records": b"\x00" * 12 + b"\x00\x00\x00\x30" + b"r" * 48,
}
_SAMPLE_UUID = uuid.UUID("4a1c3f8e-2b7d-4e51-9c0a-6f3e2d1b0a99")


def sample_value(message: Message, version: int, elements: int = 2) -> dict[str, Any]:
    """One deterministic value with every carried field set to a non-default value (tagged
    fields included, so their section is non-empty) and arrays of `elements` entries."""
    flexible = in_range(version, message.flexible)
    return _sample_struct(message.fields, version, flexible, elements)


def _sample_struct(
    fields: tuple[F, ...], version: int, flexible: bool, elements: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if not field_on_wire(f, version, flexible):
            out[f.name] = default_value(f)
        elif f.is_array:
            out[f.name] = [_sample_one(f, version, flexible, elements) for _ in range(elements)]
        else:
            out[f.name] = _sample_one(f, version, flexible, elements)
    return out


def _sample_one(f: F, version: int, flexible: bool, elements: int) -> Any:
    if f.is_struct:
        return _sample_struct(f.fields, version, flexible, elements)
    if f.element_type == "uuid":
        return _SAMPLE_UUID
    return _SAMPLE[f.element_type]
