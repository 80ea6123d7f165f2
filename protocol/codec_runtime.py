"""The runtime of generated codecs: the values they build and the helpers they call.

Theory of operation: the generated codecs (generated/, emitted by constructs.py at
`make codegen` time) do their work through this module. A decoded message is a `Struct` (a dict whose keys
read as attributes); the zero UUID is the default of every uuid field. Everything else here
is a primitive of Kafka's wire format as a plain function the generated code calls: readers
take (buf, pos) and return (value, new_pos), writers append to a bytearray (or splice into a
SpliceBuffer). Short input makes a reader raise IndexError or struct.error, which the Codec
turns into CodecError; a length or count is checked against the bytes left before anything
is allocated by it.

The generated modules import these names (constructs.RUNTIME_IMPORTS), so a name used there
must stay defined here.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from functools import partial
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar

from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.framing import BufferList, SpliceBuffer

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


if TYPE_CHECKING:  # to the type checker a TypedStruct is a Mapping (registered as one below)
    _MappingBase = Mapping[str, Any]
else:  # at run time a plain class: no ABC machinery in the generated classes' creation
    _MappingBase = object


class TypedStruct(_MappingBase):
    """The base of the generated message classes (generated/): a decoded message or struct.

    Each generated class lists its fields in `__slots__` (every field of every version of the
    message: one a version lacks holds its default) and as typed attributes, so field access
    is checked by mypy. It also reads as a read-only-keyed mapping of those fields (`x["name"]`,
    `get`, `in`, iteration, `dict(x)`, equality with a dict of the same items), so code and
    tests written against dict-shaped values, and the writers, take it as they take a dict.
    """

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    # the values of all fields at once: a C-level attrgetter, made per class (Any: a
    # callable class attribute, which the type checker would bind as a method)
    _values: ClassVar[Any] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._values = attrgetter(*cls._fields) if cls._fields else _no_values

    def __getitem__(self, key: str) -> Any:
        if key in self._fields:
            return getattr(self, key)
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self._fields:
            raise KeyError(key)
        setattr(self, key, value)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self._fields else default

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def keys(self) -> KeysView[str]:
        return KeysView(self)

    def items(self) -> ItemsView[str, Any]:
        return ItemsView(self)

    def values(self) -> ValuesView[Any]:
        return ValuesView(self)

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            values = self._values
            return bool(values(self) == values(other))
        if isinstance(other, TypedStruct):
            return self._fields == other._fields and all(
                getattr(self, f) == getattr(other, f) for f in self._fields)
        if isinstance(other, Mapping):
            return len(other) == len(self._fields) and all(
                f in other and getattr(self, f) == other[f] for f in self._fields)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dict

    def __repr__(self) -> str:
        items = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__qualname__}({items})"


Mapping.register(TypedStruct)


def _no_values(_: object) -> tuple[()]:
    return ()


# A generated class's instance without its __init__ (the readers set every slot themselves).
rt_alloc = object.__new__


def rt_getter(d: Any) -> Callable[..., Any]:
    """`get(name, default)` over what a writer is given: a generated struct's attributes, or
    any other mapping's items."""
    if isinstance(d, TypedStruct):
        return partial(getattr, d)
    getter: Callable[..., Any] = d.get
    return getter


# ---------------------------------------------------------------------------------------------
# Runtime helpers called from the generated code. Readers take (buf, pos) and return
# (value, new_pos); writers append to a bytearray. IndexError and struct.error raised on short
# input are turned into CodecError by Codec.
# ---------------------------------------------------------------------------------------------

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ZERO16 = bytes(16)


class Reader:
    """A buffer and a position: where a decode of several parts (header, body) stands.

    The generated readers want bytes: `as_bytes` turns a bytearray frame into a copy the
    first time one of them runs."""

    __slots__ = ("buf", "pos")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self.buf: bytes | bytearray = data if type(data) is bytes or type(data) is bytearray \
            else bytes(data)
        self.pos = pos

    def as_bytes(self) -> bytes:
        buf = self.buf
        if type(buf) is not bytes:
            self.buf = buf = bytes(buf)
        return buf


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
    value, io.pos = read(io.as_bytes(), io.pos)
    return value
