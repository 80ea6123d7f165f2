"""The record walk's two builds for the validation tests: protocol/record_walk.py compiled
(when `make accel` built it) and the same file run as plain Python. One source, so these
tests check the compiled build's C typing against the Python semantics it must keep."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka_protocol_codec import validation
from kafka_protocol_codec.native import import_pure_mode, is_compiled

SOURCE = import_pure_mode("record_walk", source=True)
BUILT = import_pure_mode("record_walk")
BUILDS = {"python": SOURCE, "compiled": BUILT if is_compiled(BUILT) else None}


@pytest.fixture(scope="module", params=sorted(BUILDS))
def each_walk_build(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with validate_batch walking records with each build."""
    module = BUILDS[request.param]
    if module is None:
        pytest.skip("record_walk is not compiled (make accel)")
    saved = validation.use_record_walk(module)
    try:
        yield request.param
    finally:
        validation.use_record_walk(saved)
