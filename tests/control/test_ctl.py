"""`mockbroker ctl`: the control API from a shell, run as a script would run it.

A mockbroker CLI runs in one subprocess; every `mockbroker ctl ...` is another, and the test
checks its exit code, its JSON on stdout and its one-line reason on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.cli import start_cli, stop

CTL_TIMEOUT = 60


@pytest.fixture(scope="module")
def control_url() -> Iterator[str]:
    proc, fields = start_cli("--brokers", "3")
    try:
        yield fields["control"]
    finally:
        stop(proc)


def ctl(*words: str, url: str | None = None,
        env: dict[str, str] | None = None) -> tuple[int, Any, str]:
    """(exit code, parsed stdout or None, stderr) of one `mockbroker ctl` run."""
    argv = [sys.executable, "-m", "mockbroker", "ctl"]
    if url is not None:
        argv += ["--url", url]
    clean = {k: v for k, v in os.environ.items() if k != "MOCKBROKER_CONTROL_URL"}
    result = subprocess.run([*argv, *words], capture_output=True, text=True,
                            timeout=CTL_TIMEOUT, env={**clean, **(env or {})}, check=False)
    out = json.loads(result.stdout) if result.stdout.strip() else None
    return result.returncode, out, result.stderr


def test_verbs_with_positional_and_named_values(control_url: str) -> None:
    code, created, _ = ctl("create-topic", "orders", "2", url=control_url)
    assert code == 0 and [p["partition"] for p in created["partitions"]] == [0, 1]
    code, moved, _ = ctl("elect-leader", "orders", "0", "broker=2", url=control_url)
    assert code == 0 and (moved["leader"], moved["leader_epoch"]) == (2, 1)
    code, fault, _ = ctl("inject-error", "Produce", "NOT_LEADER_OR_FOLLOWER", "topic=orders",
                         "count=3", url=control_url)
    assert code == 0 and (fault["api"], fault["count"], fault["topic"]) == (
        "Produce", 3, "orders")
    code, state, _ = ctl("state", url=control_url)
    assert code == 0 and list(state["topics"]) == ["orders"] and len(state["faults"]) == 1
    code, health, _ = ctl("health", env={"MOCKBROKER_CONTROL_URL": control_url})
    assert code == 0 and health == {"status": "ok", "brokers": 3, "brokers_up": 3}
    assert ctl("reset", url=control_url)[0] == 0


def test_waits_from_the_shell(control_url: str) -> None:
    assert ctl("create-topic", "w", url=control_url)[0] == 0
    code, fenced, _ = ctl("wait", "broker-fenced", "1", "fenced=false", url=control_url)
    assert code == 0 and fenced["observed"]["fenced"] is False
    code, out, err = ctl("wait", "topic-messages", "w", "1", "timeout_ms=200", url=control_url)
    assert (code, out) == (1, None)
    assert err.startswith("mockbroker ctl: 408: timed out after") and "to hold 1 message" in err
    assert ctl("reset", url=control_url)[0] == 0


def test_refusals_and_bad_command_lines(control_url: str) -> None:
    code, _, err = ctl("elect-leader", "nope", "0", url=control_url)
    assert code == 1 and err.strip() == "mockbroker ctl: 404: unknown topic 'nope'"
    code, _, err = ctl("frobnicate", url=control_url)
    assert code == 2 and "unknown verb 'frobnicate'" in err
    code, _, err = ctl("elect-leader", "a", "0", "1", "2", url=control_url)
    assert code == 2 and "takes at most 3 value(s)" in err
    code, _, err = ctl("elect-leader", "a", "0", "leader=1", url=control_url)
    assert code == 2 and "has no field 'leader'" in err
    code, _, err = ctl("state")
    assert code == 2 and "MOCKBROKER_CONTROL_URL" in err
    code, _, err = ctl("state", url="http://127.0.0.1:9")  # nothing listens on port 9
    assert code == 1 and "cannot reach the control API" in err
