"""Per-(message, version) construct structs, built from definitions and compiled on demand.

Theory of operation: a schema.Message is version-agnostic data. `codec_for(message, version)`
selects the fields present at that version and builds a tree of construct `Construct`
subclasses for Kafka's primitives (fixed-width ints, compact/legacy strings and bytes, UUIDs,
unsigned varints, nullable and compact arrays, tagged-field sections). The tree is compiled
with construct's `Construct.compile()`: every class here emits Python source through
construct's `_emitparse` / `_emitbuild` hooks, so a whole message becomes a handful of plain
functions with no per-field interpretation. Compiled codecs are cached per (message object,
version): an extended message (extensions.py) is a distinct object with the same name, and
gets its own codec.

Decoded messages are `Struct` objects: dicts with attribute access. Every field of the schema
is present after decoding; fields the version does not carry hold their defaults, as in
Kafka's own generated classes. Encoding takes any mapping and fills missing keys with defaults;
in strict mode (strict.py) a key that no version of the message knows is an error instead.

Bad input never escapes as anything but CodecError, and nothing is allocated by a length or
count before the bytes are known to be there.
"""

from __future__ import annotations

import struct
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from construct import Compiled, Construct
from kafka_protocol_codec import code_cache, strict
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.framing import BufferList, SpliceBuffer
from kafka_protocol_codec.schema import PRIMITIVE_TYPES, F, Message, in_range

ZERO_UUID = uuid.UUID(int=0)


class Struct(dict[str, Any]):
    """A decoded message or sub-struct: a dict whose keys also read as attributes."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __repr__(self) -> str:
        return f"Struct({dict.__repr__(self)})"


# ---------------------------------------------------------------------------------------------
# Runtime helpers called from the generated code. Readers take (buf, pos) and return
# (value, new_pos); writers append to a bytearray. IndexError and struct.error raised on short
# input are turned into CodecError by Codec.
# ---------------------------------------------------------------------------------------------

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ZERO16 = bytes(16)


class Reader:
    """A buffer and a position: what construct's compiled functions get as their stream."""

    __slots__ = ("buf", "pos")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self.buf = data if type(data) is bytes else bytes(data)
        self.pos = pos


def rt_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    for _ in range(5):
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    raise CodecError("unsigned varint longer than 5 bytes")


def rt_w_uvarint(out: bytearray, value: int) -> None:
    if 0 <= value < 0x80:
        out.append(value)
        return
    if value < 0 or value > 0xFFFFFFFF:
        raise CodecError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def rt_take(buf: bytes, pos: int, n: int) -> tuple[bytes, int]:
    end = pos + n
    if n < 0 or end > len(buf):
        raise CodecError(f"needed {n} bytes, {len(buf) - pos} left")
    return buf[pos:end], end


def _len16(buf: bytes, pos: int) -> tuple[int, int]:
    return _I16.unpack_from(buf, pos)[0], pos + 2


def _len_compact(buf: bytes, pos: int) -> tuple[int, int]:
    n = buf[pos]
    if n >= 0x80:
        n, pos = rt_uvarint(buf, pos)
        return n - 1, pos
    return n - 1, pos + 1


def rt_str(buf: bytes, pos: int) -> tuple[str, int]:
    n, pos = _len16(buf, pos)
    if n < 0:
        raise CodecError("null string in a non-nullable field")
    data, pos = rt_take(buf, pos, n)
    return data.decode(), pos


def rt_nstr(buf: bytes, pos: int) -> tuple[str | None, int]:
    n, pos = _len16(buf, pos)
    if n == -1:
        return None, pos
    data, pos = rt_take(buf, pos, n)
    return data.decode(), pos


def rt_cstr(buf: bytes, pos: int) -> tuple[str, int]:
    n, pos = _len_compact(buf, pos)
    if n < 0:
        raise CodecError("null string in a non-nullable field")
    data, pos = rt_take(buf, pos, n)
    return data.decode(), pos


def rt_ncstr(buf: bytes, pos: int) -> tuple[str | None, int]:
    n, pos = _len_compact(buf, pos)
    if n < 0:
        return None, pos
    data, pos = rt_take(buf, pos, n)
    return data.decode(), pos


def rt_bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    n = _I32.unpack_from(buf, pos)[0]
    if n < 0:
        raise CodecError("null bytes in a non-nullable field")
    return rt_take(buf, pos + 4, n)


def rt_nbytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n = _I32.unpack_from(buf, pos)[0]
    if n == -1:
        return None, pos + 4
    return rt_take(buf, pos + 4, n)


def rt_cbytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = _len_compact(buf, pos)
    if n < 0:
        raise CodecError("null bytes in a non-nullable field")
    return rt_take(buf, pos, n)


def rt_ncbytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _len_compact(buf, pos)
    if n < 0:
        return None, pos
    return rt_take(buf, pos, n)


def rt_records(buf: bytes, pos: int, compact: bool) -> tuple[memoryview | None, int]:
    """A records field as a zero-copy view into the frame (None when null)."""
    if compact:
        n, pos = _len_compact(buf, pos)
    else:
        n = _I32.unpack_from(buf, pos)[0]
        pos += 4
    if n < 0:
        return None, pos
    end = pos + n
    if end > len(buf):
        raise CodecError(f"records of {n} bytes run past the end of the data")
    return memoryview(buf)[pos:end], end


def rt_w_str(out: bytearray, value: str | None, compact: bool, nullable: bool) -> None:
    if value is None:
        if not nullable:
            raise CodecError("None for a non-nullable string")
        out += b"\x00" if compact else b"\xff\xff"
        return
    data = value.encode()
    # Kafka caps every string at 0x7fff bytes, compact ones too: its readers reject longer.
    if len(data) > 0x7FFF:
        raise CodecError("string longer than 32767 bytes")
    if compact:
        rt_w_uvarint(out, len(data) + 1)
    else:
        out += _I16.pack(len(data))
    out += data


def rt_w_bytes(out: bytearray, value: Any, compact: bool, nullable: bool) -> None:
    if value is None:
        if not nullable:
            raise CodecError("None for non-nullable bytes")
        out += b"\x00" if compact else b"\xff\xff\xff\xff"
        return
    n = value.nbytes if isinstance(value, memoryview) else len(value)
    if compact:
        rt_w_uvarint(out, n + 1)
    else:
        out += _I32.pack(n)
    out.extend(value)  # extend over-allocates; += on large chunks reallocates exactly


def rt_w_records(out: bytearray, value: Any, compact: bool, nullable: bool) -> None:
    """A records field; a BufferList is spliced in by reference when `out` can take it."""
    if type(value) is not BufferList:
        rt_w_bytes(out, value, compact, nullable)
        return
    if compact:
        rt_w_uvarint(out, value.nbytes + 1)
    else:
        out += _I32.pack(value.nbytes)
    if isinstance(out, SpliceBuffer):
        out.splice(value)
    else:
        for chunk in value.buffers:
            out += chunk


def rt_count(buf: bytes, pos: int, compact: bool, nullable: bool) -> tuple[int, int]:
    """An array's element count (-1 for null), checked against the bytes left."""
    if compact:
        n, pos = _len_compact(buf, pos)
    else:
        n = _I32.unpack_from(buf, pos)[0]
        pos += 4
    if n < 0:
        if n == -1 and nullable:
            return -1, pos
        raise CodecError(f"bad array length {n}")
    if n > len(buf) - pos:
        raise CodecError(f"array count {n} exceeds the {len(buf) - pos} bytes left")
    return n, pos


def rt_w_count(out: bytearray, items: Any, compact: bool, nullable: bool) -> None:
    if items is None:
        if not nullable:
            raise CodecError("None for a non-nullable array")
        out += b"\x00" if compact else b"\xff\xff\xff\xff"
    elif compact:
        rt_w_uvarint(out, len(items) + 1)
    else:
        out += _I32.pack(len(items))


_ARRAY_STRUCTS: dict[tuple[str, int], struct.Struct] = {}


def rt_fixed_array(buf: bytes, pos: int, n: int, fmt: str, size: int) -> tuple[list[Any], int]:
    st = _ARRAY_STRUCTS.get((fmt, n))
    if st is None:
        st = struct.Struct(f">{n}{fmt}")
        if n < 64:
            _ARRAY_STRUCTS[(fmt, n)] = st
    end = pos + n * size
    if end > len(buf):
        raise CodecError("array runs past the end of the data")
    return list(st.unpack_from(buf, pos)), end


_SMALL_ARRAY = 128
FIXED_ARRAY_STRUCTS: dict[str, list[struct.Struct]] = {}


def small_array_structs(fmt: str) -> list[struct.Struct]:
    """Structs for arrays of 0..127 fixed-width values, so short arrays unpack in one call."""
    table = FIXED_ARRAY_STRUCTS.get(fmt)
    if table is None:
        table = [struct.Struct(f">{n}{fmt}") for n in range(_SMALL_ARRAY)]
        FIXED_ARRAY_STRUCTS[fmt] = table
    return table


def rt_read_fixed_array(buf: bytes, pos: int, compact: bool, nullable: bool, fmt: str,
                        size: int) -> tuple[list[Any] | None, int]:
    n, pos = rt_count(buf, pos, compact, nullable)
    if n < 0:
        return None, pos
    return rt_fixed_array(buf, pos, n, fmt, size)


def rt_skip_tags(buf: bytes, pos: int) -> int:
    return rt_tags(buf, pos)[1]


def rt_w_fixed_array(out: bytearray, items: Any, fmt: str) -> None:
    n = len(items)
    st = _ARRAY_STRUCTS.get((fmt, n))
    if st is None:
        st = struct.Struct(f">{n}{fmt}")
        if n < 64:
            _ARRAY_STRUCTS[(fmt, n)] = st
    out += st.pack(*items)


def rt_new_uuid(data: bytes) -> uuid.UUID:
    """A UUID from 16 bytes, without UUID.__init__'s argument checks (the same object as
    UUID(bytes=data); this is about twice as fast, and metadata carries one per topic)."""
    value = _new_object(uuid.UUID)
    _set_attribute(value, "int", _int_from_bytes(data, "big"))
    _set_attribute(value, "is_safe", _SAFE_UNKNOWN)
    return value


_new_object = object.__new__
_set_attribute = object.__setattr__
_int_from_bytes = int.from_bytes
_SAFE_UNKNOWN = uuid.SafeUUID.unknown


def rt_uuid(buf: bytes, pos: int) -> tuple[uuid.UUID, int]:
    data, pos = rt_take(buf, pos, 16)
    return uuid.UUID(bytes=data), pos


def rt_w_uuid(out: bytearray, value: uuid.UUID | None) -> None:
    out += value.bytes if value is not None else _ZERO16


def rt_tags(buf: bytes, pos: int) -> tuple[list[tuple[int, bytes]], int]:
    """The tagged-field section: a list of (tag, raw bytes)."""
    count, pos = rt_uvarint(buf, pos)
    tags = []
    for _ in range(count):
        tag, pos = rt_uvarint(buf, pos)
        size, pos = rt_uvarint(buf, pos)
        data, pos = rt_take(buf, pos, size)
        tags.append((tag, data))
    return tags, pos


def rt_w_tags(out: bytearray, tags: list[tuple[int, bytes]]) -> None:
    rt_w_uvarint(out, len(tags))
    for tag, data in tags:
        rt_w_uvarint(out, tag)
        rt_w_uvarint(out, len(data))
        out += data


def rt_encode_tag(value: Any, build: Callable[[Any, bytearray], None]) -> bytes:
    out = bytearray()
    build(value, out)
    return bytes(out)


def rt_end_check(buf: bytes, pos: int) -> None:
    """Fail a decode whose reads ran past the end of the data.

    Generated readers slice strings and UUIDs without a bounds check of their own: a slice
    past the end is short instead of failing, but it leaves pos beyond len(buf), where every
    later read fails and this check, run by every entry point after its last read, catches it.
    """
    if pos > len(buf):
        raise CodecError(f"data ends {pos - len(buf)} bytes early")


def rt_via_reader(io: Reader, read: Callable[[bytes, int], tuple[Any, int]]) -> Any:
    value, io.pos = read(io.buf, io.pos)
    return value


_FIXED_FORMATS = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i",
                  "uint32": "I", "int64": "q", "float64": "d"}

_RT_IMPORTS = (
    "from uuid import UUID\n"
    "from kafka_protocol_codec.structs import (Struct, CodecError, ZERO_UUID,"
    " rt_uvarint, rt_w_uvarint, rt_take, rt_str, rt_nstr, rt_cstr, rt_ncstr, rt_bytes,"
    " rt_nbytes, rt_cbytes, rt_ncbytes, rt_w_str, rt_w_bytes, rt_count, rt_w_count,"
    " rt_fixed_array, rt_w_fixed_array, rt_read_fixed_array, rt_skip_tags,"
    " FIXED_ARRAY_STRUCTS, rt_uuid, rt_w_uuid, rt_tags, rt_w_tags, rt_encode_tag,"
    " rt_via_reader, rt_records, rt_new_uuid, rt_end_check, rt_w_records)"
)


# ---------------------------------------------------------------------------------------------
# Construct classes. Construct's own compiler calls `_emitparse` / `_emitbuild`, which expect
# one expression over a stream. Kafka messages are dominated by small fields, so each class
# here also emits *statements* over local (buf, pos) variables (`emit_read` / `emit_write`);
# a struct groups runs of fixed-width fields into one struct.unpack_from call. The stream
# expression is a thin wrapper over those statements, so there is one implementation of each
# encoding and construct's compile() produces the whole codec.
# ---------------------------------------------------------------------------------------------


def _indent(lines: list[str], by: int = 4) -> list[str]:
    return [" " * by + line for line in lines]


class _KafkaConstruct(Construct):  # type: ignore[misc]
    fixed_format: str | None = None  # struct format char for fixed-width values
    _compiled: Compiled | None = None

    def emit_read(self, code: Any, target: str) -> list[str]:
        raise NotImplementedError

    def emit_write(self, code: Any, source: str) -> list[str]:
        raise NotImplementedError

    def _compiled_self(self) -> Compiled:
        if self._compiled is None:
            self._compiled = self.compile()
        return self._compiled

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        return self._compiled_self().parsefunc(stream, context)

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        return self._compiled_self().buildfunc(obj, stream, context)

    def _reader_fn(self, code: Any) -> str:
        """The name of a generated `(buf, pos) -> (value, pos)` function for this construct."""
        key = ("reader", id(self))
        if key not in code.parsercache:
            code.append(_RT_IMPORTS)
            name = f"read_{type(self).__name__.lower()}_{code.allocateId()}"
            code.parsercache[key] = name
            body = self.emit_read(code, "value")
            code.append("\n".join([f"def {name}(buf, pos):", *_indent(body),
                                   "    rt_end_check(buf, pos)", "    return value, pos"]))
        name_out: str = code.parsercache[key]
        return name_out

    def _writer_fn(self, code: Any) -> str:
        """The name of a generated `(value, out)` function for this construct."""
        key = ("writer", id(self))
        if key not in code.buildercache:
            code.append(_RT_IMPORTS)
            name = f"write_{type(self).__name__.lower()}_{code.allocateId()}"
            code.buildercache[key] = name
            body = self.emit_write(code, "value")
            code.append("\n".join([f"def {name}(value, out):", *_indent(body or ["pass"])]))
        name_out: str = code.buildercache[key]
        return name_out

    def _emitparse(self, code: Any) -> str:
        return f"rt_via_reader(io, {self._reader_fn(code)})"

    def _emitbuild(self, code: Any) -> str:
        return f"{self._writer_fn(code)}(obj, io)"


def _struct_const(code: Any, fmt: str) -> str:
    name = "st_" + "".join(ch if ch.isalnum() else "_" for ch in fmt)
    code.append(f"{name} = struct.Struct('>{fmt}')")
    return name


class Fixed(_KafkaConstruct):
    """bool, int8/16/32/64, uint16/32 and float64, big-endian."""

    def __init__(self, type_name: str) -> None:
        super().__init__()
        self.type_name = type_name
        self.fixed_format = _FIXED_FORMATS[type_name]
        self.size = struct.calcsize(">" + self.fixed_format)

    def emit_read(self, code: Any, target: str) -> list[str]:
        st = _struct_const(code, self.fixed_format or "")
        return [f"{target} = {st}.unpack_from(buf, pos)[0]", f"pos += {self.size}"]

    def emit_write(self, code: Any, source: str) -> list[str]:
        st = _struct_const(code, self.fixed_format or "")
        return [f"out += {st}.pack({source})"]


class Uuid(_KafkaConstruct):
    def emit_read(self, code: Any, target: str) -> list[str]:
        # A short slice leaves pos past the end, which rt_end_check reports.
        return [f"{target} = rt_new_uuid(buf[pos:pos + 16])", "pos += 16"]

    def emit_write(self, code: Any, source: str) -> list[str]:
        return [f"rt_w_uuid(out, {source})"]


class KString(_KafkaConstruct):
    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.compact = compact
        self.nullable = nullable

    def emit_read(self, code: Any, target: str) -> list[str]:
        fn = "rt_" + ("n" if self.nullable else "") + ("c" if self.compact else "") + "str"
        fid = code.allocateId()
        n = f"n{fid}"
        if self.compact:  # inline paths for short strings (and null, when nullable)
            null = [f"elif {n} == 0:", f"    {target} = None", "    pos += 1"] if self.nullable else []
            return [f"{n} = buf[pos]", f"if 0 < {n} < 0x80:",
                    f"    {target} = buf[pos + 1:pos + {n}].decode()", f"    pos += {n}",
                    *null, "else:", f"    {target}, pos = {fn}(buf, pos)"]
        _struct_const(code, "h")
        return [f"{n} = st_h.unpack_from(buf, pos)[0]",
                f"if {n} >= 0:",
                f"    {target} = buf[pos + 2:pos + 2 + {n}].decode()", f"    pos += 2 + {n}",
                "else:", f"    {target}, pos = {fn}(buf, pos)"]

    def emit_write(self, code: Any, source: str) -> list[str]:
        return [f"rt_w_str(out, {source}, {self.compact}, {self.nullable})"]


class KBytes(_KafkaConstruct):
    """bytes and records fields (records stay opaque bytes here; see records.py).

    With `zero_copy` (records fields, which are large) decoding hands out a memoryview into
    the frame instead of a copy.
    """

    def __init__(self, compact: bool, nullable: bool, zero_copy: bool = False) -> None:
        super().__init__()
        self.compact = compact
        self.nullable = nullable
        self.zero_copy = zero_copy

    def emit_read(self, code: Any, target: str) -> list[str]:
        if self.zero_copy and self.compact:
            # Inline: a compact length (one uvarint call for lengths of 127 bytes and more),
            # then a view of the frame; a null or overlong value goes through rt_records.
            n, end = f"n{code.allocateId()}", f"end{code.allocateId()}"
            return [f"{n} = buf[pos]",
                    f"if {n} >= 0x80:",
                    f"    {n}, {end} = rt_uvarint(buf, pos)",
                    "else:",
                    f"    {end} = pos + 1",
                    f"if {n} and {end} + {n} - 1 <= len(buf):",
                    f"    pos = {end} + {n} - 1",
                    f"    {target} = memoryview(buf)[{end}:pos]",
                    "else:",
                    f"    {target}, pos = rt_records(buf, pos, True)"]
        if self.zero_copy:
            return [f"{target}, pos = rt_records(buf, pos, {self.compact})"]
        fn = "rt_" + ("n" if self.nullable else "") + ("c" if self.compact else "") + "bytes"
        return [f"{target}, pos = {fn}(buf, pos)"]

    def emit_write(self, code: Any, source: str) -> list[str]:
        if self.zero_copy:
            return [f"rt_w_records(out, {source}, {self.compact}, {self.nullable})"]
        return [f"rt_w_bytes(out, {source}, {self.compact}, {self.nullable})"]


class KArray(_KafkaConstruct):
    def __init__(self, element: _KafkaConstruct, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.element = element
        self.compact = compact
        self.nullable = nullable

    def emit_read(self, code: Any, target: str) -> list[str]:
        fid = code.allocateId()
        fmt = self.element.fixed_format
        if fmt is not None:
            # Fast path for short non-null arrays: one unpack_from, which itself raises on
            # short input; anything else goes through the checked helper.
            size = struct.calcsize(">" + fmt)
            small_array_structs(fmt)
            table = f"sta_{fmt.replace('?', 'bool')}"
            code.append(f"{table} = FIXED_ARRAY_STRUCTS[{fmt!r}]")
            n = f"n{fid}"
            if self.compact:
                head = [f"{n} = buf[pos] - 1", f"if 0 <= {n} < 127:",
                        f"    {target} = list({table}[{n}].unpack_from(buf, pos + 1))",
                        f"    pos += 1 + {size} * {n}"]
            else:
                head = [f"{n} = st_i.unpack_from(buf, pos)[0]", f"if 0 <= {n} < 128:",
                        f"    {target} = list({table}[{n}].unpack_from(buf, pos + 4))",
                        f"    pos += 4 + {size} * {n}"]
                _struct_const(code, "i")
            return [*head, "else:",
                    f"    {target}, pos = rt_read_fixed_array(buf, pos, {self.compact}, "
                    f"{self.nullable}, {fmt!r}, {size})"]
        n = f"n{fid}"
        # Short arrays skip the helper: under 128 elements nothing is allocated by the count,
        # and a count larger than the data fails on the first missing element.
        if self.compact:
            lines = [f"{n} = buf[pos] - 1", f"if 0 <= {n} < 127:", "    pos += 1", "else:",
                     f"    {n}, pos = rt_count(buf, pos, True, {self.nullable})"]
        else:
            _struct_const(code, "i")
            lines = [f"{n} = st_i.unpack_from(buf, pos)[0]", f"if 0 <= {n} < 128:",
                     "    pos += 4", "else:",
                     f"    {n}, pos = rt_count(buf, pos, False, {self.nullable})"]
        lines += [f"if {n} < 0:", f"    {target} = None", "else:"]
        item = f"e{fid}"
        lines += [f"    {target} = []", f"    append{fid} = {target}.append",
                  f"    for _ in range({n}):"]
        element = self.element
        reads = (element.parse_lines(code, item) if isinstance(element, KStruct)
                 else element.emit_read(code, item))
        lines += _indent(reads, 8)
        lines.append(f"        append{fid}({item})")
        return lines

    def emit_write(self, code: Any, source: str) -> list[str]:
        fid = code.allocateId()
        items = f"items{fid}"
        fmt = self.element.fixed_format
        if fmt is not None and self.compact:
            small_array_structs(fmt)
            table = f"sta_{fmt.replace('?', 'bool')}"
            code.append(f"{table} = FIXED_ARRAY_STRUCTS[{fmt!r}]")
            n = f"n{fid}"
            return [f"{items} = {source}",
                    f"{n} = len({items}) if {items} is not None else -1",
                    f"if 0 <= {n} < 127:",
                    f"    out.append({n} + 1)",
                    f"    out += {table}[{n}].pack(*{items})",
                    "else:",
                    f"    rt_w_count(out, {items}, True, {self.nullable})",
                    f"    if {items}: rt_w_fixed_array(out, {items}, {fmt!r})"]
        lines = [f"{items} = {source}",
                 f"rt_w_count(out, {items}, {self.compact}, {self.nullable})"]
        if fmt is not None:
            lines.append(f"if {items}: rt_w_fixed_array(out, {items}, {fmt!r})")
            return lines
        item = f"e{fid}"
        lines.append(f"if {items} is not None:")
        lines.append(f"    for {item} in {items}:")
        lines += _indent(self.element.emit_write(code, item), 8)
        return lines


class NullableStruct(_KafkaConstruct):
    """A struct field that may be null: an int8 marker (-1 null, 1 present) before it."""

    def __init__(self, inner: KStruct) -> None:
        super().__init__()
        self.inner = inner

    def emit_read(self, code: Any, target: str) -> list[str]:
        return ["if buf[pos] >= 0x80:  # any negative marker means null, as in Kafka", f"    {target} = None", "    pos += 1", "else:",
                "    pos += 1", *_indent(self.inner.emit_read(code, target))]

    def emit_write(self, code: Any, source: str) -> list[str]:
        return [f"if {source} is None:", "    out.append(0xFF)", "else:", "    out.append(1)",
                *_indent(self.inner.emit_write(code, source))]


@dataclass
class Member:
    """One field of a KStruct at one version."""

    name: str
    con: _KafkaConstruct | None  # None: not carried by this version (decoded as its default)
    default_src: str  # Python source for the default value
    tag: int | None = None  # set for fields carried in the tagged section


def _fresh_default(code: Any, member: Member) -> str:
    """Source for a fresh default of an absent member.

    A struct default whose values are all immutable scalars is a copy of a module-level dict
    (Struct(dict) copies in one step: about half the cost of building it from a literal);
    any other default stays an inline literal, which is a fresh object at every use.
    """
    src = member.default_src
    if not src.startswith("Struct({") or "[" in src[8:] or "Struct(" in src[8:]:
        return src
    name = f"dflt_{code.allocateId()}"
    code.append(f"{name} = {src[len('Struct('):-1]}")
    return f"Struct({name})"


class KStruct(_KafkaConstruct):
    """A struct at one version: its wire fields, absent fields, and tagged fields."""

    def __init__(self, name: str, members: list[Member], flexible: bool) -> None:
        super().__init__()
        self.name = name
        self.members = members
        self.flexible = flexible
        self.parse_fn_name: str | None = None  # its generated (buf, pos) parser, once emitted

    def emit_read(self, code: Any, target: str) -> list[str]:
        return [f"{target}, pos = {self._parse_fn(code)}(buf, pos)"]

    def emit_write(self, code: Any, source: str) -> list[str]:
        return [f"{self._build_fn(code)}({source}, out)"]

    def _wire_groups(self) -> list[list[tuple[int, Member]]]:
        """Consecutive wire fields, runs of fixed-width ones grouped together."""
        groups: list[list[tuple[int, Member]]] = []
        for i, m in enumerate(self.members):
            if m.con is None or m.tag is not None:
                continue
            fixed = m.con.fixed_format is not None
            if fixed and groups and groups[-1][0][1].con.fixed_format is not None:  # type: ignore[union-attr]
                groups[-1].append((i, m))
            else:
                groups.append([(i, m)])
        return groups

    def _parse_fn(self, code: Any) -> str:
        key = ("kstruct-parse", id(self))
        if key in code.parsercache:
            name_cached: str = code.parsercache[key]
            return name_cached
        code.append(_RT_IMPORTS)
        name = f"parse_{self.name}_{code.allocateId()}"
        code.parsercache[key] = name
        self.parse_fn_name = name
        body = [*self.parse_lines(code, "r"), "return r, pos"]
        code.append("\n".join([f"def {name}(buf, pos):", *_indent(body)]))
        return name

    def parse_lines(self, code: Any, target: str) -> list[str]:
        """Statements that decode this struct into `target`, advancing `pos`.

        Array elements use these inline (no call and no tuple per element); local names carry
        a per-use prefix so nested structs never clash.
        """
        code.append(_RT_IMPORTS)
        prefix = f"s{code.allocateId()}_"
        body: list[str] = []
        for group in self._wire_groups():
            first = group[0][1].con
            assert first is not None
            if first.fixed_format is not None:
                fmt = "".join(m.con.fixed_format for _, m in group)  # type: ignore[union-attr,misc]
                st = _struct_const(code, fmt)
                targets = "".join(f"{prefix}{i}, " for i, _ in group)
                body += [f"{targets}= {st}.unpack_from(buf, pos)",
                         f"pos += {struct.calcsize('>' + fmt)}"]
            else:
                i, m = group[0]
                body += first.emit_read(code, f"{prefix}{i}")
        items = []
        for i, m in enumerate(self.members):
            wire = m.con is not None and m.tag is None
            items.append(f"{m.name!r}: {f'{prefix}{i}' if wire else _fresh_default(code, m)}")
        body.append(f"{target} = Struct({{{', '.join(items)}}})")
        known_tags = [m for m in self.members if m.tag is not None and m.con is not None]
        if self.flexible and not known_tags:
            body += ["if buf[pos]:", "    pos = rt_skip_tags(buf, pos)", "else:", "    pos += 1"]
        elif self.flexible:
            body += ["if buf[pos] == 0:", "    pos += 1", "    tags = ()", "else:",
                     "    tags, pos = rt_tags(buf, pos)", "for tag, data in tags:"]
            first_tag = True
            for m in known_tags:
                assert m.con is not None
                reader = m.con._reader_fn(code)
                kw = "if" if first_tag else "elif"
                first_tag = False
                body.append(f"    {kw} tag == {m.tag}: "
                            f"{target}[{m.name!r}] = {reader}(data, 0)[0]")
        return body

    def _build_fn(self, code: Any) -> str:
        key = ("kstruct-build", id(self))
        if key in code.buildercache:
            name_cached: str = code.buildercache[key]
            return name_cached
        code.append(_RT_IMPORTS)
        name = f"build_{self.name}_{code.allocateId()}"
        code.buildercache[key] = name
        body = ["get = d.get"]
        for group in self._wire_groups():
            first = group[0][1].con
            assert first is not None
            if first.fixed_format is not None:
                fmt = "".join(m.con.fixed_format for _, m in group)  # type: ignore[union-attr,misc]
                st = _struct_const(code, fmt)
                args = ", ".join(f"get({m.name!r}, {m.default_src})" for _, m in group)
                body.append(f"out += {st}.pack({args})")
                continue
            i, m = group[0]
            if m.default_src.startswith("Struct("):
                body += [f"v{i} = get({m.name!r})",
                         f"if v{i} is None and {m.name!r} not in d: v{i} = {m.default_src}"]
            else:
                body.append(f"v{i} = get({m.name!r}, {m.default_src})")
            body += first.emit_write(code, f"v{i}")
        has_tags = any(m.tag is not None and m.con is not None for m in self.members)
        if self.flexible and not has_tags:
            body.append("out.append(0)")
        elif self.flexible:
            body.append("tags = []")
            for i, m in sorted(enumerate(self.members), key=lambda im: im[1].tag or 0):
                if m.tag is None or m.con is None:
                    continue
                writer = m.con._writer_fn(code)
                default = m.default_src
                if default.startswith(("Struct(", "[")):
                    default = f"dflt_{code.allocateId()}"
                    code.append(f"{default} = {m.default_src}")
                body += [f"v{i} = get({m.name!r}, {default})",
                         f"if v{i} != {default}: "
                         f"tags.append(({m.tag}, rt_encode_tag(v{i}, {writer})))"]
            body.append("rt_w_tags(out, tags)")
        code.append("\n".join([f"def {name}(d, out):", *_indent(body)]))
        return name


# ---------------------------------------------------------------------------------------------
# From definitions to constructs
# ---------------------------------------------------------------------------------------------


def _literal_default(f: F) -> str:
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


def _primitive(type_name: str, compact: bool, nullable: bool) -> _KafkaConstruct:
    if type_name in _FIXED_FORMATS:
        return Fixed(type_name)
    if type_name == "uuid":
        return Uuid()
    if type_name == "string":
        return KString(compact, nullable)
    if type_name == "records":
        return KBytes(compact, True, zero_copy=True)
    if type_name == "bytes":
        return KBytes(compact, nullable)
    raise ValueError(f"unknown primitive type {type_name}")


def build_struct(name: str, fields: tuple[F, ...], version: int, flexible: bool) -> KStruct:
    """The (uncompiled) construct for one struct at one version."""
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


def _field_construct(f: F, version: int, flexible: bool) -> _KafkaConstruct:
    compact = flexible if f.flexible is True else in_range(version, f.flexible)  # type: ignore[arg-type]
    nullable = in_range(version, f.nullable)
    element = f.element_type
    inner: _KafkaConstruct
    if element in PRIMITIVE_TYPES:
        inner = _primitive(element, compact, nullable and not f.is_array)
    else:
        struct_ = build_struct(element, f.fields, version, flexible)
        inner = NullableStruct(struct_) if (not f.is_array and nullable) else struct_
    if f.is_array:
        return KArray(inner, compact, nullable)
    return inner


class Codec:
    """Encode and decode one message at one version through its compiled construct."""

    __slots__ = ("_build", "_plan", "_read", "compiled", "construct", "message", "version")

    def __init__(self, message: Message, version: int) -> None:
        self.message = message
        self.version = version
        flexible = in_range(version, message.flexible)
        self.construct = build_struct(message.name, message.fields, version, flexible)
        with code_cache.compiling():  # the generated code, compiled once per machine
            self.compiled = self.construct.compile()
        # Decoding calls the message's generated (buf, pos) parser directly, skipping the
        # stream wrapper of construct's parsefunc (a Reader per call, and two more calls).
        namespace = self.compiled.parsefunc.__globals__
        self._read: Callable[[bytes, int], tuple[Struct, int]] = namespace[
            self.construct.parse_fn_name
        ]
        self._build = self.compiled.buildfunc
        # The compiled decode plan (accel.py), when the extension is built: it reads what is
        # well formed and leaves everything else to the generated reader.
        from kafka_protocol_codec import accel

        self._plan: Any = accel.plan_for(self.construct)

    def decode(self, data: bytes | bytearray | memoryview) -> Struct:
        buf = data if type(data) is bytes else bytes(data)
        plan = self._plan
        if plan is not None:
            planned = decode_plan(plan, buf)
            if planned is not None:
                return planned
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
            result, pos = self._read(reader.buf, reader.pos)
            rt_end_check(reader.buf, pos)
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
            self._build(value, out, None)
        except CodecError:
            raise
        except Exception as exc:
            raise CodecError(f"cannot encode {self.message.name} v{self.version}: {exc!r}") from exc


def _no_plans(plan: Any, buf: bytes, pos: int) -> tuple[Struct, int] | None:
    raise NotImplementedError("no compiled decode plans without the extension")


def _no_plans_at_start(plan: Any, buf: bytes) -> Struct | None:
    raise NotImplementedError("no compiled decode plans without the extension")


# Run a compiled decode plan (at a position; at the start of the buffer, without the position
# back): accel.py sets them to the extension's readers when it loads it.
read_plan: Callable[[Any, bytes, int], tuple[Struct, int] | None] = _no_plans
decode_plan: Callable[[Any, bytes], Struct | None] = _no_plans_at_start


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
