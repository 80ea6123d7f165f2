"""`make test` builds the codec's compiled parts first (`make accel`) and sets
KAFKA_PROTOCOL_CODEC_REQUIRE_ACCEL=1, so a failed build fails here instead of quietly
skipping the tests that compare the compiled and the pure Python paths."""

from __future__ import annotations

import os
import types

import pytest
from kafka_protocol_codec import accel, framing, structs, validation
from kafka_protocol_codec.native import is_compiled

REQUIRED = os.environ.get("KAFKA_PROTOCOL_CODEC_REQUIRE_ACCEL") == "1"


@pytest.mark.skipif(not REQUIRED, reason="only where the compiled parts are required")
def test_compiled_parts_are_built() -> None:
    assert accel.native is not None, "compiled decode plans missing: see build-accel.log"
    assert is_compiled(validation._walk_module), \
        "compiled record walk missing: see build-accel.log"


def test_an_extension_built_from_an_older_source_is_left_unused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A _decode_accel built before its plans read bytearray frames (it has no frame_buffer)
    would refuse every received frame: decoding stays pure Python until it is rebuilt."""
    stale = types.ModuleType("kafka_protocol_codec._decode_accel")
    stale.read_plan = stale.decode_plan = lambda *args: None  # type: ignore[attr-defined]
    monkeypatch.setattr(accel, "import_native", lambda name: stale)
    before = (structs.read_plan, structs.decode_plan, framing.new_frame_buffer)
    assert accel._load() is None
    assert (structs.read_plan, structs.decode_plan, framing.new_frame_buffer) == before
