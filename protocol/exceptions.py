"""The one exception type the codec raises for bad input."""

from __future__ import annotations


class CodecError(ValueError):
    """Bytes that cannot be decoded, or a value that cannot be encoded.

    Every decoding failure (truncation, a bad varint, a negative or absurd length or count,
    a CRC mismatch) surfaces as this type and nothing else, so the server can close one
    connection without guessing which exceptions a malformed frame may raise.
    """
