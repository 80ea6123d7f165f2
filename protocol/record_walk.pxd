# The C types of record_walk.py when Cython compiles it (pure Python mode): the .py is the
# code, this file only declares what its names are in C.
import cython
from libc.stdint cimport int64_t, uint64_t


@cython.final
cdef class _Reader:
    cdef const unsigned char[::1] data
    cdef Py_ssize_t pos
    cdef Py_ssize_t end

    @cython.locals(pos=Py_ssize_t, end=Py_ssize_t, value=uint64_t, shift=int, byte=uint64_t)
    cdef uint64_t uvarint(self, int bits) except? 0xFFFFFFFFFFFFFFFF


cdef int64_t _zigzag(uint64_t raw) noexcept

@cython.locals(reader=_Reader, end=Py_ssize_t, index=Py_ssize_t, record_end=Py_ssize_t,
               raw=uint64_t, length=int64_t, timestamp_delta=int64_t, max_delta=int64_t,
               max_index=Py_ssize_t, offset_delta_ok=bint, missing_key=bint,
               failed=Py_ssize_t)
cpdef tuple walk_records(const unsigned char[::1] data, Py_ssize_t pos, Py_ssize_t count,
                         bint require_keys, bint check_range, int64_t low, int64_t high,
                         int64_t no_timestamp_delta, bint every_record_fails,
                         Py_ssize_t max_failures)

@cython.locals(raw=uint64_t)
cdef int _skip_headers(_Reader reader, int64_t count, Py_ssize_t record_end,
                       Py_ssize_t index) except -1
