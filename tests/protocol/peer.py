"""An adapter to kafka-python 3's protocol classes, the independent encoder that the golden
tests (tests/protocol/test_golden.py) and the benchmark (bench/codec.py) compare against.

`peer_object(key, kind, version, value)` builds the kafka-python object holding the same
logical content as one of our full values; `from_peer` converts a kafka-python object back.
Fields are matched by their letters (kafka-python writes ISRNodes as i_s_r_nodes, we write
isr_nodes); kafka-python decodes the zero UUID as None, omits tagged structs as None, and
turns the authorized-operations int32 fields into sets of bits.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from kafka_protocol_codec import api
from kafka_protocol_codec.codec_runtime import ZERO_UUID
from kafka_protocol_codec.schema import F, in_range
from kafka_protocol_codec.structs import default_value

with warnings.catch_warnings():  # kafka-python loads its schemas with deprecated importlib APIs
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol import admin, consumer, metadata, producer, sasl
    from kafka.protocol.api_message import ApiMessage
    from kafka.protocol.schemas.fields.codecs import BitField


def _peer_classes() -> dict[tuple[int, str], type[ApiMessage]]:
    found: dict[tuple[int, str], type[ApiMessage]] = {}
    for module in (admin, consumer, metadata, producer, sasl):
        for name in dir(module):
            obj = getattr(module, name)
            if (
                isinstance(obj, type)
                and issubclass(obj, ApiMessage)
                and obj is not ApiMessage
                and getattr(obj, "_json", None) is not None
            ):
                found[(obj.API_KEY, obj.type)] = obj
    return found


PEER = _peer_classes()


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def _match(name: str, candidates: dict[str, Any]) -> Any:
    """Find a field by letters, or by suffix: kafka-python renames
    topic_authorized_operations / cluster_authorized_operations to authorized_operations."""
    key = _norm(name)
    if key in candidates:
        return candidates[key]
    found = [v for k, v in candidates.items() if k.endswith(key) or key.endswith(k)]
    return found[0] if len(found) == 1 else None


# kafka-python patches the authorized-operations int32 fields into a "bitfield" type: a set of
# bit positions, None for the "not requested" value INT32_MIN ({31}).
INT32_MIN = -(2**31)


def _to_bits(value: int) -> set[int] | None:
    if value == INT32_MIN:
        return None
    return {i for i in range(32) if (value & 0xFFFFFFFF) >> i & 1}


def _from_bits(bits: set[int] | None) -> int:
    if bits is None:
        return INT32_MIN
    raw = sum(1 << b for b in bits)
    return raw - (1 << 32) if raw >= 1 << 31 else raw


def _is_bitfield(peer_field: Any) -> bool:
    return getattr(peer_field, "_type", None) is BitField


def _present(f: F, version: int, flexible: bool) -> bool:
    if not in_range(version, f.versions):
        return False
    return f.tag is None or (flexible and in_range(version, f.tagged))


def to_peer_kwargs(
    peer_struct: Any, fields: tuple[F, ...], value: Mapping[str, Any], version: int, flexible: bool
) -> dict[str, Any]:
    """kafka-python constructor arguments for one of our (full) struct values."""
    ours = {_norm(f.name): f for f in fields}
    kwargs: dict[str, Any] = {}
    for peer_name, peer_field in peer_struct.fields.items():
        f = _match(peer_name, ours)
        if f is None or not _present(f, version, flexible):
            continue
        v = value[f.name]
        if f.tag is not None and v == default_value(f):
            continue  # both sides omit tagged fields at their default
        if f.is_struct and v is not None:
            cls = peer_field.data_class
            if f.is_array:
                v = [
                    cls(
                        version=version,
                        **to_peer_kwargs(peer_field, f.fields, e, version, flexible),
                    )
                    for e in v
                ]
            else:
                v = cls(
                    version=version, **to_peer_kwargs(peer_field, f.fields, v, version, flexible)
                )
        elif _is_bitfield(peer_field):
            v = _to_bits(v)
        kwargs[peer_name] = v
    return kwargs


def from_peer(obj: Any, fields: tuple[F, ...], version: int, flexible: bool) -> dict[str, Any]:
    """One of our full struct values from a kafka-python decoded object."""
    peer_names = {_norm(n): n for n in obj.fields}
    out: dict[str, Any] = {}
    for f in fields:
        peer_name = _match(f.name, peer_names)
        if peer_name is None or not _present(f, version, flexible):
            out[f.name] = default_value(f)
            continue
        v = getattr(obj, peer_name)
        if _is_bitfield(obj.fields[peer_name]):
            v = _from_bits(v)
        elif f.tag is not None and v is None and not f.default_null:
            v = default_value(f)  # kafka-python's default for tagged structs is None
        elif f.is_struct and v is not None:
            if f.is_array:
                v = [from_peer(e, f.fields, version, flexible) for e in v]
            else:
                v = from_peer(v, f.fields, version, flexible)
        elif f.element_type == "uuid":
            if f.is_array:
                v = None if v is None else [ZERO_UUID if u is None else u for u in v]
            elif v is None:
                v = ZERO_UUID
        elif isinstance(v, (memoryview, bytearray)):
            v = bytes(v)
        out[f.name] = v
    return out


def peer_object(key: int, kind: str, version: int, value: Mapping[str, Any]) -> ApiMessage:
    cls = PEER[(key, kind)]
    message = api(key).request if kind == "request" else api(key).response
    flexible = in_range(version, message.flexible)
    return cls(
        version=version, **to_peer_kwargs(cls._struct, message.fields, value, version, flexible)
    )
