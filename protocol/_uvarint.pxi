# Included by the compiled codec modules (Cython `include`): the one varint reader they share.

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
