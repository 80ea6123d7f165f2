# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled fast path of ``validation._walk_records`` (optional; built by ``make accel``).

Theory of operation: this walker can only say "every record is valid". It reads the same
fields with the same bounds as the pure walk, but the moment anything is not plainly fine (a
read past the end, a length or count that is negative or too large, a varint longer than the
lengths that cannot overflow, an offset delta other than the record's index, a missing key on
a compacted topic, a timestamp outside the window) it returns None, and the caller runs the
pure walk, which then finds and words the error exactly as it always did. So the compiled code
decides nothing the pure code would decide differently: on valid batches both return the same
(max timestamp delta, its record index); on anything else only the pure code answers.

``plain_batch`` is ``validation._valid_plain_batch`` in one call, on the same terms: the
header's fields and checks, the CRC-32C (through the function it is given) and the walk, for
an uncompressed CreateTime batch; it too answers only "valid" (with the header fields and the
max timestamp) or None, never an error.

Varints are read in C up to 4 bytes for 32-bit fields and 9 bytes for 64-bit ones (28 and 63
bits, which cannot overflow their type); longer encodings, legal or not, go to the pure walk.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint32_t, uint64_t


include "_uvarint.pxi"


cdef inline int64_t _zigzag(uint64_t raw) noexcept nogil:
    return <int64_t>(raw >> 1) ^ -(<int64_t>(raw & 1))


def walk_valid(const unsigned char[:] data, Py_ssize_t pos, Py_ssize_t count,
               bint require_keys, bint check_range, int64_t low, int64_t high,
               int64_t no_timestamp_delta):
    """(max timestamp delta, its index) when all ``count`` records from ``pos`` are valid
    and exactly fill ``data``; None when the pure walk must look (see the module doc)."""
    cdef Py_ssize_t end = data.shape[0]
    # the varint reader gets a plain pointer: a typed memoryview passed to it is
    # reference-counted on every call; it reads below `end` only, so an empty view's NULL
    # is never dereferenced
    cdef const unsigned char *buf = &data[0] if end > 0 else NULL
    cdef int64_t max_delta
    cdef Py_ssize_t max_index
    if not _walk(buf, pos, end, count, require_keys, check_range, low, high,
                 no_timestamp_delta, &max_delta, &max_index):
        return None
    return max_delta, max_index


cdef bint _walk(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count,
                bint require_keys, bint check_range, int64_t low, int64_t high,
                int64_t no_timestamp_delta, int64_t *max_delta_out,
                Py_ssize_t *max_index_out) noexcept:
    """walk_valid on a pointer: True with the max timestamp delta and its index set when
    every record is valid, False when the pure walk must look."""
    cdef Py_ssize_t index, record_end, header_count, h
    cdef uint64_t raw
    cdef int64_t length, timestamp_delta
    cdef int64_t max_delta = no_timestamp_delta
    cdef Py_ssize_t max_index = -1
    if count < 0:
        return False
    for index in range(count):
        pos = _uvarint(buf, pos, end, 4, &raw)
        if pos < 0:
            return False
        length = _zigzag(raw)
        if length < 0 or length > end - pos:
            return False
        record_end = pos + length
        pos += 1  # attributes (unused in magic 2)
        pos = _uvarint(buf, pos, end, 9, &raw)  # timestamp delta
        if pos < 0:
            return False
        timestamp_delta = _zigzag(raw)
        pos = _uvarint(buf, pos, end, 4, &raw)  # offset delta, zigzag of the index
        if pos < 0 or raw != (<uint64_t>index) << 1:
            return False
        pos = _uvarint(buf, pos, end, 4, &raw)  # key length
        if pos < 0:
            return False
        if raw & 1:
            if raw != 1 or require_keys:
                return False
        else:
            pos += <Py_ssize_t>(raw >> 1)
        pos = _uvarint(buf, pos, end, 4, &raw)  # value length
        if pos < 0:
            return False
        if raw & 1:
            if raw != 1:
                return False
        else:
            pos += <Py_ssize_t>(raw >> 1)
        pos = _uvarint(buf, pos, end, 4, &raw)  # header count
        if pos < 0:
            return False
        header_count = <Py_ssize_t>_zigzag(raw)
        if header_count < 0 or header_count * 2 > record_end - pos:
            return False
        for h in range(header_count):
            pos = _uvarint(buf, pos, end, 4, &raw)  # header key length, never null
            if pos < 0 or raw & 1:
                return False
            pos += <Py_ssize_t>(raw >> 1)
            pos = _uvarint(buf, pos, end, 4, &raw)  # header value length
            if pos < 0:
                return False
            if raw & 1:
                if raw != 1:
                    return False
            else:
                pos += <Py_ssize_t>(raw >> 1)
        if pos != record_end:
            return False
        if check_range and not (low <= timestamp_delta <= high) and \
                timestamp_delta != no_timestamp_delta:
            return False
        if timestamp_delta > max_delta:
            max_delta = timestamp_delta
            max_index = index
    if pos != end:
        return False
    max_delta_out[0] = max_delta
    max_index_out[0] = max_index
    return True


cdef inline uint64_t _be(const unsigned char *p, int n) noexcept:
    cdef uint64_t v = 0
    cdef int i
    for i in range(n):
        v = (v << 8) | p[i]
    return v


DEF HEADER_SIZE = 61
DEF LOG_OVERHEAD = 12
DEF CRC_START = 21
DEF NOT_PLAIN = 0x07 | 0x08 | 0x20  # a codec, LogAppendTime, a control batch


def plain_batch(const unsigned char[:] data, Py_ssize_t max_batch_bytes, bint require_keys,
                bint check_range, low_bound, high_bound, crc32c):
    """``validation._valid_plain_batch`` in one call: (the 13 header fields, max timestamp,
    its record index) when ``data`` is one uncompressed CreateTime batch passing every check
    there (``max_batch_bytes`` < 0: no limit; with ``check_range`` the absolute timestamp
    window [low_bound, high_bound]; ``crc32c`` the CRC-32C function), else None, for the
    full checks to judge and word."""
    cdef Py_ssize_t size = data.shape[0]
    if size < HEADER_SIZE:
        return None
    cdef const unsigned char *buf = &data[0]
    cdef int64_t base_offset = <int64_t>_be(buf, 8)
    cdef int32_t length = <int32_t>_be(buf + 8, 4)
    cdef int32_t leader_epoch = <int32_t>_be(buf + 12, 4)
    cdef int8_t magic = <int8_t>buf[16]
    cdef uint32_t crc = <uint32_t>_be(buf + 17, 4)
    cdef int16_t attributes = <int16_t>_be(buf + 21, 2)
    cdef int32_t last_delta = <int32_t>_be(buf + 23, 4)
    cdef int64_t base_timestamp = <int64_t>_be(buf + 27, 8)
    cdef int64_t max_timestamp_field = <int64_t>_be(buf + 35, 8)
    cdef int64_t producer_id = <int64_t>_be(buf + 43, 8)
    cdef int16_t producer_epoch = <int16_t>_be(buf + 51, 2)
    cdef int32_t base_sequence = <int32_t>_be(buf + 53, 4)
    cdef int32_t count = <int32_t>_be(buf + 57, 4)
    if (base_offset != 0 or magic != 2 or LOG_OVERHEAD + <Py_ssize_t>length != size
            or attributes & NOT_PLAIN
            or (max_batch_bytes >= 0 and size > max_batch_bytes)
            or count <= 0 or <int64_t>last_delta + 1 != count
            or (producer_id > -1 and base_sequence < 0)):
        return None
    if crc32c(data[CRC_START:]) != crc:
        return None
    cdef int64_t no_timestamp_delta = -1 - base_timestamp  # never overflows
    cdef int64_t low = 0
    cdef int64_t high = 0
    if check_range:  # the window relative to the base timestamp, when it fits 64 bits
        low_delta = low_bound - base_timestamp
        high_delta = high_bound - base_timestamp
        if low_delta < -(1 << 63) or high_delta > (1 << 63) - 1:
            return None
        if low_delta > (1 << 63) - 1 or high_delta < -(1 << 63):
            return None  # an empty window: the full checks word every record
        low = low_delta
        high = high_delta
    cdef int64_t max_delta
    cdef Py_ssize_t max_index
    if not _walk(buf, HEADER_SIZE, size, count, require_keys, check_range, low, high,
                 no_timestamp_delta, &max_delta, &max_index):
        return None
    cdef int64_t max_timestamp = -1
    if max_index >= 0:  # Kafka adds in 64-bit arithmetic: wrap as it does
        max_timestamp = <int64_t>(<uint64_t>base_timestamp + <uint64_t>max_delta)
    return ((base_offset, length, leader_epoch, magic, crc, attributes, last_delta,
             base_timestamp, max_timestamp_field, producer_id, producer_epoch, base_sequence,
             count), max_timestamp, max_index)
