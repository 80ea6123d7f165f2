"""Run the suite's Java programs (tests/jvm/src, compiled by `make jvm`) and read what they
observed.

A program prints one JSON object per line on standard output, `{"step": NAME, "ok": VALUE}`
or `{"step": NAME, "error": EXCEPTION_CLASS}`; the Kafka client's own log lines share the
stream and are skipped (an observation starts with `{`). Several programs run at once (one
JVM each, ~1 s to start): `start` returns the process, `observations` waits for it within a
bound, stops it by its PID when the bound passes, and returns the observations as
{step: outcome} in the order printed.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.support.real_kafka import java_command


def start(main_class: str, *args: str) -> subprocess.Popen[str]:
    """A JVM running `main_class` of the real-Kafka class path, its output piped."""
    return subprocess.Popen(java_command(main_class, *args), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def observations(process: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    """The program's observations once it exited (within `timeout` seconds, else it is
    killed); a program that failed raises with the end of its output."""
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate(timeout=30)
        raise AssertionError(f"{process.args[-3:]} did not finish within {timeout:.0f} s: "
                             f"{output[-4000:]}") from None
    if process.returncode != 0:
        raise AssertionError(f"{process.args[-3:]} exited {process.returncode}: "
                             f"{output[-4000:]}")
    observed: dict[str, Any] = {}
    for line in output.splitlines():
        if line.startswith("{"):
            item = json.loads(line)
            step = item.pop("step")
            assert step not in observed, f"step {step} observed twice"
            observed[step] = item
    return observed
