"""Construct classes for Kafka's primitives, each emitting the Python source of its codec.

Theory of operation: structs.py builds, for one message at one version, a tree of these
classes (fixed-width ints, compact/legacy strings and bytes, UUIDs, nullable and compact
arrays, nullable structs, structs with tagged-field sections) and compiles it with
construct's `Construct.compile()`. Construct's compiler calls `_emitparse` / `_emitbuild`,
which expect one expression over a stream. Kafka messages are dominated by small fields, so
each class here also emits *statements* over local (buf, pos) variables (`emit_read` /
`emit_write`); a struct groups runs of fixed-width fields into one struct.unpack_from call.
The stream expression is a thin wrapper over those statements, so there is one
implementation of each encoding and compile() produces the whole codec as a handful of plain
functions. The generated source calls the helpers of codec_runtime.py (RUNTIME_IMPORTS).

The generator (codegen.py) needs only each message's top-level reader and writer, not
construct's stream wrapper around them: `emit_message` runs the same emitters through one
construct CodeGen per generated module (shared constants and imports once) under the names
the module's version table uses, and `module_source` lays the result out. The generated code
imports nothing of construct, so a process that only encodes and decodes never imports it.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any

from construct import CodeGen, Compiled, Construct

FIXED_FORMATS = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i",
                 "uint32": "I", "int64": "q", "float64": "d"}

# What every generated module imports: the runtime its emitted statements call.
RUNTIME_IMPORTS = (
    "from uuid import UUID\n"
    "from kafka_protocol_codec.codec_runtime import (CodecError, TypedStruct, ZERO_UUID,"
    " rt_alloc, rt_getter,"
    " rt_uvarint, rt_w_uvarint, rt_take, rt_str, rt_nstr, rt_cstr, rt_ncstr, rt_bytes,"
    " rt_nbytes, rt_cbytes, rt_ncbytes, rt_w_str, rt_w_bytes, rt_count, rt_w_count,"
    " rt_fixed_array, rt_w_fixed_array, rt_read_fixed_array, rt_skip_tags,"
    " small_array_structs, rt_uuid, rt_w_uuid, rt_tags, rt_w_tags, rt_encode_tag,"
    " rt_via_reader, rt_records, rt_new_uuid, rt_end_check, rt_w_records)"
)


def _indent(lines: list[str], by: int = 4) -> list[str]:
    return [" " * by + line for line in lines]


class KafkaConstruct(Construct):  # type: ignore[misc]
    """A Kafka wire type: statements for the generated (buf, pos) code, wrapped for construct."""

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

    def _reader_fn(self, code: Any, hint: str | None = None) -> str:
        """The name of a generated `(buf, pos) -> (value, pos)` function for this construct
        (`hint`: what it reads, for the name)."""
        key = ("reader", id(self))
        if key not in code.parsercache:
            code.append(RUNTIME_IMPORTS)
            name = helper_name(code, "read", hint or type(self).__name__.lower())
            code.parsercache[key] = name
            body = self.emit_read(code, "value")
            code.append("\n".join([f"def {name}(buf, pos):", *_indent(body),
                                   "    rt_end_check(buf, pos)", "    return value, pos"]))
        name_out: str = code.parsercache[key]
        return name_out

    def _writer_fn(self, code: Any, hint: str | None = None) -> str:
        """The name of a generated `(value, out)` function for this construct (`hint`: what
        it writes, for the name)."""
        key = ("writer", id(self))
        if key not in code.buildercache:
            code.append(RUNTIME_IMPORTS)
            name = helper_name(code, "write", hint or type(self).__name__.lower())
            code.buildercache[key] = name
            body = self.emit_write(code, "value")
            code.append("\n".join([f"def {name}(value, out):", *_indent(body or ["pass"])]))
        name_out: str = code.buildercache[key]
        return name_out

    def _emitparse(self, code: Any) -> str:
        return f"rt_via_reader(io, {self._reader_fn(code)})"

    def _emitbuild(self, code: Any) -> str:
        return f"{self._writer_fn(code)}(obj, io)"


_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _snake(name: str) -> str:
    return _SNAKE.sub("_", name).lower()


def helper_name(code: Any, verb: str, what: str) -> str:
    """A helper function's name: the verb, the entry point it serves (emit_message's, e.g.
    `response_v12`) and what it reads or writes, numbered only when that is taken."""
    used: set[str] = code.__dict__.setdefault("helper_names", set())
    owner = getattr(code, "owner", "")
    base = f"{verb}_{owner}_{what}" if owner else f"{verb}_{what}"
    name, n = base, 2
    while name in used:
        name, n = f"{base}_{n}", n + 1
    used.add(name)
    return name


def _struct_const(code: Any, fmt: str) -> str:
    name = "st_" + "".join(ch if ch.isalnum() else "_" for ch in fmt)
    code.append(f"{name} = struct.Struct('>{fmt}')")
    return name


class Fixed(KafkaConstruct):
    """bool, int8/16/32/64, uint16/32 and float64, big-endian."""

    def __init__(self, type_name: str) -> None:
        super().__init__()
        self.type_name = type_name
        self.fixed_format = FIXED_FORMATS[type_name]
        self.size = struct.calcsize(">" + self.fixed_format)

    def emit_read(self, code: Any, target: str) -> list[str]:
        st = _struct_const(code, self.fixed_format or "")
        return [f"{target} = {st}.unpack_from(buf, pos)[0]", f"pos += {self.size}"]

    def emit_write(self, code: Any, source: str) -> list[str]:
        st = _struct_const(code, self.fixed_format or "")
        return [f"out += {st}.pack({source})"]


class Uuid(KafkaConstruct):
    def emit_read(self, code: Any, target: str) -> list[str]:
        # A short slice leaves pos past the end, which rt_end_check reports.
        return [f"{target} = rt_new_uuid(buf[pos:pos + 16])", "pos += 16"]

    def emit_write(self, code: Any, source: str) -> list[str]:
        return [f"rt_w_uuid(out, {source})"]


class KString(KafkaConstruct):
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


class KBytes(KafkaConstruct):
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


class KArray(KafkaConstruct):
    def __init__(self, element: KafkaConstruct, compact: bool, nullable: bool) -> None:
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
            table = f"sta_{fmt.replace('?', 'bool')}"
            code.append(f"{table} = small_array_structs({fmt!r})")
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
        lines += [f"    {target} = []", f"    append{fid} = {target}.append"]
        element = self.element
        if isinstance(element, KStruct):  # the class looked up once, not per element
            lines.append(f"    new{fid} = {element.cls}")
            reads = element.parse_lines(code, item, f"new{fid}")
        else:
            reads = element.emit_read(code, item)
        lines.append(f"    for _ in range({n}):")
        lines += _indent(reads, 8)
        lines.append(f"        append{fid}({item})")
        return lines

    def emit_write(self, code: Any, source: str) -> list[str]:
        fid = code.allocateId()
        items = f"items{fid}"
        fmt = self.element.fixed_format
        if fmt is not None and self.compact:
            table = f"sta_{fmt.replace('?', 'bool')}"
            code.append(f"{table} = small_array_structs({fmt!r})")
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


class NullableStruct(KafkaConstruct):
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
    con: KafkaConstruct | None  # None: not carried by this version (decoded as its default)
    default_src: str  # Python source for the default value
    tag: int | None = None  # set for fields carried in the tagged section
    struct_default: bool = False  # the default is a struct (a constructor call)


class KStruct(KafkaConstruct):
    """A struct at one version: its wire fields, absent fields, and tagged fields."""

    def __init__(self, name: str, members: list[Member], flexible: bool, cls: str) -> None:
        super().__init__()
        self.name = name
        self.members = members
        self.flexible = flexible
        self.cls = cls  # the expression of the generated class its values are
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

    def _parse_fn(self, code: Any, name: str | None = None) -> str:
        key = ("kstruct-parse", id(self))
        if key in code.parsercache:
            name_cached: str = code.parsercache[key]
            return name_cached
        code.append(RUNTIME_IMPORTS)
        name = name or helper_name(code, "read", _snake(self.name))
        code.parsercache[key] = name
        self.parse_fn_name = name
        body = [*self.parse_lines(code, "r"), "return r, pos"]
        code.append("\n".join([f"def {name}(buf, pos):", *_indent(body)]))
        return name

    def parse_lines(self, code: Any, target: str, new: str | None = None) -> list[str]:
        """Statements that decode this struct into `target` (an instance made by `new`, the
        class expression by default), advancing `pos`.

        Array elements use these inline (no call and no tuple per element); local names carry
        a per-use prefix so nested structs never clash.
        """
        code.append(RUNTIME_IMPORTS)
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
        # The instance is allocated and its slots set here, without a call of its __init__
        # (a Python frame per struct: about twice the cost).
        body.append(f"{target} = rt_alloc({new or self.cls})")
        for i, m in enumerate(self.members):
            wire = m.con is not None and m.tag is None
            body.append(f"{target}.{m.name} = {f'{prefix}{i}' if wire else m.default_src}")
        known_tags = [m for m in self.members if m.tag is not None and m.con is not None]
        if self.flexible and not known_tags:
            body += ["if buf[pos]:", "    pos = rt_skip_tags(buf, pos)", "else:", "    pos += 1"]
        elif self.flexible:
            body += ["if buf[pos] == 0:", "    pos += 1", "    tags = ()", "else:",
                     "    tags, pos = rt_tags(buf, pos)", "for tag, data in tags:"]
            first_tag = True
            for m in known_tags:
                assert m.con is not None
                reader = m.con._reader_fn(code, m.name)
                kw = "if" if first_tag else "elif"
                first_tag = False
                body.append(f"    {kw} tag == {m.tag}: "
                            f"{target}.{m.name} = {reader}(data, 0)[0]")
        return body

    def _build_fn(self, code: Any, name: str | None = None) -> str:
        key = ("kstruct-build", id(self))
        if key in code.buildercache:
            name_cached: str = code.buildercache[key]
            return name_cached
        code.append(RUNTIME_IMPORTS)
        name = name or helper_name(code, "write", _snake(self.name))
        code.buildercache[key] = name
        groups = self._wire_groups()
        tagged = sorted(((i, m) for i, m in enumerate(self.members)
                         if m.tag is not None and m.con is not None),
                        key=lambda im: im[1].tag or 0)
        tag_defaults: dict[int, str] = {}
        for i, m in tagged:
            tag_defaults[i] = m.default_src
            if m.struct_default or m.default_src == "[]":
                tag_defaults[i] = f"dflt_{code.allocateId()}"
                code.append(f"{tag_defaults[i]} = {m.default_src}")
        used = [im for group in groups for im in group] + tagged
        # Its own generated class (a decoded message) is read by attribute; anything else is
        # a mapping (what handlers return: a dict) or another generated struct, read by name
        # with the defaults of missing keys.
        cls = f"cls_{code.allocateId()}"
        code.append(f"{cls} = {self.cls}")
        by_attribute = [f"v{i} = d.{m.name}" for i, m in used]
        by_name = ["get = d.get if type(d) is dict else rt_getter(d)"]
        for i, m in used:
            if m.tag is None and m.struct_default:
                by_name += [f"v{i} = get({m.name!r})",
                            f"if v{i} is None and {m.name!r} not in d: v{i} = {m.default_src}"]
            else:
                default = tag_defaults[i] if m.tag is not None else m.default_src
                by_name.append(f"v{i} = get({m.name!r}, {default})")
        body = []
        if used:
            body = [f"if type(d) is {cls}:", *_indent(by_attribute), "else:", *_indent(by_name)]
        for group in groups:
            first = group[0][1].con
            assert first is not None
            if first.fixed_format is not None:
                fmt = "".join(m.con.fixed_format for _, m in group)  # type: ignore[union-attr,misc]
                st = _struct_const(code, fmt)
                args = ", ".join(f"v{i}" for i, _ in group)
                body.append(f"out += {st}.pack({args})")
                continue
            i, _ = group[0]
            body += first.emit_write(code, f"v{i}")
        if self.flexible and not tagged:
            body.append("out.append(0)")
        elif self.flexible:
            body.append("tags = []")
            for i, m in tagged:
                assert m.con is not None
                writer = m.con._writer_fn(code, m.name)
                body.append(f"if v{i} != {tag_defaults[i]}: "
                            f"tags.append(({m.tag}, rt_encode_tag(v{i}, {writer})))")
            body.append("rt_w_tags(out, tags)")
        if not body:
            body = ["pass"]
        code.append("\n".join([f"def {name}(d, out):", *_indent(body)]))
        return name


# What a generated codec module starts with: the emitters' struct constants need it
# (construct's own compile() gets it from its preamble).
MODULE_PREAMBLE = "import struct"


def new_module_code() -> Any:
    """A construct CodeGen for one generated module (any number of messages and versions:
    shared struct constants and imports are emitted once)."""
    code = CodeGen()
    code.append(MODULE_PREAMBLE)
    return code


def emit_message(code: Any, kstruct: KStruct, read_name: str, write_name: str) -> None:
    """Emit a message's codec into `code`: the reader `read_name(buf, pos) -> (Struct, pos)`
    and the writer `write_name(mapping, out)`, with the helper functions they call."""
    code.owner = read_name.removeprefix("read_")  # helper functions are named after it
    kstruct._parse_fn(code, read_name)
    kstruct._build_fn(code, write_name)
    code.owner = ""


def signature(value: Any) -> Any:
    """A hashable description of a construct tree (its classes and settings, recursively):
    two trees with the same signature emit the same code."""
    if isinstance(value, KafkaConstruct):
        items = sorted((k, signature(v)) for k, v in vars(value).items()
                       if not k.startswith("_") and k != "parse_fn_name")
        return (type(value).__name__, tuple(items))
    if isinstance(value, Member):
        return ("member", value.name, signature(value.con), value.default_src, value.tag,
                value.struct_default)
    if isinstance(value, (list, tuple)):
        return tuple(signature(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, signature(v)) for k, v in value.items()))
    return value


def module_source(code: Any) -> tuple[str, str]:
    """A generated module's codec part: (its imports, the rest), top-level blocks with
    PEP 8 spacing."""
    imports: list[str] = []
    parts: list[str] = []
    for block in code.blocks:
        if block.startswith(("import ", "from ")):
            imports.append(f"{block}\n")
        elif block.startswith("def "):
            parts.append(f"\n\n{block}\n")
        else:
            parts.append(f"{block}\n")
    return "".join(imports), "".join(parts)


def primitive(type_name: str, compact: bool, nullable: bool) -> KafkaConstruct:
    """The construct of one primitive field type."""
    if type_name in FIXED_FORMATS:
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
