"""The codec's optional compiled extensions (built by ``make accel``), loaded by name.

``KAFKA_PROTOCOL_CODEC_PURE=1`` in the environment asks for the pure Python code only; an
extension that is not built is simply absent. Callers fall back to their pure code on None.

A module written in Cython's pure Python mode (a .py with a .pxd beside it) is one source
for both: ``import_pure_mode`` imports its compiled build when there is one and pure code is
not asked for, else runs the .py itself.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
from pathlib import Path
from types import ModuleType

PACKAGE = "kafka_protocol_codec"


def pure_requested() -> bool:
    """Whether KAFKA_PROTOCOL_CODEC_PURE asks for the pure Python code only."""
    return os.environ.get("KAFKA_PROTOCOL_CODEC_PURE", "") not in ("", "0")


def import_native(name: str) -> ModuleType | None:
    """``kafka_protocol_codec.<name>``, or None when not built or pure code is asked for."""
    if pure_requested():
        return None
    try:
        return importlib.import_module(f"{PACKAGE}.{name}")
    except ImportError:
        return None


def import_pure_mode(name: str, *, source: bool = False) -> ModuleType:
    """``kafka_protocol_codec.<name>``, a pure-mode module: its compiled build when Python
    finds one (extensions come before sources), else its .py. With ``source`` or
    KAFKA_PROTOCOL_CODEC_PURE=1 the .py runs as plain Python even when a build exists
    (loaded under its own name, not put in sys.modules)."""
    if not (source or pure_requested()):
        return importlib.import_module(f"{PACKAGE}.{name}")
    path = Path(__file__).with_name(f"{name}.py")
    loader = importlib.machinery.SourceFileLoader(f"{PACKAGE}.{name}", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def is_compiled(module: ModuleType) -> bool:
    """Whether `module` was loaded from an extension (its compiled build)."""
    return isinstance(getattr(module, "__loader__", None),
                      importlib.machinery.ExtensionFileLoader)
