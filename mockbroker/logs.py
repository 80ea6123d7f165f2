"""Log output: readable text or one JSON object per line, for the CLI.

Theory of operation: mockbroker logs through the standard logging module under the
"mockbroker" logger tree ("mockbroker.server", "mockbroker.control", "mockbroker.trace").
`setup(level, fmt)` installs one stderr handler on the root logger with either formatter:

- pretty: `2024-05-01T12:00:00.123Z INFO mockbroker.trace: broker=0 Produce v9 corr=7 ...`
- json:   `{"ts": "...", "level": "INFO", "logger": "mockbroker.trace", "msg": "...", ...}`
  with every extra field a log call attached merged in (the trace attaches its record as
  `trace`, whose fields become top-level keys: api, version, client_id, latency_ms, ...).

The trace logger gets level INFO when tracing logs lines, whatever `--log-level` says, so
`--trace` works without turning on every other INFO line.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, TextIO

FORMATS = ("pretty", "json")

# attributes every LogRecord has; anything else on a record came from `extra=`
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName"}


def _timestamp(created: float) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    return f"{seconds}.{int(created % 1 * 1000):03d}Z"


class PrettyFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record.created)} {record.levelname} {record.name}: " \
               f"{record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        import json  # only with --log-format json: not every start-up

        out: dict[str, Any] = {"ts": _timestamp(record.created), "level": record.levelname,
                               "logger": record.name, "msg": record.getMessage()}
        for key, value in vars(record).items():
            if key in _STANDARD:
                continue
            if key == "trace" and isinstance(value, dict):
                for field, item in value.items():  # (its "ts" is the line's)
                    out.setdefault(field, item)
            else:
                out.setdefault(key, value)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, separators=(",", ":"))


def setup(level: str = "WARNING", fmt: str = "pretty", *, trace: bool = False,
          stream: TextIO | None = None) -> None:
    """Install the handler on the root logger (replacing earlier ones)."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == "json" else PrettyFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    if trace:
        logging.getLogger("mockbroker.trace").setLevel(logging.INFO)
