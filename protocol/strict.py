"""Strict encoding: reject keys the schema does not know, so a typo cannot encode a default.

Theory of operation: encoding takes any mapping and fills missing keys with defaults
(structs.py), which means a misspelt key (`base_offest`) silently encodes the default of the
field it meant. In strict mode every encode first walks the value against the message
definition and raises CodecError naming the message, the path and the unknown key.

A key is known when the struct has a field of that name in ANY version of the message: an
application builds one mapping for all versions and lets the codec pick the fields of the
version it encodes, so a key valid only at other versions is not an error. Fields added by
registered extensions (extensions.py) are known too, also when a plain (unextended) message
is encoded. The walk uses the version-agnostic definition, not the compiled codec, and is
cached per message object; it recurses into struct fields and arrays of structs and ignores
values that are not mappings (None for a null struct, say), which the encoder judges.

Strict mode is for tests: it is off unless turned on by `set_strict_encoding(True)` or by the
environment variable KAFKA_PROTOCOL_CODEC_STRICT=1 read at import (so subprocesses started by
a test suite are strict too). Off, the cost is one attribute test per encode (Codec).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kafka_protocol_codec import extensions
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.schema import F, Message

ENV_VAR = "KAFKA_PROTOCOL_CODEC_STRICT"
_TRUE = frozenset({"1", "true", "yes", "on"})


def _from_environment() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() in _TRUE


# Read by Codec.encode_into on every encode: keep it a plain module attribute.
enabled: bool = _from_environment()


def set_strict_encoding(on: bool) -> None:
    """Turn strict encoding on or off for this process (see the module docstring)."""
    global enabled
    enabled = bool(on)


def strict_encoding() -> bool:
    """Whether encoding rejects keys the schema does not know."""
    return enabled


class _Shape:
    """The keys one struct may carry (over all versions) and the shapes of its struct fields."""

    __slots__ = ("children", "known")

    def __init__(self, fields: tuple[F, ...]) -> None:
        self.known: set[str] = set()
        self.children: dict[str, _Shape] = {}
        for f in fields:
            self.add(f)

    def add(self, f: F) -> None:
        self.known.add(f.name)
        if f.is_struct:
            self.children[f.name] = _Shape(f.fields)


# id(message) -> (message, extensions merged, shape). The entry holds the message, so a
# cached id is never reused; comparing the extensions notices registrations since.
_SHAPES: dict[int, tuple[Message, tuple[extensions.Extension, ...], _Shape]] = {}


def _shape(message: Message) -> _Shape:
    registered = (extensions.registered(message.api_key, message.kind)
                  if message.api_key is not None and message.kind in extensions.KINDS else ())
    cached = _SHAPES.get(id(message))
    if cached is not None and cached[1] == registered:
        return cached[2]
    shape = _Shape(message.fields)
    for ext in registered:  # already in an extended message's fields; adding again is harmless
        target: _Shape | None = shape
        for name in ext.path:
            target = target.children.get(name) if target is not None else None
        if target is not None:
            target.add(ext.field)
    _SHAPES[id(message)] = (message, registered, shape)
    return shape


def check(message: Message, version: int, value: object) -> None:
    """CodecError if `value` (or a struct inside it) has a key no version of `message` knows."""
    if isinstance(value, Mapping):
        _check(message, version, _shape(message), value, message.name)


def _check(message: Message, version: int, shape: _Shape, value: Mapping[Any, Any],
           path: str) -> None:
    known = shape.known
    for key in value:
        if key not in known:
            raise CodecError(_unknown_key(message, version, shape, key, path))
    for name, child in shape.children.items():
        item = value.get(name)
        if isinstance(item, Mapping):
            _check(message, version, child, item, f"{path}.{name}")
        elif isinstance(item, (list, tuple)):
            for i, element in enumerate(item):
                if isinstance(element, Mapping):
                    _check(message, version, child, element, f"{path}.{name}[{i}]")


def _unknown_key(message: Message, version: int, shape: _Shape, key: object, path: str) -> str:
    text = (f"cannot encode {message.name} v{version}: unknown key {key!r} in {path} "
            f"(a field of no version of the message)")
    if isinstance(key, str):
        import difflib  # only on this error path

        close = difflib.get_close_matches(key, sorted(shape.known), n=1)
        if close:
            text += f"; did you mean {close[0]!r}?"
    return text
