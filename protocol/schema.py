"""Message definitions as plain data.

The generator (codegen.py) turns Kafka's JSON schemas into modules under generated/ that hold
nothing but instances of these classes. Keeping definitions as data, not as per-version code,
means one builder (structs.py) derives the construct struct for any (message, version) on
demand, and the committed output stays small and reviewable.

A version range is a pair (low, high) with high None for "and later"; None as a whole means
"no versions" (the schemas' "none").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

VersionRange = tuple[int, int | None] | None

PRIMITIVE_TYPES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "string",
     "bytes", "uuid", "records"}
)


def in_range(version: int, versions: VersionRange) -> bool:
    """Whether a version falls in a range as the schemas write them ("3+", "0-7", "none")."""
    if versions is None:
        return False
    low, high = versions
    return version >= low and (high is None or version <= high)


@dataclass(frozen=True)
class F:
    """One field: its snake_case name, Kafka type, and the versions that carry it.

    `type` is a primitive name, "[]<type>" for arrays, or a struct name; struct-typed fields
    carry their member fields in `fields` (common structs are inlined by the generator).
    `default` is already a Python value (None doubles as "null"); for struct fields it is
    ignored unless the field is nullable with a null default (`default_null`).
    """

    name: str
    type: str
    versions: VersionRange
    nullable: VersionRange = None
    default: Any = None
    tag: int | None = None
    tagged: VersionRange = None
    flexible: VersionRange | bool = True
    fields: tuple[F, ...] = ()
    default_null: bool = False

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVE_TYPES


@dataclass(frozen=True)
class Message:
    """A top-level message: a request, response, header, metadata record or data type."""

    name: str
    kind: str
    valid: VersionRange
    flexible: VersionRange
    fields: tuple[F, ...]
    api_key: int | None = None
    unstable_latest: bool = False
    deprecated: VersionRange = None
    listeners: tuple[str, ...] = field(default=())

    @property
    def versions(self) -> range:
        if self.valid is None:
            return range(0)
        low, high = self.valid
        return range(low, (high if high is not None else low) + 1)
