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

Varints are read in C up to 4 bytes for 32-bit fields and 9 bytes for 64-bit ones (28 and 63
bits, which cannot overflow their type); longer encodings, legal or not, go to the pure walk.
"""

from libc.stdint cimport int64_t, uint64_t


cdef inline Py_ssize_t _uvarint(const unsigned char *data, Py_ssize_t pos, Py_ssize_t end,
                                int max_bytes, uint64_t *out) noexcept nogil:
    """Read an unsigned LEB128 value of at most ``max_bytes`` bytes ending before ``end``;
    return the next position, or -1 when it is truncated or longer."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef int i
    cdef unsigned char byte
    for i in range(max_bytes):
        if pos >= end:
            return -1
        byte = data[pos]
        pos += 1
        result |= (<uint64_t>(byte & 0x7F)) << shift
        if byte < 0x80:
            out[0] = result
            return pos
        shift += 7
    return -1


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
    cdef Py_ssize_t index, record_end, header_count, h
    cdef uint64_t raw
    cdef int64_t length, timestamp_delta
    cdef int64_t max_delta = no_timestamp_delta
    cdef Py_ssize_t max_index = -1
    if count < 0:
        return None
    for index in range(count):
        pos = _uvarint(buf, pos, end, 4, &raw)
        if pos < 0:
            return None
        length = _zigzag(raw)
        if length < 0 or length > end - pos:
            return None
        record_end = pos + length
        pos += 1  # attributes (unused in magic 2)
        pos = _uvarint(buf, pos, end, 9, &raw)  # timestamp delta
        if pos < 0:
            return None
        timestamp_delta = _zigzag(raw)
        pos = _uvarint(buf, pos, end, 4, &raw)  # offset delta, zigzag of the index
        if pos < 0 or raw != (<uint64_t>index) << 1:
            return None
        pos = _uvarint(buf, pos, end, 4, &raw)  # key length
        if pos < 0:
            return None
        if raw & 1:
            if raw != 1 or require_keys:
                return None
        else:
            pos += <Py_ssize_t>(raw >> 1)
        pos = _uvarint(buf, pos, end, 4, &raw)  # value length
        if pos < 0:
            return None
        if raw & 1:
            if raw != 1:
                return None
        else:
            pos += <Py_ssize_t>(raw >> 1)
        pos = _uvarint(buf, pos, end, 4, &raw)  # header count
        if pos < 0:
            return None
        header_count = <Py_ssize_t>_zigzag(raw)
        if header_count < 0 or header_count * 2 > record_end - pos:
            return None
        for h in range(header_count):
            pos = _uvarint(buf, pos, end, 4, &raw)  # header key length, never null
            if pos < 0 or raw & 1:
                return None
            pos += <Py_ssize_t>(raw >> 1)
            pos = _uvarint(buf, pos, end, 4, &raw)  # header value length
            if pos < 0:
                return None
            if raw & 1:
                if raw != 1:
                    return None
            else:
                pos += <Py_ssize_t>(raw >> 1)
        if pos != record_end:
            return None
        if check_range and not (low <= timestamp_delta <= high) and \
                timestamp_delta != no_timestamp_delta:
            return None
        if timestamp_delta > max_delta:
            max_delta = timestamp_delta
            max_index = index
    if pos != end:
        return None
    return max_delta, max_index
