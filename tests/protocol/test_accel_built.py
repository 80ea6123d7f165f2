"""`make test` builds the codec's compiled parts first (`make accel`) and sets
KAFKA_PROTOCOL_CODEC_REQUIRE_ACCEL=1, so a failed build fails here instead of quietly
skipping the tests that compare the compiled and the pure Python paths."""

from __future__ import annotations

import os

import pytest
from kafka_protocol_codec import accel, plain_produce, validation

REQUIRED = os.environ.get("KAFKA_PROTOCOL_CODEC_REQUIRE_ACCEL") == "1"


@pytest.mark.skipif(not REQUIRED, reason="only where the compiled parts are required")
def test_compiled_parts_are_built() -> None:
    assert accel.native is not None, "compiled decode plans missing: see build-accel.log"
    assert validation._load_accelerated_walk() is not None, \
        "compiled record walker missing: see build-accel.log"
    assert plain_produce.parse_plain_produce is not None, \
        "compiled plain Produce reader missing: see build-accel.log"
