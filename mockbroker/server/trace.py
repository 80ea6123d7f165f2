"""The request trace: one record per request and its response, kept and optionally logged.

Theory of operation: tracing is off unless a Tracer is installed on the cluster's
ServerHooks (`hooks.trace`). Off, a connection reads that attribute once per frame and
handles the frame exactly as before: nothing is decoded, timed or formatted for the trace.
On, the connection opens a `Span` per frame (header fields peeked from the frame), fills in
the decoded request's client id, topics and group, and the response body it wrote (or how
the exchange ended: no response for acks=0, an injected disconnect, a closed connection and
why), and hands it back to `Tracer.finish`, which

- turns it into a `TraceRecord`: the API, version, client id, correlation id, broker, peer,
  latency (from the frame's arrival to its response being written) and the non-zero error
  codes found anywhere in the response (top level, per topic, per partition), with counts;
- appends it to a ring buffer of the last `buffer` records (the control API's `trace`
  verb, GET /trace, and the pytest plugin's per-test trace read it; each record has an
  increasing `seq`, so a reader can ask for what came after a point);
- when `log` is set, and the API passes the `apis` filter, logs it as one INFO line on the
  "mockbroker.trace" logger: readable text, with the record's fields attached to the log
  record as `trace` for the JSON formatter (mockbroker.logs).

Everything runs on the cluster's event loop; readers from other threads go through it.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_protocol_codec import CodecError, api
from kafka_protocol_codec.error_codes import ErrorCode
from kafka_protocol_codec.framing import peek_request_header

log = logging.getLogger("mockbroker.trace")

DEFAULT_BUFFER = 1000
MAX_BUFFER = 1_000_000
MAX_TOPICS = 5  # topics named per record; more are counted
_MAX_DEPTH = 6  # response nesting walked for error codes (Fetch: 3)


def api_label(key: int | None) -> str:
    if key is None:
        return "?"
    try:
        return api(key).name
    except CodecError:
        return f"api_key={key}"


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"ERROR_{code}"


@dataclass(slots=True)
class Span:
    """One exchange in progress, filled in by the connection."""

    broker: int
    peer: str
    start: float  # perf_counter at arrival
    api_key: int | None = None
    version: int | None = None
    correlation_id: int | None = None
    client_id: str | None = None
    topics: list[str] = field(default_factory=list)
    group: str | None = None
    response: Mapping[str, Any] | None = None
    outcome: str = "ok"  # ok | no response | injected <fault> | closed: <reason>
    principal: str | None = None  # on a TLS or SASL listener: who sent it

    def request(self, client_id: str | None, body: Mapping[str, Any]) -> None:
        """Note what the decoded request says: client id, topics, group."""
        self.client_id = client_id
        self.topics = _topics(body)
        group = body.get("group_id")
        if isinstance(group, str):
            self.group = group


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One traced request: who sent what to which broker, how it was answered and how long
    it took."""

    seq: int
    ts: float  # seconds since the epoch, when the response was written
    broker: int
    peer: str
    client_id: str | None
    api: str
    api_key: int | None
    version: int | None
    correlation_id: int | None
    latency_ms: float
    outcome: str
    errors: dict[str, int]  # error name -> how many times it is in the response
    topics: list[str]
    group: str | None
    principal: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """The one-line text form."""
        parts = [f"broker={self.broker}", f"{self.api} v{self.version}",
                 f"corr={self.correlation_id}", f"client={self.client_id!r}",
                 f"peer={self.peer}"]
        if self.topics:
            parts.append("topics=" + ",".join(self.topics))
        if self.group is not None:
            parts.append(f"group={self.group}")
        if self.principal is not None:
            parts.append(f"principal={self.principal}")
        parts.append(f"{self.latency_ms:.2f}ms")
        if self.errors:
            parts.append("errors=" + ",".join(
                name if count == 1 else f"{name}x{count}" for name, count in self.errors.items()))
        if self.outcome != "ok":
            parts.append(f"[{self.outcome}]")
        return " ".join(parts)


class Tracer:
    def __init__(self, buffer: int = DEFAULT_BUFFER, *, log_lines: bool = False,
                 apis: Iterable[int] | None = None, previous: Tracer | None = None) -> None:
        """`previous`: a tracer this one replaces; its records and numbering carry over, so
        a reader's `since` stays meaningful across a change of settings."""
        if not 1 <= buffer <= MAX_BUFFER:
            raise ValueError(f"trace buffer must be 1-{MAX_BUFFER}, got {buffer}")
        self.records: deque[TraceRecord] = deque(
            previous.records if previous is not None else (), maxlen=buffer)
        self.log_lines = log_lines
        self.apis: frozenset[int] | None = None if apis is None else frozenset(apis)
        self.last_seq: int = previous.last_seq if previous is not None else 0
        self._seq = itertools.count(self.last_seq + 1)

    @property
    def buffer(self) -> int:
        return self.records.maxlen or 0

    def begin(self, broker: int, peer: str, frame: bytes | bytearray) -> Span:
        span = Span(broker, peer, time.perf_counter())
        try:
            header = peek_request_header(frame)
        except CodecError:
            return span
        span.api_key, span.version = header.api_key, header.api_version
        span.correlation_id = header.correlation_id
        return span

    def finish(self, span: Span) -> TraceRecord:
        latency = (time.perf_counter() - span.start) * 1000
        errors: dict[str, int] = {}
        if span.response is not None:
            _collect_errors(span.response, errors, 0)
        elif span.outcome == "ok":
            span.outcome = "no response"
        self.last_seq = next(self._seq)
        record = TraceRecord(self.last_seq, time.time(), span.broker, span.peer,
                             span.client_id, api_label(span.api_key), span.api_key,
                             span.version, span.correlation_id, round(latency, 3),
                             span.outcome, errors, span.topics, span.group,
                             span.principal)
        self.records.append(record)
        if self.log_lines and (self.apis is None or span.api_key in self.apis) \
                and log.isEnabledFor(logging.INFO):
            log.info("%s", record.line(), extra={"trace": record.to_json()})
        return record

    def tail(self, n: int | None = None, *, apis: Iterable[int] | None = None,
             since: int = 0) -> list[TraceRecord]:
        """The last `n` records (all with None) after seq `since`, oldest first, optionally
        only those of `apis`."""
        wanted = None if apis is None else frozenset(apis)
        out: list[TraceRecord] = []
        for record in reversed(self.records):
            if record.seq <= since or (n is not None and len(out) >= n):
                break
            if wanted is None or record.api_key in wanted:
                out.append(record)
        out.reverse()
        return out


def _topics(body: Mapping[str, Any]) -> list[str]:
    """Topic names in a request's top-level topic lists (Produce topic_data, Fetch topics,
    Metadata topics, ...), at most MAX_TOPICS and then a "+N more" marker."""
    names: list[str] = []
    for value in body.values():
        if not isinstance(value, list):
            continue
        for entry in value:
            if not isinstance(entry, Mapping):
                break
            name = entry.get("name", entry.get("topic"))
            if isinstance(name, str) and name not in names:
                names.append(name)
    if len(names) > MAX_TOPICS:
        names = [*names[:MAX_TOPICS], f"+{len(names) - MAX_TOPICS} more"]
    return names


def _collect_errors(value: Mapping[str, Any], out: dict[str, int], depth: int) -> None:
    for key, item in value.items():
        if key == "error_code":
            if isinstance(item, int) and item != 0:
                name = error_name(item)
                out[name] = out.get(name, 0) + 1
        elif depth < _MAX_DEPTH and isinstance(item, list):
            for entry in item:
                if not isinstance(entry, Mapping):
                    break
                _collect_errors(entry, out, depth + 1)
        elif depth < _MAX_DEPTH and isinstance(item, Mapping):
            _collect_errors(item, out, depth + 1)
