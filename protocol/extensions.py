"""Tagged-field extensions: fields an application adds to messages Kafka's schemas define.

Theory of operation: the generated modules hold Kafka's schemas and the codecs compiled from
them at `make codegen` time; nothing is compiled at run time. An application that speaks a
documented extension of a message (a draft KIP, a simulator's opt-in field) declares it in a
Python file that registers it:

    register_extension(0, "request", ("topic_data", "partition_data"),
                       F("current_leader_epoch", "int32", (9, None), default=-1,
                         tag=16384, tagged=(9, None)))

naming an API key and the side ("request" or "response") -- or a KRaft metadata record type
and "metadata" --, the path of field names from the message root to the struct that gets the
field (empty for the top level), and the field itself. The generator imports that file
(`codegen --extensions FILE`, inside `building()`) and compiles the extensions into the codecs
of the extended messages; generated/extensions.py lists them, and this module's registry
starts with them. At run time registering an extension that was compiled in is a no-op (the
application's registrations then document and check what it relies on); one that was not
is an ExtensionError that says to regenerate. `api()` and `metadata_record()` (api.py) apply
the registered extensions to the generated messages.

Only tagged fields in flexible versions may be added. That is what keeps an extension
invisible to every peer that does not know it: a decoder that does not know a tag skips it
(Kafka's rule for unknown tagged fields), and an encoder writes a tagged field only when its
value differs from the default, so a message that does not use the extension has the same
bytes as before. A registration is checked against the message: the path must lead to a
struct, the field name must be new there, and the tag must not be one the struct already
uses in any version the new field is tagged in. Registering the same extension again is a
no-op (modules that register at import may be imported more than once in tests).

This module is part of the codec: it knows nothing of any application.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from kafka_protocol_codec.schema import F, Message, VersionRange, in_range

KINDS = ("request", "response", "metadata")


class ExtensionError(ValueError):
    """A registration that does not fit the message it extends."""


@dataclass(frozen=True)
class Extension:
    """One registered field added to a message (api_key and kind name it), at `path` from
    the message root."""

    api_key: int
    kind: str
    path: tuple[str, ...]
    field: F


_LOCK = threading.Lock()


def _compiled_in() -> tuple[Extension, ...]:
    from kafka_protocol_codec.generated.extensions import EXTENSIONS

    return tuple(Extension(key, kind, path, field) for key, kind, path, field in EXTENSIONS)


# What the generated codecs carry (generated/extensions.py); the registry starts with them.
COMPILED: frozenset[Extension] = frozenset(_compiled_in())
_REGISTRY: dict[tuple[int, str], list[Extension]] = {}
for _ext in _compiled_in():
    _REGISTRY.setdefault((_ext.api_key, _ext.kind), []).append(_ext)
# True while the generator collects the extensions to compile in (building()).
_building = False


@contextmanager
def building() -> Iterator[None]:
    """For the generator: an empty registry that takes any extension that fits, restored
    afterwards."""
    global _building
    with _LOCK:
        saved = {k: list(v) for k, v in _REGISTRY.items()}
        _REGISTRY.clear()
        _building = True
    try:
        yield
    finally:
        with _LOCK:
            _REGISTRY.clear()
            _REGISTRY.update(saved)
            _building = False


def all_registered() -> list[Extension]:
    """Every registered extension, by (api key, kind) and then in registration order."""
    with _LOCK:
        return [ext for key in sorted(_REGISTRY) for ext in _REGISTRY[key]]


def registered(api_key: int, kind: str) -> tuple[Extension, ...]:
    """The extensions registered for one side of one API, in registration order."""
    with _LOCK:
        return tuple(_REGISTRY.get((api_key, kind), ()))


def any_registered(api_key: int, kind: str) -> bool:
    """Whether one side of one API has an extension: a single dict read, no lock (a read
    racing a registration sees it or not, as a lookup just before it would)."""
    return bool(_REGISTRY.get((api_key, kind)))


def add(extension: Extension, base: Message) -> bool:
    """Check `extension` against `base` (the unextended message, with the extensions
    registered so far applied) and record it. False if it was already registered."""
    if extension.kind not in KINDS:
        raise ExtensionError(f"kind must be one of {KINDS}, not {extension.kind!r}")
    with _LOCK:
        existing = _REGISTRY.setdefault((extension.api_key, extension.kind), [])
        if extension in existing:
            return False
        current = base
        for ext in existing:
            current = extend_message(current, ext.path, ext.field)
        extend_message(current, extension.path, extension.field)  # raises if it does not fit
        if not _building and extension not in COMPILED:
            raise ExtensionError(
                f"{extension.field.name} at {'.'.join(extension.path) or 'the top level'} of "
                f"{extension.kind} {extension.api_key} is not compiled into the generated "
                f"codecs: list it in the file `make codegen` reads (--extensions) and "
                f"regenerate")
        existing.append(extension)
        return True


def apply(message: Message, api_key: int, kind: str) -> Message:
    """`message` with every extension registered for (api_key, kind) added."""
    for ext in registered(api_key, kind):
        message = extend_message(message, ext.path, ext.field)
    return message


def extend_message(message: Message, path: tuple[str, ...], field: F) -> Message:
    """A copy of `message` with `field` added to the struct at `path` (pure)."""
    _check_field(message, field)
    return replace(message, fields=_extend_fields(message.fields, path, field, message.name))


def _check_field(message: Message, field: F) -> None:
    if field.tag is None or field.tagged is None:
        raise ExtensionError(f"{field.name}: only tagged fields can be added")
    if field.tag < 0:
        raise ExtensionError(f"{field.name}: tag {field.tag} is negative")
    low = field.tagged[0]
    if not in_range(low, message.flexible):
        raise ExtensionError(f"{field.name}: tagged from v{low}, but {message.name} is not "
                             f"flexible there")
    if field.versions != field.tagged:
        raise ExtensionError(f"{field.name}: versions {field.versions} must equal the tagged "
                             f"versions {field.tagged}")


def _extend_fields(fields: tuple[F, ...], path: tuple[str, ...], field: F,
                   where: str) -> tuple[F, ...]:
    if not path:
        for existing in fields:
            if existing.name == field.name:
                raise ExtensionError(f"{where} already has a field {field.name!r}")
            if existing.tag == field.tag and _overlap(existing.tagged, field.tagged):
                raise ExtensionError(f"{where} already uses tag {field.tag} "
                                     f"({existing.name})")
        return (*fields, field)
    head, rest = path[0], path[1:]
    out = []
    found = False
    for existing in fields:
        if existing.name == head:
            if not existing.is_struct:
                raise ExtensionError(f"{where}.{head} is not a struct")
            found = True
            existing = replace(existing, fields=_extend_fields(
                existing.fields, rest, field, f"{where}.{head}"))
        out.append(existing)
    if not found:
        raise ExtensionError(f"{where} has no field {head!r}")
    return tuple(out)


def _overlap(a: VersionRange, b: VersionRange) -> bool:
    if a is None or b is None:
        return False
    a_high = a[1] if a[1] is not None else 1 << 15
    b_high = b[1] if b[1] is not None else 1 << 15
    return a[0] <= b_high and b[0] <= a_high
