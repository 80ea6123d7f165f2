"""`make test` builds the codec's compiled parts first (`make accel`) and sets
KAFKA_PROTOCOL_CODEC_REQUIRE_ACCEL=1, so a failed build fails here instead of quietly
skipping the tests that run the compiled build of the record walk."""

from __future__ import annotations

import os

import pytest
from kafka_protocol_codec import validation
from kafka_protocol_codec.native import is_compiled

REQUIRED = os.environ.get("KAFKA_PROTOCOL_CODEC_REQUIRE_ACCEL") == "1"


@pytest.mark.skipif(not REQUIRED, reason="only where the compiled parts are required")
def test_compiled_parts_are_built() -> None:
    assert is_compiled(validation._walk_module), \
        "compiled record walk missing: see build-accel.log"

