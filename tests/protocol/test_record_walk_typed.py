"""The compiled record walk is compiled with its C types (record_walk.pxd): a build that
missed the declarations still imports and walks correctly, as untyped Python objects, at
about the pure Python speed. setup.py hands Cython the package's .pxd files under the
package's import name; this says that it found them."""

from __future__ import annotations

import pytest
from kafka_protocol_codec import validation
from kafka_protocol_codec.native import is_compiled


@pytest.mark.skipif(not is_compiled(validation._walk_module),
                    reason="the pure Python record walk runs (no compiled build)")
def test_the_compiled_record_walk_has_its_declared_c_types() -> None:
    reader = validation._walk_module._Reader
    # declared `cdef class` with a `cdef` method: no Python attribute of that name, and
    # instances without a __dict__ (an untyped build makes an ordinary Python class)
    assert not hasattr(reader, "uvarint"), "record_walk.pxd was not applied: see setup.py"
    assert not hasattr(reader(b"\x00", 0), "__dict__")
