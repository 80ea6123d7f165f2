"""Replace a marked section of the README with a benchmark's fresh results (--write)."""

from __future__ import annotations

import re
from pathlib import Path


def write_section(path: Path, start: str, end: str, text: str) -> None:
    """Put `text` between the `start` and `end` marker lines of `path`."""
    readme = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(start) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(readme):
        raise SystemExit(f"{path}: no {start} ... {end} section")
    path.write_text(pattern.sub(lambda _: f"{start}\n{text}{end}", readme), encoding="utf-8")
