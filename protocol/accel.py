"""Optional compiled decoding: decode plans for ``_decode_accel.pyx`` from the construct tree.

Theory of operation: ``structs.Codec`` compiles each (message, version) into a generated
Python reader. When the compiled extension ``_decode_accel`` is importable (``make accel``
builds it; ``KAFKA_PROTOCOL_CODEC_PURE=1`` in the environment at import ignores it), the codec
also gets a plan: the same KStruct tree translated member by member into the extension's
``Op``/``StructPlan`` objects. Decoding runs the plan first; the plan answers only for input it
reads cleanly and returns None otherwise, and then the generated reader runs, so errors and
every edge case stay the generated reader's. Tests compare both on every message.

The translation has two steps: ``describe`` reads the construct tree into a description made
of tuples, strings, numbers and None (so the codec cache, code_cache.py, keeps it beside the
generated code), and ``plan_from`` makes the extension's objects from a description. A codec
loaded from the cache builds its plan from the stored description, without the construct tree
and without importing construct.

The extension also makes the buffers large frames are received into (``frame_buffer``, set as
``framing.new_frame_buffer``): a bytearray left unzeroed, since every byte of it is received
before the frame is handed out.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka_protocol_codec import framing, structs
from kafka_protocol_codec.codec_runtime import ZERO_UUID, Struct
from kafka_protocol_codec.native import import_native

# A member's description: (kind, key, compact, nullable, element, plan, default source).
# kind is a fixed-width type name, "uuid", "string", "bytes", "records", "array",
# "nullable_struct", "struct", or "absent" (a member the version does not carry on the wire:
# only its default source is set). element is an array's element description, plan a
# struct's. A struct's description: (member descriptions, flexible, ((tag, member), ...)).
OpDescription = tuple[str, str | None, bool, bool, Any, Any, str | None]
PlanDescription = tuple[tuple[OpDescription, ...], bool, tuple[tuple[int, OpDescription], ...]]


def _load() -> Any:
    module: Any = import_native("_decode_accel")
    if module is None or not hasattr(module, "frame_buffer"):
        # absent, or built from an older _decode_accel.pyx (whose plans read bytes only):
        # pure Python decoding until `make accel` rebuilds it
        return None
    module.set_uuid_type(uuid.UUID, uuid.SafeUUID.unknown)
    structs.read_plan = module.read_plan
    structs.decode_plan = module.decode_plan
    framing.new_frame_buffer = module.frame_buffer
    return module


# The extension module, or None (pure Python decoding only). Read when a codec is built.
native: Any = _load()

_DEFAULT_NAMES = {"Struct": Struct, "ZERO_UUID": ZERO_UUID}
# default source -> (shared value or factory, whether it is a factory); defaults repeat a lot
# ("0", "''", "[]") and eval compiles its string every time.
_DEFAULTS: dict[str, tuple[Any, bool]] = {}


def _describe_op(con: Any, key: str | None) -> OpDescription:
    from kafka_protocol_codec.constructs import (
        Fixed,
        KArray,
        KBytes,
        KString,
        KStruct,
        NullableStruct,
        Uuid,
    )

    if isinstance(con, Fixed):
        return (con.type_name, key, False, False, None, None, None)
    if isinstance(con, Uuid):
        return ("uuid", key, False, False, None, None, None)
    if isinstance(con, KString):
        return ("string", key, con.compact, con.nullable, None, None, None)
    if isinstance(con, KBytes):
        kind = "records" if con.zero_copy else "bytes"
        return (kind, key, con.compact, con.nullable, None, None, None)
    if isinstance(con, KArray):
        element = _describe_op(con.element, None)
        return ("array", key, con.compact, con.nullable, element, None, None)
    if isinstance(con, NullableStruct):
        return ("nullable_struct", key, False, False, None, describe(con.inner), None)
    if isinstance(con, KStruct):
        return ("struct", key, False, False, None, describe(con), None)
    raise TypeError(f"no decode plan for {type(con).__name__}")


def describe(kstruct: Any) -> PlanDescription:
    """The plan of a KStruct (constructs.py) as plain data."""
    ops: list[OpDescription] = []
    tags: list[tuple[int, OpDescription]] = []
    for member in kstruct.members:
        if member.con is None or member.tag is not None:
            ops.append(("absent", member.name, False, False, None, None, member.default_src))
            if member.con is not None:
                tags.append((member.tag, _describe_op(member.con, member.name)))
        else:
            ops.append(_describe_op(member.con, member.name))
    return (tuple(ops), bool(kstruct.flexible), tuple(tags))


def _default_op(native_module: Any, key: str | None, source: str) -> Any:
    """An absent member's default: shared when immutable, else made fresh per decode (the
    generated reader builds a new list or Struct each time too)."""
    known = _DEFAULTS.get(source)
    if known is None:
        if source.startswith(("Struct(", "[")):  # the schema default source
            known = (eval(f"lambda: {source}", dict(_DEFAULT_NAMES)), True)
        else:
            known = (eval(source, dict(_DEFAULT_NAMES)), False)
        _DEFAULTS[source] = known
    value, is_factory = known
    if is_factory:
        return native_module.Op("factory", key, default=value)
    return native_module.Op("default", key, default=value)


def _op(native_module: Any, described: OpDescription, fill: bool) -> Any:
    kind, key, compact, nullable, element, plan, default_src = described
    op = native_module.Op
    if kind == "absent":
        return _default_op(native_module, key, default_src or "None")
    if kind == "array":
        return op("array", key, compact=compact, nullable=nullable,
                  element=_op(native_module, element, fill))
    if kind in ("struct", "nullable_struct"):
        return op(kind, key, plan=_plan(native_module, plan, fill))
    return op(kind, key, compact=compact, nullable=nullable)


def _plan(native_module: Any, described: PlanDescription, fill: bool) -> Any:
    members, flexible, tagged = described
    ops = tuple(_op(native_module, member, fill) for member in members)
    tags = {tag: _op(native_module, member, fill) for tag, member in tagged}
    return native_module.StructPlan(Struct, ops, flexible, tags, fill)


def plan_from(described: PlanDescription, *, fill_entries: bool = True) -> Any:
    """The compiled plan of a described struct, or None without the extension.
    fill_entries=False builds every Struct by PyDict_SetItem (the fallback), for tests."""
    if native is None:
        return None
    return _plan(native, described, fill_entries)


def plan_for(kstruct: Any, *, fill_entries: bool = True) -> Any:
    """The compiled plan of a message's construct (a KStruct), or None without the
    extension."""
    if native is None:
        return None
    return plan_from(describe(kstruct), fill_entries=fill_entries)
