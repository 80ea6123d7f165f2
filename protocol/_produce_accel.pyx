# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled reader of plain Produce requests and writer of their success answers (optional;
built by ``make accel``; used through ``produce_lane.py``).

Theory of operation: like the compiled record walker, this code only ever says "this is the
plain case". ``parse_plain_produce`` reads a Produce request frame (v3 to v12: header v1 up to
v8, flexible header v2 from v9) and returns its fields only when the request is plainly
ordinary: acks 1 or -1, at least one topic and partition, every records field non-null and
non-empty, no tagged field anywhere, nothing truncated and nothing left over. The
transactional id, null or not, is read past: what a transactional producer's batches ask of
the broker is the caller's to judge (each batch says whether it is transactional). Anything
else, legal or not, returns None and the request goes through the general decoder and
handler, which word every answer. ``encode_plain_produce_response`` writes the
framed answer in which every partition succeeded (error 0, no LogAppendTime, no record errors,
no throttle), in the layout of the request's version.
"""

from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

DEF FIRST_VERSION = 3
DEF LAST_VERSION = 12
DEF FLEXIBLE_FROM = 9


cdef inline int32_t _i32(const unsigned char[:] d, Py_ssize_t p) noexcept nogil:
    return <int32_t>((<uint32_t>d[p] << 24) | (<uint32_t>d[p + 1] << 16)
                     | (<uint32_t>d[p + 2] << 8) | <uint32_t>d[p + 3])


cdef inline int16_t _i16(const unsigned char[:] d, Py_ssize_t p) noexcept nogil:
    return <int16_t>((d[p] << 8) | d[p + 1])


include "_uvarint.pxi"


def parse_plain_produce(frame):
    """(version, correlation id, client id, acks, timeout ms, topics) of a plain Produce
    request, topics as [(name, [(index, records view), ...]), ...]; None otherwise."""
    cdef const unsigned char[:] d = frame
    cdef Py_ssize_t end = d.shape[0]
    # the varint reader reads below `end` only, so an empty frame's NULL is never read
    cdef const unsigned char *buf = &d[0] if end > 0 else NULL
    cdef Py_ssize_t pos, name_len, size
    cdef int16_t version, acks, client_len
    cdef int32_t correlation_id, timeout_ms, index
    cdef int64_t topic_count, partition_count, t, p
    cdef uint64_t raw
    cdef bint flexible
    if end < 10 or d[0] != 0 or d[1] != 0:
        return None
    version = _i16(d, 2)
    if version < FIRST_VERSION or version > LAST_VERSION:
        return None
    flexible = version >= FLEXIBLE_FROM
    correlation_id = _i32(d, 4)
    client_len = _i16(d, 8)
    pos = 10
    client_id = None
    if client_len >= 0:
        if pos + client_len > end:
            return None
        try:
            client_id = bytes(d[pos:pos + client_len]).decode("utf-8")
        except UnicodeDecodeError:
            return None
        pos += client_len
    elif client_len != -1:
        return None
    if flexible:  # header tagged fields: none
        if pos >= end or d[pos] != 0:
            return None
        pos += 1
        pos = _uvarint(buf, pos, end, 4, &raw)  # transactional id: compact, 0 is null
        if pos < 0:
            return None
        size = <Py_ssize_t>raw - 1
    else:
        if pos + 2 > end:
            return None
        size = _i16(d, pos)  # transactional id: -1 is null
        pos += 2
        if size < -1:
            return None
    if size >= 0:  # read past, as UTF-8 the general decoder would accept
        if pos + size > end:
            return None
        try:
            bytes(d[pos:pos + size]).decode("utf-8")
        except UnicodeDecodeError:
            return None
        pos += size
    if pos + 6 > end:
        return None
    acks = _i16(d, pos)
    timeout_ms = _i32(d, pos + 2)
    pos += 6
    if acks != 1 and acks != -1:
        return None
    view = memoryview(frame)
    topics = []
    if flexible:
        pos = _uvarint(buf, pos, end, 4, &raw)
        if pos < 0 or raw < 2:
            return None
        topic_count = <int64_t>raw - 1
    else:
        if pos + 4 > end:
            return None
        topic_count = _i32(d, pos)
        pos += 4
        if topic_count < 1:
            return None
    for t in range(topic_count):
        if flexible:
            pos = _uvarint(buf, pos, end, 4, &raw)
            if pos < 0 or raw < 1:
                return None
            name_len = <Py_ssize_t>raw - 1
        else:
            if pos + 2 > end:
                return None
            name_len = _i16(d, pos)
            pos += 2
            if name_len < 0:
                return None
        if pos + name_len > end:
            return None
        try:
            name = bytes(d[pos:pos + name_len]).decode("utf-8")
        except UnicodeDecodeError:
            return None
        pos += name_len
        if flexible:
            pos = _uvarint(buf, pos, end, 4, &raw)
            if pos < 0 or raw < 2:
                return None
            partition_count = <int64_t>raw - 1
        else:
            if pos + 4 > end:
                return None
            partition_count = _i32(d, pos)
            pos += 4
            if partition_count < 1:
                return None
        partitions = []
        for p in range(partition_count):
            if pos + 4 > end:
                return None
            index = _i32(d, pos)
            pos += 4
            if flexible:
                pos = _uvarint(buf, pos, end, 4, &raw)
                if pos < 0 or raw < 2:  # null or empty records
                    return None
                size = <Py_ssize_t>raw - 1
            else:
                if pos + 4 > end:
                    return None
                size = _i32(d, pos)
                pos += 4
                if size < 1:
                    return None
            if pos + size > end:
                return None
            partitions.append((index, view[pos:pos + size]))
            pos += size
            if flexible:  # partition tagged fields: none
                if pos >= end or d[pos] != 0:
                    return None
                pos += 1
        if flexible:  # topic tagged fields: none
            if pos >= end or d[pos] != 0:
                return None
            pos += 1
        topics.append((name, partitions))
    if flexible:  # request tagged fields: none
        if pos >= end or d[pos] != 0:
            return None
        pos += 1
    if pos != end:
        return None
    return version, correlation_id, client_id, acks, timeout_ms, topics


cdef inline Py_ssize_t _put_i16(char *out, Py_ssize_t p, int16_t v) noexcept nogil:
    out[p] = <char>((v >> 8) & 0xFF)
    out[p + 1] = <char>(v & 0xFF)
    return p + 2


cdef inline Py_ssize_t _put_i32(char *out, Py_ssize_t p, int32_t v) noexcept nogil:
    cdef uint32_t u = <uint32_t>v
    out[p] = <char>(u >> 24)
    out[p + 1] = <char>((u >> 16) & 0xFF)
    out[p + 2] = <char>((u >> 8) & 0xFF)
    out[p + 3] = <char>(u & 0xFF)
    return p + 4


cdef inline Py_ssize_t _put_i64(char *out, Py_ssize_t p, int64_t v) noexcept nogil:
    cdef uint64_t u = <uint64_t>v
    cdef int i
    for i in range(8):
        out[p + i] = <char>((u >> (56 - 8 * i)) & 0xFF)
    return p + 8


cdef inline Py_ssize_t _put_uvarint(char *out, Py_ssize_t p, uint64_t v) noexcept nogil:
    while v >= 0x80:
        out[p] = <char>((v & 0x7F) | 0x80)
        v >>= 7
        p += 1
    out[p] = <char>v
    return p + 1


def encode_plain_produce_response(int version, int32_t correlation_id, list topics):
    """The framed Produce response of `version` in which every partition succeeded:
    topics as [(name, [(index, base offset, log start offset), ...]), ...]."""
    cdef bint flexible = version >= FLEXIBLE_FROM
    cdef Py_ssize_t size = 4 + 4 + 1 + 5 + 4 + 1  # prefix, correlation, tags, count, throttle, tags
    cdef Py_ssize_t per_partition = 4 + 2 + 8 + 8 + (8 if version >= 5 else 0) \
        + ((5 + 2 + 1) if version >= 8 else 0)
    encoded = []
    for name, partitions in topics:
        raw_name = (<str>name).encode("utf-8")
        encoded.append((raw_name, partitions))
        size += 5 + len(raw_name) + 5 + 1 + per_partition * len(partitions)
    out_obj = PyBytes_FromStringAndSize(NULL, size)
    cdef char *out = PyBytes_AS_STRING(out_obj)
    cdef Py_ssize_t p = 4
    cdef Py_ssize_t name_len
    cdef const unsigned char *name_data
    p = _put_i32(out, p, correlation_id)
    if flexible:
        p = _put_uvarint(out, p, 0)  # response header tagged fields
        p = _put_uvarint(out, p, len(encoded) + 1)
    else:
        p = _put_i32(out, p, len(encoded))
    for raw_name, partitions in encoded:
        name_len = len(<bytes>raw_name)
        if flexible:
            p = _put_uvarint(out, p, name_len + 1)
        else:
            p = _put_i16(out, p, <int16_t>name_len)
        memcpy(out + p, PyBytes_AS_STRING(raw_name), name_len)
        p += name_len
        if flexible:
            p = _put_uvarint(out, p, len(<list>partitions) + 1)
        else:
            p = _put_i32(out, p, len(<list>partitions))
        for index, base_offset, log_start_offset in partitions:
            p = _put_i32(out, p, <int32_t>index)
            p = _put_i16(out, p, 0)  # error code
            p = _put_i64(out, p, <int64_t>base_offset)
            p = _put_i64(out, p, -1)  # log append time: none (CreateTime)
            if version >= 5:
                p = _put_i64(out, p, <int64_t>log_start_offset)
            if version >= 8:
                if flexible:
                    p = _put_uvarint(out, p, 1)  # record errors: empty
                    p = _put_uvarint(out, p, 0)  # error message: null
                    p = _put_uvarint(out, p, 0)  # tagged fields
                else:
                    p = _put_i32(out, p, 0)
                    p = _put_i16(out, p, -1)
        if flexible:
            p = _put_uvarint(out, p, 0)  # topic tagged fields
    p = _put_i32(out, p, 0)  # throttle time
    if flexible:
        p = _put_uvarint(out, p, 0)  # response tagged fields
    _put_i32(out, 0, <int32_t>(p - 4))
    return out_obj[:p]
