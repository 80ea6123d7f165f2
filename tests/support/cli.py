"""The mockbroker CLI as a subprocess, and its HTTP control API, for tests that use them the
way a script in another language would (no mockbroker module imported here).

`start_cli` waits (bounded) for the READY line and returns its fields; `await_ready` finds the
READY line among other output of a process started otherwise; `stop` ends a process this
test started, by its handle; `http_json` sends one request to the control API and
returns the status and the decoded JSON answer, error statuses included.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import IO, Any

READY_TIMEOUT = 30.0
HTTP_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


def read_line(stream: IO[str] | None, timeout: float = READY_TIMEOUT) -> str:
    """One line from a pipe, or "" when none comes within `timeout`."""
    assert stream is not None
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return line[0] if line else ""


def ready_fields(line: str) -> dict[str, str]:
    """`READY bootstrap=... control=...` as {"bootstrap": ..., "control": ...}."""
    assert line.startswith("READY "), f"no READY line: {line!r}"
    return dict(field.split("=", 1) for field in line.split()[1:])


def await_ready(proc: subprocess.Popen[str], timeout: float = READY_TIMEOUT) -> str | None:
    """The READY line of `proc`'s output (other lines before it are skipped), or None when
    the process ends or `timeout` passes first. Its stdout is drained for as long as it
    lives, so later output never blocks it on a full pipe."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or ()],
                     daemon=True).start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        if line.startswith("READY "):
            return line
    return None


def start_cli(*flags: str, env: dict[str, str] | None = None,
              stderr: int | None = subprocess.DEVNULL
              ) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """`python -m mockbroker FLAGS` and the fields of its READY line (stopped on failure)."""
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", *flags],
                            stdout=subprocess.PIPE, stderr=stderr, text=True,
                            env={**os.environ, **(env or {})})
    line = read_line(proc.stdout)
    try:
        return proc, ready_fields(line)
    except AssertionError:
        stop(proc)
        raise


def stop(proc: subprocess.Popen[Any]) -> None:
    """Terminate a process this test started; kill it if it does not end in time."""
    proc.terminate()
    try:
        proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(STOP_TIMEOUT)


def http_json(url: str, method: str = "GET", body: Any = None, *, raw: bytes | None = None,
              timeout: float = HTTP_TIMEOUT) -> tuple[int, Any]:
    """(status, decoded JSON) of one control API request; 4xx answers are returned too.
    `body` is sent as JSON, `raw` as it is (for malformed-body tests)."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def free_port_base(count: int) -> int:
    """A port P with P..P+count-1 free now (bounded attempts)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count > 65535:
            continue
        sockets = []
        try:
            for offset in range(count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", base + offset))
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise AssertionError("no run of free ports found")
