"""Optional compiled decoding: decode plans for ``_decode_accel.pyx`` from the construct tree.

Theory of operation: ``structs.Codec`` compiles each (message, version) into a generated
Python reader. When the compiled extension ``_decode_accel`` is importable (``make accel``
builds it; ``KAFKA_PROTOCOL_CODEC_PURE=1`` in the environment at import ignores it), the codec
also gets a plan from ``plan_for``: the same KStruct tree translated member by member into the
extension's ``Op``/``StructPlan`` objects. Decoding runs the plan first; the plan answers only
for input it reads cleanly and returns None otherwise, and then the generated reader runs, so
errors and every edge case stay the generated reader's. Tests compare both on every message.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka_protocol_codec import structs
from kafka_protocol_codec.codec_runtime import ZERO_UUID, Struct
from kafka_protocol_codec.constructs import (
    Fixed,
    KArray,
    KBytes,
    KString,
    KStruct,
    NullableStruct,
    Uuid,
)
from kafka_protocol_codec.native import import_native


def _load() -> Any:
    module: Any = import_native("_decode_accel")
    if module is None:
        return None
    module.set_uuid_type(uuid.UUID, uuid.SafeUUID.unknown)
    structs.read_plan = module.read_plan
    structs.decode_plan = module.decode_plan
    return module


# The extension module, or None (pure Python decoding only). Read when a codec is built.
native: Any = _load()

_DEFAULT_NAMES = {"Struct": Struct, "ZERO_UUID": ZERO_UUID}


def _default_op(native_module: Any, key: str, source: str) -> Any:
    """An absent member's default: shared when immutable, else made fresh per decode (the
    generated reader builds a new list or Struct each time too)."""
    if source.startswith(("Struct(", "[")):
        factory = eval(f"lambda: {source}", dict(_DEFAULT_NAMES))  # the schema default source
        return native_module.Op("factory", key, default=factory)
    return native_module.Op("default", key, default=eval(source, dict(_DEFAULT_NAMES)))


def _op(native_module: Any, con: Any, key: str | None, fill: bool) -> Any:
    op = native_module.Op
    if isinstance(con, Fixed):
        return op(con.type_name, key)
    if isinstance(con, Uuid):
        return op("uuid", key)
    if isinstance(con, KString):
        return op("string", key, compact=con.compact, nullable=con.nullable)
    if isinstance(con, KBytes):
        kind = "records" if con.zero_copy else "bytes"
        return op(kind, key, compact=con.compact, nullable=con.nullable)
    if isinstance(con, KArray):
        element = _op(native_module, con.element, None, fill)
        return op("array", key, compact=con.compact, nullable=con.nullable, element=element)
    if isinstance(con, NullableStruct):
        return op("nullable_struct", key, plan=_plan(native_module, con.inner, fill))
    if isinstance(con, KStruct):
        return op("struct", key, plan=_plan(native_module, con, fill))
    raise TypeError(f"no decode plan for {type(con).__name__}")


def _plan(native_module: Any, kstruct: KStruct, fill: bool) -> Any:
    ops = []
    tags = {}
    for member in kstruct.members:
        if member.con is None or member.tag is not None:
            ops.append(_default_op(native_module, member.name, member.default_src))
            if member.con is not None:
                tags[member.tag] = _op(native_module, member.con, member.name, fill)
        else:
            ops.append(_op(native_module, member.con, member.name, fill))
    return native_module.StructPlan(Struct, tuple(ops), kstruct.flexible, tags, fill)


def plan_for(kstruct: KStruct, *, fill_entries: bool = True) -> Any:
    """The compiled plan of a message's construct, or None without the extension.
    fill_entries=False builds every Struct by PyDict_SetItem (the fallback), for tests."""
    if native is None:
        return None
    return _plan(native, kstruct, fill_entries)
