"""The iteration order of Java's hash collections, where Kafka's answers list things in it.

Kafka builds some answers by iterating a java.util.HashMap or HashSet of strings (the refused
users of AlterUserScramCredentials, the choices named in a config error): a client sees that
order. A HashMap iterates its table bucket by bucket, each bucket in insertion order; a
string's bucket is its String.hashCode, spread (h ^ h >>> 16), modulo the table size, which
starts at 16 and doubles whenever the entries exceed three quarters of it. (Buckets of eight
or more colliding entries become trees in Java; with the handful of names an answer lists
that does not happen.)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

INITIAL_CAPACITY = 16
LOAD_FACTOR = 0.75


def java_string_hash(text: str) -> int:
    """String.hashCode, as an unsigned 32-bit value (over UTF-16 code units)."""
    encoded = text.encode("utf-16-be")
    result = 0
    for (unit,) in struct.iter_unpack(">H", encoded):
        result = (31 * result + unit) & 0xFFFFFFFF
    return result


def spread(code: int) -> int:
    """HashMap.hash: a key's hashCode with its high half folded in, unsigned."""
    code &= 0xFFFFFFFF
    return code ^ (code >> 16)


def hash_map_capacity(size: int) -> int:
    """The table size of a HashMap holding `size` entries (put one by one, default
    capacity)."""
    capacity = INITIAL_CAPACITY
    while size > capacity * LOAD_FACTOR:
        capacity *= 2
    return capacity


def java_hash_order(keys: Iterable[str]) -> list[str]:
    """Distinct `keys`, given in insertion order, in the iteration order of a HashMap (or
    HashSet) they were put into."""
    unique = list(dict.fromkeys(keys))
    mask = hash_map_capacity(len(unique)) - 1
    # stable: a bucket keeps insertion order
    return sorted(unique, key=lambda key: spread(java_string_hash(key)) & mask)
