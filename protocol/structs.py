"""Per-(message, version) construct structs, built from definitions and compiled on demand.

Theory of operation: a schema.Message is version-agnostic data. `codec_for(message, version)`
selects the fields present at that version and builds a tree of construct `Construct`
subclasses for Kafka's primitives (constructs.py: fixed-width ints, compact/legacy strings
and bytes, UUIDs, unsigned varints, nullable and compact arrays, tagged-field sections). The
tree emits Python source through construct's code generator (constructs.generate_module,
the emitters construct's `Construct.compile()` runs too), so a whole message becomes a handful
of plain functions with no per-field interpretation, calling the helpers of codec_runtime.py.
Codecs are cached per (message object, version): an extended message (extensions.py) is a
distinct object with the same name, and gets its own codec.

Everything is built on first use of a (message, version), never at import. The compiled
code, its entry points and the decode plan's description are kept on disk (code_cache.py),
so a codec a machine has built before is loaded without building the construct tree, and a
process whose codecs all come from the cache never imports construct; `Codec.construct`
builds the tree when something asks for it.

Decoded messages are `Struct` objects (codec_runtime.py): dicts with attribute access. Every field of the schema
is present after decoding; fields the version does not carry hold their defaults, as in
Kafka's own generated classes. Encoding takes any mapping and fills missing keys with defaults;
in strict mode (strict.py) a key that no version of the message knows is an error instead.

Bad input never escapes as anything but CodecError, and nothing is allocated by a length or
count before the bytes are known to be there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec import code_cache, strict
from kafka_protocol_codec.codec_runtime import ZERO_UUID, Reader, Struct, rt_end_check
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.schema import PRIMITIVE_TYPES, F, Message, in_range

if TYPE_CHECKING:  # constructs.py (and construct) are imported when a tree is built
    from kafka_protocol_codec.constructs import KafkaConstruct, KStruct


def _literal_default(f: F) -> str:
    """Python source for a field's default, as the generated code fills it in."""
    if f.is_array:
        return "None" if f.default_null else "[]"
    if f.is_struct:
        if f.default_null:
            return "None"
        # An inline literal: a fresh object per use, and ~6x cheaper than a factory call.
        items = ", ".join(f"{m.name!r}: {_literal_default(m)}" for m in f.fields)
        return f"Struct({{{items}}})"
    if f.type == "uuid":
        return "ZERO_UUID"
    if f.default_null or f.type == "records":
        return "None"
    return repr(f.default)


_LOCK = threading.RLock()


def default_value(f: F) -> Any:
    """The Python default of one field, as decoding fills it for versions that lack it."""
    if f.is_array:
        return None if f.default_null else []
    if f.is_struct:
        return None if f.default_null else default_struct(f.fields)
    if f.type == "uuid":
        return ZERO_UUID
    if f.default_null or f.type == "records":
        return None
    return f.default


def default_struct(fields: tuple[F, ...]) -> Struct:
    return Struct({f.name: default_value(f) for f in fields})


def build_struct(name: str, fields: tuple[F, ...], version: int, flexible: bool) -> KStruct:
    """The (uncompiled) construct for one struct at one version."""
    from kafka_protocol_codec.constructs import KStruct, Member

    members = []
    for f in fields:
        present = in_range(version, f.versions)
        tag = None
        if f.tag is not None:
            if flexible and in_range(version, f.tagged):
                tag = f.tag
            else:
                present = False
        con = _field_construct(f, version, flexible) if present else None
        members.append(Member(f.name, con, _literal_default(f), tag))
    return KStruct(name, members, flexible)


def _field_construct(f: F, version: int, flexible: bool) -> KafkaConstruct:
    from kafka_protocol_codec.constructs import KArray, NullableStruct, primitive

    compact = flexible if f.flexible is True else in_range(version, f.flexible)  # type: ignore[arg-type]
    nullable = in_range(version, f.nullable)
    element = f.element_type
    inner: KafkaConstruct
    if element in PRIMITIVE_TYPES:
        inner = primitive(element, compact, nullable and not f.is_array)
    else:
        struct_ = build_struct(element, f.fields, version, flexible)
        inner = NullableStruct(struct_) if (not f.is_array and nullable) else struct_
    if f.is_array:
        return KArray(inner, compact, nullable)
    return inner


class Codec:
    """Encode and decode one message at one version through its generated code."""

    __slots__ = ("_build", "_construct", "_plan", "_read", "message", "version")

    def __init__(self, message: Message, version: int) -> None:
        self.message = message
        self.version = version
        self._construct: KStruct | None = None
        from kafka_protocol_codec import accel  # loads the extension, on the first codec

        cached = code_cache.load(message, version)
        loaded = _run_cached(cached) if cached is not None else None
        if loaded is None:  # build the construct tree and have it generate the code
            from kafka_protocol_codec.constructs import generate_module

            source, parse_name, build_name = generate_module(self.construct)
            code = compile(source, f"<{message.name} v{version}>", "exec")
            cached = code_cache.CachedCodec(code, parse_name, build_name,
                                            accel.describe(self.construct))
            loaded = _run(cached)
            code_cache.store(message, version, cached)
        # Decoding calls the message's generated (buf, pos) parser, encoding its
        # (mapping, out) builder: no stream wrapper around either. The compiled decode plan
        # (accel.py), when the extension is built, reads what is well formed and leaves
        # everything else to the generated reader.
        self._read, self._build, self._plan = loaded

    @property
    def construct(self) -> KStruct:
        """The construct tree of this message at this version, built on first use (a codec
        loaded from the cache runs without it)."""
        if self._construct is None:
            flexible = in_range(self.version, self.message.flexible)
            self._construct = build_struct(self.message.name, self.message.fields,
                                           self.version, flexible)
        return self._construct

    def decode(self, data: bytes | bytearray | memoryview) -> Struct:
        """The message in `data`; a bytearray is read in place by the compiled plan (its
        records fields are then writable views of it), copied for the Python reader."""
        buf: bytes | bytearray = data if type(data) is bytes or type(data) is bytearray \
            else bytes(data)
        plan = self._plan
        if plan is not None:
            planned = decode_plan(plan, buf)
            if planned is not None:
                return planned
        if type(buf) is not bytes:
            buf = bytes(buf)
        try:
            result, pos = self._read(buf, 0)
            if pos > len(buf):
                rt_end_check(buf, pos)
            return result
        except CodecError:
            raise
        except Exception as exc:
            raise CodecError(f"{self.message.name} v{self.version}: {exc!r}") from exc

    def decode_from(self, reader: Reader) -> Struct:
        """Decode at the reader's position and advance it past the message."""
        plan = self._plan
        if plan is not None:
            found = read_plan(plan, reader.buf, reader.pos)
            if found is not None:
                reader.pos = found[1]
                return found[0]
        try:
            buf = reader.as_bytes()
            result, pos = self._read(buf, reader.pos)
            rt_end_check(buf, pos)
        except CodecError:
            raise
        except Exception as exc:
            raise CodecError(f"{self.message.name} v{self.version}: {exc!r}") from exc
        reader.pos = pos
        return result

    def encode(self, value: Mapping[str, Any]) -> bytearray:
        """The encoding as a bytearray (a copy to bytes would cost as much as the encode
        itself for large record-carrying messages)."""
        out = bytearray()
        self.encode_into(value, out)
        return out

    def encode_into(self, value: Mapping[str, Any], out: bytearray) -> None:
        """Append the encoding of value to out (in strict mode, after checking its keys)."""
        if strict.enabled:
            strict.check(self.message, self.version, value)
        try:
            self._build(value, out)
        except CodecError:
            raise
        except Exception as exc:
            raise CodecError(f"cannot encode {self.message.name} v{self.version}: {exc!r}") from exc


_Loaded = tuple[Callable[[bytes, int], tuple[Struct, int]],
                Callable[[Mapping[str, Any], bytearray], None], Any]


def _run(cached: code_cache.CachedCodec) -> _Loaded:
    """Run a codec's compiled module: its parser and builder, and its decode plan."""
    from kafka_protocol_codec import accel

    namespace: dict[str, Any] = {"__name__": "kafka_protocol_codec.generated_codec"}
    exec(cached.code, namespace)
    return (namespace[cached.parse_name], namespace[cached.build_name],
            accel.plan_from(cached.plan))


def _run_cached(cached: code_cache.CachedCodec) -> _Loaded | None:
    """`_run` for a cache entry: None when it does not run (a damaged entry is rebuilt)."""
    try:
        return _run(cached)
    except Exception:
        return None


def _no_plans(plan: Any, buf: bytes | bytearray, pos: int) -> tuple[Struct, int] | None:
    raise NotImplementedError("no compiled decode plans without the extension")


def _no_plans_at_start(plan: Any, buf: bytes | bytearray) -> Struct | None:
    raise NotImplementedError("no compiled decode plans without the extension")


# Run a compiled decode plan (at a position; at the start of the buffer, without the position
# back): accel.py sets them to the extension's readers when it loads it.
read_plan: Callable[[Any, bytes | bytearray, int], tuple[Struct, int] | None] = _no_plans
decode_plan: Callable[[Any, bytes | bytearray], Struct | None] = _no_plans_at_start


# Keyed by id(message): the Codec holds its message, so a cached id is never reused.
_CODECS: dict[tuple[int, int], Codec] = {}


def codec_for(message: Message, version: int) -> Codec:
    """The cached compiled codec for a message at a version (CodecError if not valid)."""
    key = (id(message), version)
    codec = _CODECS.get(key)
    if codec is None:
        if version not in message.versions:
            raise CodecError(f"{message.name} has no version {version}")
        with _LOCK:
            codec = _CODECS.get(key)
            if codec is None:
                codec = Codec(message, version)
                _CODECS[key] = codec
    return codec
