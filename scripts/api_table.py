"""The README's table of implemented APIs, generated from the handler registry.

    .venv/bin/python scripts/api_table.py                    # print the table
    .venv/bin/python scripts/api_table.py --check README.md  # exit 1 if README's table differs
    .venv/bin/python scripts/api_table.py --write README.md  # rewrite README's table

The table lives in README.md between the lines `<!-- api-table:start -->` and
`<!-- api-table:end -->`. Its rows are what the broker advertises in ApiVersions
(`advertised_versions()`, built from REGISTRY), so the README cannot claim an API the broker
does not handle, nor miss one it does. The check compares cell by cell, so column padding
and blank lines inside the markers do not matter.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

START = "<!-- api-table:start -->"
END = "<!-- api-table:end -->"
HEADER = ["| Key | API | Versions |", "|---:|---|---|"]


class MarkerError(ValueError):
    """README has no well-formed api-table section."""


def table_rows() -> list[tuple[int, str, str]]:
    """(api key, API name, version range) for every API the broker handles, by key."""
    from kafka_protocol_codec import api

    from mockbroker.handlers import REGISTRY, advertised_versions

    rows = []
    for key, low, high in advertised_versions():
        assert key in REGISTRY
        rows.append((key, api(key).name, str(low) if low == high else f"{low}\u2013{high}"))
    return rows


def generate() -> str:
    """The markdown table (header included), one line per row, ending with a newline."""
    lines = list(HEADER)
    lines += [f"| {key} | {name} | {versions} |" for key, name, versions in table_rows()]
    return "\n".join(lines) + "\n"


def _section_bounds(text: str) -> tuple[int, int]:
    """Offsets of the text strictly between the markers (after START's line, before END)."""
    starts = [m.start() for m in re.finditer(re.escape(START), text)]
    ends = [m.start() for m in re.finditer(re.escape(END), text)]
    if not starts or not ends:
        missing = " and ".join(m for m, found in ((START, starts), (END, ends)) if not found)
        raise MarkerError(f"marker {missing} not found")
    if len(starts) > 1 or len(ends) > 1:
        raise MarkerError(f"expected exactly one {START} and one {END}")
    if ends[0] < starts[0]:
        raise MarkerError(f"{END} comes before {START}")
    body_start = text.find("\n", starts[0])
    body_start = len(text) if body_start < 0 else body_start + 1
    line_start = text.rfind("\n", 0, ends[0]) + 1
    if body_start > line_start:
        raise MarkerError(f"{START} and {END} must be on separate lines")
    return body_start, line_start


def current_section(text: str) -> str:
    begin, end = _section_bounds(text)
    return text[begin:end]


def replace_section(text: str, table: str) -> str:
    begin, end = _section_bounds(text)
    return text[:begin] + table + text[end:]


def _normalize(section: str) -> list[tuple[str, ...]]:
    """Rows as tuples of stripped cells; alignment rows as dashes; blank lines dropped."""
    rows = []
    for line in section.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("|"):
            cells = tuple(c.strip() for c in line.strip("|").split("|"))
            if all(re.fullmatch(r":?-+:?", c) for c in cells):
                cells = tuple(re.sub("-+", "-", c) for c in cells)
            rows.append(cells)
        else:
            rows.append((line,))
    return rows


def differences(text: str, table: str | None = None) -> list[str]:
    """A unified diff of README's section against the generated table; [] when they agree.
    Raises MarkerError when the section is missing or malformed."""
    table = generate() if table is None else table
    section = current_section(text)
    if _normalize(section) == _normalize(table):
        return []
    return list(difflib.unified_diff(section.splitlines(), table.splitlines(),
                                     "README (current)", "generated", lineterm=""))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Generate the README's table of implemented APIs.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", metavar="README", type=Path,
                      help="exit 1 if the table between the markers differs")
    mode.add_argument("--write", metavar="README", type=Path,
                      help="rewrite the table between the markers")
    args = p.parse_args(argv)
    table = generate()
    if args.check is None and args.write is None:
        sys.stdout.write(table)
        return 0
    path = args.check or args.write
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"{path}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        return 1
    try:
        if args.write is not None:
            new = replace_section(text, table)
            if new != text:
                path.write_text(new, encoding="utf-8")
                print(f"{path}: API table updated", file=sys.stderr)
            return 0
        diff = differences(text, table)
    except MarkerError as exc:
        print(f"{path}: {exc}; put the table between a line {START} and a line {END}",
              file=sys.stderr)
        return 1
    if diff:
        print(f"{path}: the API table differs from the handler registry; run "
              f"`.venv/bin/python scripts/api_table.py --write {path}`", file=sys.stderr)
        print("\n".join(diff), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
