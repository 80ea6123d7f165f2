"""The codec's optional compiled extensions (built by ``make accel``), loaded by name.

``KAFKA_PROTOCOL_CODEC_PURE=1`` in the environment asks for the pure Python code only; an
extension that is not built is simply absent. Callers fall back to their pure code on None.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def import_native(name: str) -> ModuleType | None:
    """``kafka_protocol_codec.<name>``, or None when not built or pure code is asked for."""
    if os.environ.get("KAFKA_PROTOCOL_CODEC_PURE", "") not in ("", "0"):
        return None
    try:
        return importlib.import_module(f"kafka_protocol_codec.{name}")
    except ImportError:
        return None
