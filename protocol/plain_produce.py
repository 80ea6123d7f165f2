"""The plain Produce request and its success answer, read and written without the general
codec (compiled: ``_produce_accel.pyx``, built by ``make accel``).

A broker sees one shape of Produce request far more than any other: acks 1 or all, one record
batch per partition, no tagged fields (the transactional id, if any, is read past: each batch
says whether it is transactional, and the caller judges that). For that shape
``parse_plain_produce`` returns the fields a broker needs, and ``encode_plain_produce_response``
writes the answer in which every partition succeeded; both return byte-for-byte what the
general codec (``decode_request``, ``encode_response_into``) reads and writes for the same
request and answer. Both are None when the extension is not built or
``KAFKA_PROTOCOL_CODEC_PURE=1`` asks for pure code: callers then use the general codec.

``parse_plain_produce(frame)``: (version, correlation id, client id, acks, timeout ms, topics)
with topics as [(name, [(partition index, records view), ...]), ...], the views slices of
``frame``; None for any other request (the general decoder then reads it and words any error).

``encode_plain_produce_response(version, correlation id, topics)``: the framed answer (size
prefix included), topics as [(name, [(partition index, base offset, log start offset), ...])],
every partition with error 0, no LogAppendTime (-1), no record errors and throttle time 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .native import import_native

_native: Any = import_native("_produce_accel")

ParsedProduce = tuple[int, int, "str | None", int, int, list[tuple[str, list[tuple[int, memoryview]]]]]
PartitionAnswer = tuple[int, int, int]

parse_plain_produce: Callable[[Any], ParsedProduce | None] | None = (
    None if _native is None else _native.parse_plain_produce)
encode_plain_produce_response: Callable[
    [int, int, list[tuple[str, list[PartitionAnswer]]]], bytes] | None = (
    None if _native is None else _native.encode_plain_produce_response)
