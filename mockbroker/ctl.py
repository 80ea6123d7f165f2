"""`mockbroker ctl`: the control API from a shell, for scripts and CI.

    mockbroker ctl [--url URL] VERB [VALUE ...] [NAME=VALUE ...]

Theory of operation: every verb of the control API (mockbroker.control.api.ControlAPI.VERBS)
is a POST /<verb> with a JSON object; this turns a command line into that object and prints
the JSON answer. Positional values fill the verb's parameters in their order (so
`ctl elect-leader orders 0` is {"topic": "orders", "partition": 0}), NAME=VALUE sets one by
name; a value that parses as JSON (numbers, true/false, null, lists, objects) is sent as that,
anything else as a string. `ctl wait NAME ...` is `ctl wait-NAME ...`; `ctl health` is
GET /health. The URL is --url or MOCKBROKER_CONTROL_URL (the READY line's control=).

Exit codes: 0 the verb succeeded (its JSON on stdout); 1 the control API refused it (the
status and reason on stderr: 404 unknown topic, 408 a wait timed out, ...) or could not be
reached; 2 a bad command line (unknown verb, too many values, no URL).
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

URL_ENV = "MOCKBROKER_CONTROL_URL"
HTTP_MARGIN_S = 30.0  # beyond a wait verb's own timeout
USAGE = ("usage: mockbroker ctl [--url URL] VERB [VALUE ...] [NAME=VALUE ...]\n"
         "       mockbroker ctl wait CONDITION [VALUE ...] [NAME=VALUE ...]\n"
         "       mockbroker ctl health")


class UsageError(Exception):
    """A bad command line (exit code 2)."""


def _verb_parameters() -> dict[str, list[str]]:
    """Every verb's parameter names, in order, from the control API itself."""
    from mockbroker.control.api import ControlAPI

    return {verb: list(inspect.signature(getattr(ControlAPI, method)).parameters)[1:]
            for verb, method in ControlAPI.VERBS.items()}


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def build_request(words: list[str]) -> tuple[str, str, dict[str, Any] | None]:
    """(method, path, JSON body) for a command line after `ctl` and its options."""
    if not words:
        raise UsageError("give a verb, e.g. `mockbroker ctl state`")
    verb, rest = words[0], words[1:]
    if verb == "health":
        if rest:
            raise UsageError("health takes no values")
        return "GET", "/health", None
    if verb == "wait":
        if not rest:
            raise UsageError("give a condition, e.g. `mockbroker ctl wait group-stable g 2`")
        verb, rest = f"wait-{rest[0]}", rest[1:]
    parameters = _verb_parameters()
    names = parameters.get(verb)
    if names is None:
        raise UsageError(f"unknown verb {verb!r}; verbs: health, {', '.join(parameters)}")
    body: dict[str, Any] = {}
    positional = [w for w in rest if "=" not in w or w.startswith(("{", "["))]
    if len(positional) > len(names):
        raise UsageError(f"{verb} takes at most {len(names)} value(s) "
                         f"({', '.join(names) or 'none'}), got {len(positional)}")
    body.update(zip(names, (_value(w) for w in positional), strict=False))
    for word in rest:
        if word in positional:
            continue
        name, _, text = word.partition("=")
        if name not in names:
            raise UsageError(f"{verb} has no field {name!r}; fields: {', '.join(names)}")
        body[name] = _value(text)
    return "POST", f"/{verb}", body


def _timeout(body: dict[str, Any] | None) -> float:
    timeout_ms = (body or {}).get("timeout_ms")
    if isinstance(timeout_ms, int) and not isinstance(timeout_ms, bool) and timeout_ms > 0:
        return timeout_ms / 1000 + HTTP_MARGIN_S
    return 600 + HTTP_MARGIN_S  # a wait without a timeout uses the verb's default


def main(argv: list[str]) -> int:
    args = list(argv)
    url = os.environ.get(URL_ENV)
    if args[:1] == ["--url"]:
        if len(args) < 2:
            print(f"mockbroker ctl: --url needs a value\n{USAGE}", file=sys.stderr)
            return 2
        url, args = args[1], args[2:]
    elif args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        print(__doc__.split("\n\n", 2)[2] if __doc__ else "")
        return 0
    if not url:
        print(f"mockbroker ctl: give --url URL or set {URL_ENV} (the READY line's control=)\n"
              f"{USAGE}", file=sys.stderr)
        return 2
    try:
        method, path, body = build_request(args)
    except UsageError as exc:
        print(f"mockbroker ctl: {exc}\n{USAGE}", file=sys.stderr)
        return 2
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url.rstrip("/") + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=_timeout(body)) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as err:
        try:
            reason = json.loads(err.read()).get("error", err.reason)
        except ValueError:
            reason = err.reason
        print(f"mockbroker ctl: {err.code}: {reason}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"mockbroker ctl: cannot reach the control API at {url}: "
              f"{getattr(exc, 'reason', exc)}", file=sys.stderr)
        return 1
    print(json.dumps(answer, indent=2))
    return 0
