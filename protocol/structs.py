"""Per-(message, version) construct trees (the definition) and the codecs generated from them.

Theory of operation: a schema.Message is version-agnostic data. At `make codegen` time,
`build_struct` selects the fields a message carries at one version and builds a tree of
construct `Construct` subclasses for Kafka's primitives (constructs.py: fixed-width ints,
compact/legacy strings and bytes, UUIDs, unsigned varints, nullable and compact arrays,
tagged-field sections); the generator (codegen.py) has the tree emit straight-line Python
(the emitters construct's `Construct.compile()` runs too) into the message's generated module,
as a reader and a writer per version calling the helpers of codec_runtime.py.

At run time nothing is built: `codec_for(message, version)` looks the message's generated
module up (generated/ indexes it by API key, record type or name) and wraps that version's
reader and writer in a Codec, cached per (message object, version). construct is imported
only when a tree is built (the generator, tests, `Codec.construct`). A message extended by
registered extensions (extensions.py) gets the codecs compiled with them; the message exactly
as generated gets Kafka's own, which skip the extensions' tags.

Decoded messages are instances of the message's generated class (a `TypedStruct`,
codec_runtime.py: typed attributes in __slots__, readable as a mapping too). Every field of the
schema is present after decoding; fields the version does not carry hold their defaults, as in
Kafka's own generated classes. Encoding takes any mapping and fills missing
keys with defaults; in strict mode (strict.py) a key that no version of the message knows is
an error instead.

Bad input never escapes as anything but CodecError, and nothing is allocated by a length or
count before the bytes are known to be there.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec import extensions, strict
from kafka_protocol_codec.codec_runtime import ZERO_UUID, Reader, Struct, TypedStruct, rt_end_check
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.schema import PRIMITIVE_TYPES, F, Message, in_range

if TYPE_CHECKING:  # constructs.py (and construct) are imported when a tree is built
    from kafka_protocol_codec.constructs import KafkaConstruct, KStruct


def _literal_default(f: F, cls: str) -> str:
    """Python source for a field's default, as the generated code fills it in (`cls`: the
    class expression of the struct that has the field)."""
    if f.is_array:
        return "None" if f.default_null else "[]"
    if f.is_struct:
        if f.default_null:
            return "None"
        # An inline constructor call: a fresh object per use.
        inner = f"{cls}.{f.element_type}"
        items = ", ".join(_literal_default(m, inner) for m in f.fields)
        return f"{inner}({items})"
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
    """Every field at its default, as a Struct (a dict: what a handler fills in and returns)."""
    return Struct({f.name: default_value(f) for f in fields})


def build_struct(name: str, fields: tuple[F, ...], version: int, flexible: bool,
                 cls: str | None = None) -> KStruct:
    """The (uncompiled) construct for one struct at one version; its values are instances
    of the generated class `cls` (a Python expression; the name by default), whose nested
    structs' classes are attributes named by their struct types."""
    from kafka_protocol_codec.constructs import KStruct, Member

    cls = cls or name
    members = []
    for f in fields:
        present = in_range(version, f.versions)
        tag = None
        if f.tag is not None:
            if flexible and in_range(version, f.tagged):
                tag = f.tag
            else:
                present = False
        con = _field_construct(f, version, flexible, cls) if present else None
        members.append(Member(f.name, con, _literal_default(f, cls), tag,
                              f.is_struct and not f.is_array and not f.default_null))
    return KStruct(name, members, flexible, cls)


def _field_construct(f: F, version: int, flexible: bool, cls: str) -> KafkaConstruct:
    from kafka_protocol_codec.constructs import KArray, NullableStruct, primitive

    compact = flexible if f.flexible is True else in_range(version, f.flexible)  # type: ignore[arg-type]
    nullable = in_range(version, f.nullable)
    element = f.element_type
    inner: KafkaConstruct
    if element in PRIMITIVE_TYPES:
        inner = primitive(element, compact, nullable and not f.is_array)
    else:
        struct_ = build_struct(element, f.fields, version, flexible, f"{cls}.{element}")
        inner = NullableStruct(struct_) if (not f.is_array and nullable) else struct_
    if f.is_array:
        return KArray(inner, compact, nullable)
    return inner


_Read = Callable[[bytes, int], tuple[TypedStruct, int]]
_Write = Callable[[Mapping[str, Any], bytearray], None]


class Codec:
    """Encode and decode one message at one version through its generated functions."""

    __slots__ = ("_build", "_read", "message", "version")

    def __init__(self, message: Message, version: int, read: _Read, build: _Write) -> None:
        self.message = message
        self.version = version
        # Decoding calls the message's generated (buf, pos) reader, encoding its
        # (mapping, out) writer: no stream wrapper around either.
        self._read = read
        self._build = build

    @property
    def construct(self) -> KStruct:
        """The construct tree this codec was generated from (built on each call: for the
        generator and tests; importing construct)."""
        flexible = in_range(self.version, self.message.flexible)
        return build_struct(self.message.name, self.message.fields, self.version, flexible)

    def decode(self, data: bytes | bytearray | memoryview) -> TypedStruct:
        """The message in `data` (a bytearray or memoryview is copied to bytes first)."""
        buf = data if type(data) is bytes else bytes(data)
        try:
            result, pos = self._read(buf, 0)
            if pos > len(buf):
                rt_end_check(buf, pos)
            return result
        except CodecError:
            raise
        except Exception as exc:
            raise CodecError(f"{self.message.name} v{self.version}: {exc!r}") from exc

    def decode_from(self, reader: Reader) -> TypedStruct:
        """Decode at the reader's position and advance it past the message."""
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


def _generated_module(message: Message) -> tuple[Any, str]:
    """The generated module that holds a message's codecs, and the message's name there."""
    from kafka_protocol_codec import generated
    from kafka_protocol_codec.generated.data import DATA_TYPES
    from kafka_protocol_codec.generated.metadata_records import METADATA_RECORDS

    kind, key = message.kind, message.api_key
    if kind in ("request", "response") and key in generated.APIS:
        return importlib.import_module(f"{generated.__name__}.{generated.APIS[key][1]}"), \
            kind.upper()
    if kind == "metadata" and key in METADATA_RECORDS:
        return importlib.import_module(
            f"{generated.__name__}.metadata_records.{METADATA_RECORDS[key][1]}"), "RECORD"
    if kind == "header" and message.name in ("RequestHeader", "ResponseHeader"):
        return importlib.import_module(f"{generated.__name__}.headers"), \
            "REQUEST_HEADER" if message.name == "RequestHeader" else "RESPONSE_HEADER"
    if message.name in DATA_TYPES:
        return importlib.import_module(
            f"{generated.__name__}.data.{DATA_TYPES[message.name]}"), "MESSAGE"
    raise CodecError(f"no generated codec for {message.kind} {message.name}")


def _generated_codecs(message: Message) -> dict[int, tuple[_Read, _Write]]:
    """The version table of a message's generated codecs: Kafka's schema alone for the
    message as generated, its extended codecs for it with the compiled-in extensions."""
    module, var = _generated_module(message)
    kafka_only = getattr(module, f"{var}_KAFKA_CODECS", None)
    plain: Message = getattr(module, var)
    if message is plain or message == plain:
        table: dict[int, tuple[_Read, _Write]] = \
            kafka_only if kafka_only is not None else getattr(module, f"{var}_CODECS")
        return table
    kind = message.kind
    if message.api_key is not None and kind in extensions.KINDS and message == \
            extensions.apply(plain, message.api_key, kind):
        compiled: dict[int, tuple[_Read, _Write]] = getattr(module, f"{var}_CODECS")
        return compiled
    raise CodecError(f"{message.name} is not a generated message (an extension that is not "
                     f"compiled in? see extensions.py)")


# Keyed by id(message): the Codec holds its message, so a cached id is never reused.
_CODECS: dict[tuple[int, int], Codec] = {}


def codec_for(message: Message, version: int) -> Codec:
    """The codec of a message at a version (CodecError if not valid): its generated reader
    and writer, looked up once and cached."""
    key = (id(message), version)
    codec = _CODECS.get(key)
    if codec is None:
        if version not in message.versions:
            raise CodecError(f"{message.name} has no version {version}")
        with _LOCK:
            codec = _CODECS.get(key)
            if codec is None:
                read, build = _generated_codecs(message)[version]
                codec = Codec(message, version, read, build)
                _CODECS[key] = codec
    return codec
