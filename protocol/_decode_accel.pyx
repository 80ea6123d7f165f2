# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled decode plans: the optional fast path of ``Codec.decode`` (built by ``make accel``).

Theory of operation: ``accel.py`` turns a message's construct tree (structs.KStruct, the same
tree the generated Python reader is compiled from) into a ``StructPlan``: one ``Op`` per
member, in member order, saying how to read it (fixed-width integer, string, bytes, records,
UUID, array, struct) or which default it takes. ``read_plan`` interprets that plan in C over
the frame's bytes and builds the same objects as the generated reader: ``Struct`` dicts with
their keys in member order, lists, ``str``, ``bytes``, ``memoryview`` for records, UUIDs.

It proves or defers, like the record walker: any input that is not plainly well formed (a
read past the end, a negative or oversized length or count, a null where the field is not
nullable, a nullable-struct marker other than -1 or 1, a varint longer than 4 bytes, invalid
UTF-8) makes it return None, and the caller runs the generated Python reader, which decides
and words the error exactly as before. On what it accepts, it returns what that reader
returns.

Building each Struct is most of the cost of a message of many small structs (OffsetCommit's
partitions), so a plan also keeps a template: a dict of its keys, in member order, all None.
Each decode makes the Struct, gives it a copy of the template's key table (already sized,
keys in place), and stores each value read straight into the copy's entry for that key, in
order: no hash lookups, probing or resizing per field. On CPython 3.11 the copy is made here
the way CPython's own dict clone makes it, minus copying and referencing the None values; on
3.12, ``PyDict_Update`` into the empty Struct clones the table and the values replace the
Nones. The table layout is CPython's (3.11 and 3.12, checked at compile time); each plan
checks once, on a real copy, that every key sits where expected, and each decode checks the
tables it copies. Elsewhere, and for empty structs, members go in by ``PyDict_SetItem``.
"""

from cpython.bytearray cimport (PyByteArray_AS_STRING, PyByteArray_CheckExact,
                                PyByteArray_FromStringAndSize, PyByteArray_GET_SIZE)
from cpython.bytes cimport (PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize,
                            PyBytes_GET_SIZE)
from cpython.dict cimport PyDict_SetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.memoryview cimport PyMemoryView_FromObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t, int8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

# Op kinds
DEF K_DEFAULT = 0        # absent at this version: a shared immutable default
DEF K_FACTORY = 1        # absent at this version: a fresh default from default()
DEF K_BOOL = 2
DEF K_INT8 = 3
DEF K_INT16 = 4
DEF K_UINT16 = 5
DEF K_INT32 = 6
DEF K_UINT32 = 7
DEF K_INT64 = 8
DEF K_FLOAT64 = 9
DEF K_UUID = 10
DEF K_STRING = 11
DEF K_BYTES = 12
DEF K_RECORDS = 13
DEF K_ARRAY = 14
DEF K_STRUCT = 15
DEF K_NULLABLE_STRUCT = 16

KINDS = {
    "default": K_DEFAULT, "factory": K_FACTORY, "bool": K_BOOL, "int8": K_INT8,
    "int16": K_INT16, "uint16": K_UINT16, "int32": K_INT32, "uint32": K_UINT32,
    "int64": K_INT64, "float64": K_FLOAT64, "uuid": K_UUID, "string": K_STRING,
    "bytes": K_BYTES, "records": K_RECORDS, "array": K_ARRAY, "struct": K_STRUCT,
    "nullable_struct": K_NULLABLE_STRUCT,
}


cdef class Op:
    """How to read one member (or one array element: ``key`` None)."""

    cdef public int kind
    cdef public object key
    cdef public bint compact
    cdef public bint nullable
    cdef public object default      # K_DEFAULT: the value; K_FACTORY: a zero-argument callable
    cdef public Op element          # K_ARRAY: the element
    cdef public StructPlan plan     # K_STRUCT, K_NULLABLE_STRUCT

    def __init__(self, str kind, key=None, bint compact=False, bint nullable=False,
                 default=None, Op element=None, StructPlan plan=None):
        self.kind = KINDS[kind]
        self.key = key
        self.compact = compact
        self.nullable = nullable
        self.default = default
        self.element = element
        self.plan = plan


cdef extern from *:
    """
    typedef struct {
        PyObject *me_key;
        PyObject *me_value;
    } kpc_str_entry;

    #if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
    /* CPython's combined dict key table with str keys (Objects/dictobject.c, 3.11 and 3.12):
       a header, the hash index, then (key, value) entries in insertion order. */
    typedef struct {
        Py_ssize_t dk_refcnt;
        uint8_t dk_log2_size;
        uint8_t dk_log2_index_bytes;
        uint8_t dk_kind;
        uint32_t dk_version;
        Py_ssize_t dk_usable;
        Py_ssize_t dk_nentries;
        char dk_indices[];
    } kpc_dict_keys;

    /* The entries of a dict whose key table is its own, combined, str-keyed, and holds
       exactly n entries (a fresh clone of a template of n keys); NULL otherwise. */
    static inline kpc_str_entry *kpc_entries(PyObject *d, Py_ssize_t n) {
        PyDictObject *mp = (PyDictObject *)d;
        kpc_dict_keys *keys = (kpc_dict_keys *)mp->ma_keys;
        if (mp->ma_values != NULL || mp->ma_used != n || keys->dk_refcnt != 1
                || keys->dk_kind != 1 || keys->dk_nentries != n) {
            return NULL;
        }
        return (kpc_str_entry *)(keys->dk_indices + ((size_t)1 << keys->dk_log2_index_bytes));
    }
    #else
    static inline kpc_str_entry *kpc_entries(PyObject *d, Py_ssize_t n) {
        return NULL;
    }
    #endif

    #if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
    /* CPython 3.11: the clone made here, as dict_merge's clone_combined_dict_keys makes it
       (one allocation of the table's full size, header and hash index copied), except that
       the values start NULL, to be filled, instead of being copied and referenced. The
       fresh dict d gives up the shared empty table it was born with (a plain counted
       reference in 3.11). Returns d's entries, or NULL with d untouched. */
    static kpc_str_entry *kpc_clone(PyObject *d, PyObject *template_dict, Py_ssize_t n) {
        PyDictObject *mp = (PyDictObject *)d;
        kpc_dict_keys *empty = (kpc_dict_keys *)mp->ma_keys;
        kpc_dict_keys *src = (kpc_dict_keys *)((PyDictObject *)template_dict)->ma_keys;
        size_t head = sizeof(kpc_dict_keys) + ((size_t)1 << src->dk_log2_index_bytes);
        size_t usable = (((size_t)1 << src->dk_log2_size) << 1) / 3;
        kpc_dict_keys *keys;
        kpc_str_entry *from, *to;
        Py_ssize_t i;
        if (mp->ma_used != 0 || mp->ma_values != NULL || empty->dk_nentries != 0
                || empty->dk_refcnt < 2 || src->dk_kind != 1 || src->dk_nentries != n) {
            return NULL;
        }
        keys = (kpc_dict_keys *)PyObject_Malloc(head + usable * sizeof(kpc_str_entry));
        if (keys == NULL) {
            return NULL;
        }
        memcpy(keys, src, head);
        keys->dk_refcnt = 1;
        keys->dk_version = 0;
        from = (kpc_str_entry *)((char *)src + head);
        to = (kpc_str_entry *)((char *)keys + head);
        for (i = 0; i < n; i++) {
            Py_INCREF(from[i].me_key);
            to[i].me_key = from[i].me_key;
            to[i].me_value = NULL;
        }
        empty->dk_refcnt--;
        mp->ma_keys = (PyDictKeysObject *)keys;
        mp->ma_used = n;
        return to;
    }
    #else
    /* Elsewhere: CPython's own clone (PyDict_Update into the empty dict), values None. */
    static kpc_str_entry *kpc_clone(PyObject *d, PyObject *template_dict, Py_ssize_t n) {
        if (PyDict_Update(d, template_dict) < 0) {
            PyErr_Clear();
            return NULL;
        }
        return kpc_entries(d, n);
    }
    #endif

    /* Entry i's value (NULL, or the template's None) gives way to value (a new reference
       taken). */
    static void kpc_fill_entry(kpc_str_entry *entries, Py_ssize_t i, PyObject *value) {
        PyObject *old = entries[i].me_value;
        Py_INCREF(value);
        entries[i].me_value = value;
        Py_XDECREF(old);
    }

    /* A fresh 1-D byte memoryview narrowed to n bytes from start, as slicing does. */
    static void kpc_narrow_view(PyObject *view, Py_ssize_t start, Py_ssize_t n) {
        Py_buffer *b = PyMemoryView_GET_BUFFER(view);
        b->buf = (char *)b->buf + start;
        b->len = n;
        b->shape[0] = n;
    }

    static PyObject *kpc_new_struct(PyObject *type, PyObject *no_args) {
        return ((PyTypeObject *)type)->tp_new((PyTypeObject *)type, no_args, NULL);
    }
    """
    ctypedef struct kpc_str_entry:
        PyObject *me_key
        PyObject *me_value
    kpc_str_entry *kpc_entries(object d, Py_ssize_t n)
    kpc_str_entry *kpc_clone(object d, object template_dict, Py_ssize_t n)
    void kpc_fill_entry(kpc_str_entry *entries, Py_ssize_t i, object value)
    object kpc_new_struct(object struct_type, object no_args)
    void kpc_narrow_view(object view, Py_ssize_t start, Py_ssize_t n)


cdef tuple _NO_ARGS = ()


cdef class StructPlan:
    """A struct at one version: its members' ops, then (flexible) the tagged section."""

    cdef public type struct_type
    cdef readonly tuple ops
    cdef public bint flexible
    cdef public dict tags           # known tag number -> Op (its key is the member name)
    cdef dict template              # member name -> None, in member order (see the docstring)
    cdef readonly bint fills_entries  # values go straight into a copy of the template's table
    cdef unsigned char *kinds       # ops[i].kind, side by side: read without touching the Ops

    def __init__(self, type struct_type, tuple ops, bint flexible, dict tags,
                 bint fill_entries=True):
        cdef Py_ssize_t i
        self.struct_type = struct_type
        self.ops = ops
        self.kinds = <unsigned char *>PyMem_Malloc(len(ops) + 1)
        if self.kinds == NULL:
            raise MemoryError()
        for i in range(len(ops)):
            self.kinds[i] = (<Op>ops[i]).kind
        self.flexible = flexible
        self.tags = tags
        # A table built by update() into an empty dict is sized for its keys, as a clone
        # source must be. (fill_entries=False: PyDict_SetItem only, for tests to compare.)
        self.template = {}
        self.template.update(dict.fromkeys([(<Op>op).key for op in ops]))
        self.fills_entries = (fill_entries and len(self.template) == len(ops) > 0
                              and self._entries_in_order())

    def __dealloc__(self):
        PyMem_Free(self.kinds)

    cdef bint _entries_in_order(self):
        """Whether a clone of the template puts key i at entry i (checked once, on a real one)."""
        cdef object probe = kpc_new_struct(self.struct_type, _NO_ARGS)
        cdef Py_ssize_t i, n = len(self.ops)
        cdef kpc_str_entry *entries = kpc_clone(probe, self.template, n)
        cdef bint in_order = entries != NULL
        if entries == NULL:
            return False
        for i in range(n):
            if entries[i].me_key != <PyObject *>(<Op>self.ops[i]).key:
                in_order = False
            if entries[i].me_value != NULL and entries[i].me_value != <PyObject *>None:
                in_order = False
            kpc_fill_entry(entries, i, None)  # a whole dict again before it goes
        return in_order


class _Defer(Exception):
    """Raised inside the interpreter: this input is for the Python reader to judge."""


cdef object _uuid_type = None
cdef object _safe_unknown = None


cdef extern from "Python.h":
    int PyObject_GenericSetAttr(object o, object name, object value) except -1
    object _PyLong_FromByteArray(const unsigned char *data, size_t n, int little_endian,
                                 int is_signed)


def set_uuid_type(uuid_type, safe_unknown):
    """uuid.UUID and uuid.SafeUUID.unknown, for building UUIDs as structs.rt_new_uuid does."""
    global _uuid_type, _safe_unknown
    _uuid_type = uuid_type
    _safe_unknown = safe_unknown


cdef object _uuid(const unsigned char *data):
    """The same object as UUID(bytes=...), without UUID.__init__'s argument checks (as
    structs.rt_new_uuid): the two slots set directly (UUID's own __setattr__ refuses)."""
    cdef type uuid_type = _uuid_type
    cdef object value = uuid_type.__new__(uuid_type)
    PyObject_GenericSetAttr(value, "int", _PyLong_FromByteArray(data, 16, 0, 0))
    PyObject_GenericSetAttr(value, "is_safe", _safe_unknown)
    return value


cdef struct Cursor:
    const unsigned char *p
    Py_ssize_t pos
    Py_ssize_t end
    PyObject **frame_view  # one memoryview of the whole frame, made at its first records field


cdef inline int _need(Cursor *c, Py_ssize_t n) except -1:
    if n < 0 or n > c.end - c.pos:
        raise _Defer()
    return 0


cdef inline uint64_t _uvarint(Cursor *c) except? 0xFFFFFFFFFFFFFFFF:
    """An unsigned varint of at most 4 bytes (28 bits: every length and count we accept)."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef int i
    cdef unsigned char byte
    for i in range(4):
        if c.pos >= c.end:
            raise _Defer()
        byte = c.p[c.pos]
        c.pos += 1
        result |= (<uint64_t>(byte & 0x7F)) << shift
        if byte < 0x80:
            return result
        shift += 7
    raise _Defer()


cdef inline uint64_t _be(Cursor *c, int size) except? 0xFFFFFFFFFFFFFFFF:
    cdef uint64_t value = 0
    cdef int i
    _need(c, size)
    for i in range(size):
        value = (value << 8) | c.p[c.pos + i]
    c.pos += size
    return value


cdef inline Py_ssize_t _length(Cursor *c, bint compact, bint legacy32) except -2:
    """A length or count: compact (uvarint N+1) or legacy (int16 for strings, int32
    otherwise); -1 means null. Other negative values defer."""
    cdef Py_ssize_t n
    if compact:
        n = <Py_ssize_t>_uvarint(c) - 1
    elif legacy32:
        n = <int32_t>_be(c, 4)
    else:
        n = <int16_t>_be(c, 2)
    if n < -1:
        raise _Defer()
    return n


cdef object _records_view(Cursor *c, object buf, Py_ssize_t start, Py_ssize_t n):
    """``memoryview(buf)[start:start + n]``, the same object made more cheaply: every records
    view of a frame shares one export of it (through the frame's first view) and is narrowed
    in place before anyone sees it, as memoryview slicing does, without a slice object."""
    cdef object view
    if c.frame_view[0] == NULL:
        view = PyMemoryView_FromObject(buf)
        Py_INCREF(view)
        c.frame_view[0] = <PyObject *>view
    view = PyMemoryView_FromObject(<object>c.frame_view[0])
    kpc_narrow_view(view, start, n)
    return view


cdef object _read_string(Op op, Cursor *c):
    cdef Py_ssize_t n = _length(c, op.compact, False)
    cdef Py_ssize_t start
    if n == -1:
        if not op.nullable:
            raise _Defer()
        return None
    _need(c, n)
    start = c.pos
    c.pos += n
    # invalid UTF-8 raises UnicodeDecodeError, which read_plan turns into a deferral
    return PyUnicode_DecodeUTF8(<const char *>c.p + start, n, NULL)


cdef object _read_bytes(Op op, Cursor *c, object buf):
    cdef Py_ssize_t n = _length(c, op.compact, True)
    cdef Py_ssize_t start
    if n == -1:
        if not op.nullable:
            raise _Defer()
        return None
    _need(c, n)
    start = c.pos
    c.pos += n
    if op.kind == K_RECORDS:
        return _records_view(c, buf, start, n)
    return PyBytes_FromStringAndSize(<const char *>c.p + start, n)


cdef object _read_array(Op op, Cursor *c, object buf):
    cdef Py_ssize_t n = _length(c, op.compact, True)
    cdef Py_ssize_t i
    cdef list items
    cdef object item
    cdef Op element = op.element
    cdef StructPlan plan
    if n == -1:
        if not op.nullable:
            raise _Defer()
        return None
    if n > c.end - c.pos:
        raise _Defer()
    items = PyList_New(n)
    if element.kind == K_INT32:  # replica lists, partition ids: read in one loop
        _need(c, 4 * n)
        for i in range(n):
            item = <int32_t>((<uint32_t>c.p[c.pos] << 24) | (<uint32_t>c.p[c.pos + 1] << 16)
                             | (<uint32_t>c.p[c.pos + 2] << 8) | c.p[c.pos + 3])
            c.pos += 4
            Py_INCREF(item)
            PyList_SET_ITEM(items, i, item)
    elif element.kind == K_STRUCT:  # partitions, topics, members: one plan for all
        plan = element.plan
        for i in range(n):
            item = _read_struct(plan, c, buf)
            Py_INCREF(item)
            PyList_SET_ITEM(items, i, item)
    else:
        for i in range(n):
            item = _read(element, c, buf)
            Py_INCREF(item)
            PyList_SET_ITEM(items, i, item)
    return items


cdef object _read(Op op, Cursor *c, object buf):
    """One member: fixed-width values here, the rest in their own functions (which keeps
    this one's frame small for the common case)."""
    cdef int kind = op.kind
    cdef uint64_t bits
    cdef double real
    if kind == K_INT32:
        return <int32_t>_be(c, 4)
    elif kind == K_INT16:
        return <int16_t>_be(c, 2)
    elif kind == K_INT64:
        return <int64_t>_be(c, 8)
    elif kind == K_STRING:
        return _read_string(op, c)
    elif kind == K_ARRAY:
        return _read_array(op, c, buf)
    elif kind == K_STRUCT:
        return _read_struct(op.plan, c, buf)
    elif kind == K_DEFAULT:
        return op.default
    elif kind == K_INT8:
        return <int8_t>_be(c, 1)
    elif kind == K_BOOL:
        return _be(c, 1) != 0
    elif kind == K_UINT16:
        return <uint16_t>_be(c, 2)
    elif kind == K_UINT32:
        return <uint32_t>_be(c, 4)
    elif kind == K_FLOAT64:
        bits = _be(c, 8)
        memcpy(&real, &bits, 8)
        return real
    elif kind == K_UUID:
        _need(c, 16)
        c.pos += 16
        return _uuid(c.p + c.pos - 16)
    elif kind == K_BYTES or kind == K_RECORDS:
        return _read_bytes(op, c, buf)
    elif kind == K_NULLABLE_STRUCT:
        bits = _be(c, 1)
        if bits == 0xFF:
            return None
        if bits != 1:
            raise _Defer()
        return _read_struct(op.plan, c, buf)
    elif kind == K_FACTORY:
        return op.default()
    raise _Defer()


cdef object _read_struct(StructPlan plan, Cursor *c, object buf):
    cdef object result = kpc_new_struct(plan.struct_type, _NO_ARGS)  # no __init__: no items
    cdef Op op
    cdef tuple ops = plan.ops
    cdef Py_ssize_t count, i, size, stop
    cdef Py_ssize_t n = PyTuple_GET_SIZE(ops)
    cdef uint64_t tag
    cdef Cursor inner
    cdef kpc_str_entry *entries = NULL
    cdef int kind
    if plan.fills_entries:
        entries = kpc_clone(result, plan.template, n)
    if entries != NULL:
        for i in range(n):
            # the commonest members inline; the rest through _read
            kind = plan.kinds[i]
            if kind == K_INT32:
                kpc_fill_entry(entries, i, <int32_t>_be(c, 4))
            elif kind == K_INT64:
                kpc_fill_entry(entries, i, <int64_t>_be(c, 8))
            elif kind == K_INT16:
                kpc_fill_entry(entries, i, <int16_t>_be(c, 2))
            else:
                kpc_fill_entry(entries, i, _read(<Op>PyTuple_GET_ITEM(ops, i), c, buf))
    else:
        for i in range(n):
            op = <Op>PyTuple_GET_ITEM(ops, i)
            PyDict_SetItem(result, op.key, _read(op, c, buf))
    if plan.flexible:
        count = <Py_ssize_t>_uvarint(c)
        for i in range(count):
            tag = _uvarint(c)
            size = <Py_ssize_t>_uvarint(c)
            _need(c, size)
            stop = c.pos + size
            if plan.tags:
                op = plan.tags.get(tag)
                if op is not None:
                    # A known tag reads from its own bytes, as the generated reader does.
                    inner.p = c.p
                    inner.pos = c.pos
                    inner.end = stop
                    inner.frame_view = c.frame_view
                    PyDict_SetItem(result, op.key, _read(op, &inner, buf))
            c.pos = stop
    return result


cdef inline Py_ssize_t _size(object buf) except -1:
    """The length of a frame given as bytes or as a bytearray (-1 with TypeError else)."""
    if PyBytes_CheckExact(buf):
        return PyBytes_GET_SIZE(buf)
    if PyByteArray_CheckExact(buf):
        return PyByteArray_GET_SIZE(buf)
    raise TypeError(f"a frame is bytes or a bytearray, not {type(buf).__name__}")


cdef object _run(StructPlan plan, object buf, Cursor *c):
    """The struct at ``c.pos`` (the cursor ends past it), or None: the Python reader decides.
    A bytearray frame is read in place (nothing here runs code that could resize it) and its
    records fields are views of it, writable as it is."""
    cdef PyObject *frame_view = NULL
    c.end = _size(buf)
    if PyBytes_CheckExact(buf):
        c.p = <const unsigned char *>PyBytes_AS_STRING(buf)
    else:
        c.p = <const unsigned char *>PyByteArray_AS_STRING(buf)
    c.frame_view = &frame_view
    try:
        return _read_struct(plan, c, buf)
    except (_Defer, UnicodeDecodeError):
        return None
    finally:
        Py_XDECREF(frame_view)


def read_plan(StructPlan plan, object buf, Py_ssize_t pos):
    """(value, next position) of the struct at ``pos`` of a bytes or bytearray frame, or
    None: the Python reader decides."""
    cdef Cursor c
    if pos < 0 or pos > _size(buf):
        return None
    c.pos = pos
    value = _run(plan, buf, &c)
    if value is None:
        return None
    return value, c.pos


def decode_plan(StructPlan plan, object buf):
    """The struct at the start of ``buf`` (``read_plan`` without the position), or None."""
    cdef Cursor c
    c.pos = 0
    return _run(plan, buf, &c)


def frame_buffer(Py_ssize_t size):
    """A bytearray of ``size`` bytes, not zeroed: for a frame whose every byte is about to be
    received into it (framing.FrameReader; ``bytearray(size)`` zero-fills first, about 45 us
    per MiB here)."""
    if size < 0:
        raise ValueError("negative size")
    return PyByteArray_FromStringAndSize(NULL, size)
