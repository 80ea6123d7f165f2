"""Connection-level faults: what a bad network or a meddling proxy does to a Kafka connection.

Theory of operation: a `WireFault` is a rule with a kind and filters. The kinds:

- `hang`: the matching request is read and neither handled nor answered, nor is any later
  request on that connection (a hung Produce writes nothing); the connection stays open until
  the client gives up (its request timeout).
- `reset`: the connection ends with a TCP reset (SO_LINGER 0, close) after `delay_ms`,
  instead of handling and answering the request; with `answer` the request is handled and
  answered first, then `delay_ms`, then the reset.
- `half-response`: the first half of the response frame is written, then the connection is
  closed (FIN), so the client reads a truncated frame.
- `bandwidth`: the response's bytes are paced at `bytes_per_second` (event-loop timers in
  the connection's task); the fault and the connection count the bytes paced.
- `duplicate-batch` and `corrupt-crc` (Fetch only): in a matching partition's records the
  first record batch is sent twice, or sent with one byte of its CRC flipped, as a faulty
  proxy would. Only that one batch is touched: a duplicate is the same buffer twice (no copy),
  a corruption copies that batch alone; the others stay references to the stored log.

Filters narrow a rule to the broker, one connection (by the id in `state`'s connections), the
client address or port, the request header's client_id, an API and (data faults) a topic and
partition; None matches anything. `count` is how many times the rule still fires (requests
for hang, reset, half-response and bandwidth; batches for the data faults), then it is
removed; None keeps it until cleared. `WireFaultHook` is the server's `hooks.wire`: it finds
the rules that match a request and returns the plan the connection carries out; the rules
live in the FaultInjector's `wire_faults`, so ids, `clear-faults`, `wait-fault-consumed` and
the `state` listing treat them like the request-level faults.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_protocol_codec import api
from kafka_protocol_codec.framing import BufferList

from mockbroker.server.hooks import ConnectionInfo, WirePlan

FETCH = 1
KINDS = ("hang", "reset", "half-response", "bandwidth", "duplicate-batch", "corrupt-crc")
DATA_KINDS = ("duplicate-batch", "corrupt-crc")
BATCH_HEADER = 61  # a v2 record batch's header; shorter records are left alone
LENGTH_END = 12  # base offset (8) and batch length (4): a batch is 12 + length bytes
MAGIC_AT = 16
CRC_AT_V2 = 17  # after partition leader epoch (4) and magic (1)
CRC_AT_LEGACY = 12  # message sets v0/v1: offset (8), size (4), then crc


@dataclass
class WireFault:
    """One connection-level fault: which connections or requests it matches, and what it
    does to their bytes."""

    fault_id: int
    kind: str
    broker: int | None = None
    connection: int | None = None
    client_id: str | None = None
    client_host: str | None = None
    client_port: int | None = None
    api_key: int | None = None
    topic: str | None = None
    topic_id: uuid.UUID | None = None  # the topic's id, for Fetch v13+ (topics by id)
    partition: int | None = None
    count: int | None = None
    delay_ms: int = 0  # reset: wait this long first
    answer: bool = False  # reset: answer, then reset
    bytes_per_second: int | None = None  # bandwidth
    for_ms: int | None = None  # cleared this long after it was added (None: never)
    fired: int = 0
    throttled_bytes: int = 0  # bandwidth: response bytes paced so far

    def matches(self, conn: ConnectionInfo, api_key: int) -> bool:
        return ((self.broker is None or self.broker == conn.broker_id)
                and (self.connection is None or self.connection == conn.connection_id)
                and (self.client_id is None or self.client_id == conn.client_id)
                and (self.client_host is None or self.client_host == conn.client_host)
                and (self.client_port is None or self.client_port == conn.client_port)
                and (self.api_key is None or self.api_key == api_key))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.fault_id, "kind": self.kind,
            "api": None if self.api_key is None else api(self.api_key).name,
            "api_key": self.api_key, "broker": self.broker, "connection": self.connection,
            "client_id": self.client_id, "client_host": self.client_host,
            "client_port": self.client_port, "topic": self.topic, "partition": self.partition,
            "count": self.count, "for_ms": self.for_ms, "fired": self.fired}
        if self.kind == "reset":
            out.update(delay_ms=self.delay_ms, answer=self.answer)
        elif self.kind == "bandwidth":
            out.update(bytes_per_second=self.bytes_per_second,
                       throttled_bytes=self.throttled_bytes)
        return out


class WireFaultHook:
    """The server's `hooks.wire`: a plan for each request from the matching rules."""

    def __init__(self, faults: dict[int, WireFault]) -> None:
        self.faults = faults  # shared with the FaultInjector, which adds and clears them

    def idle(self) -> bool:
        """No connection-level fault installed: `plan` returns None for every request."""
        return not self.faults

    def plan(self, conn: ConnectionInfo, api_key: int, api_version: int) -> WirePlan | None:
        if not self.faults:
            return None
        plan: WirePlan | None = None
        for fault in list(self.faults.values()):
            if not fault.matches(conn, api_key):
                continue
            if fault.kind in DATA_KINDS:
                if api_key != FETCH:
                    continue
                plan = plan or WirePlan()
                plan.rewrite = _then(plan.rewrite, _fetch_rewriter(self, fault))
                continue
            plan = plan or WirePlan()
            self._fire(fault)
            if fault.kind == "hang":
                plan.hang = True
            elif fault.kind == "reset":
                plan.reset = True
                plan.answer_before_reset = plan.answer_before_reset or fault.answer
                plan.reset_delay_ms = max(plan.reset_delay_ms, fault.delay_ms)
            elif fault.kind == "half-response":
                plan.half_response = True
            elif fault.kind == "bandwidth":
                assert fault.bytes_per_second is not None
                if plan.bytes_per_second is None or fault.bytes_per_second < plan.bytes_per_second:
                    plan.bytes_per_second = fault.bytes_per_second
                    plan.on_paced = _accountant(fault)
        return plan

    def _fire(self, fault: WireFault) -> None:
        fault.fired += 1
        if fault.count is not None:
            fault.count -= 1
            if fault.count <= 0:
                self.faults.pop(fault.fault_id, None)

    def rewrite_fetch(self, fault: WireFault, response: Mapping[str, Any]) -> Mapping[str, Any]:
        """Apply a data fault to the first batch of the first matching partition that has
        one (if the rule is still active: another connection may have used it up)."""
        if fault.fault_id not in self.faults:
            return response
        for topic in response.get("responses") or ():
            if not isinstance(topic, Mapping):
                continue
            if fault.topic is not None and topic.get("topic") != fault.topic \
                    and (fault.topic_id is None or topic.get("topic_id") != fault.topic_id):
                continue
            for part in topic.get("partitions") or ():
                if not isinstance(part, dict):
                    continue
                if fault.partition is not None and part.get("partition_index") != fault.partition:
                    continue
                records = _tampered(part.get("records"), fault.kind)
                if records is not None:
                    part["records"] = records
                    self._fire(fault)
                    return response
        return response


def _then(first: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None,
          second: Callable[[Mapping[str, Any]], Mapping[str, Any]]
          ) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    if first is None:
        return second
    return lambda response: second(first(response))


def _fetch_rewriter(hook: WireFaultHook, fault: WireFault
                    ) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    return lambda response: hook.rewrite_fetch(fault, response)


def _accountant(fault: WireFault) -> Callable[[int], None]:
    def paced(nbytes: int) -> None:
        fault.throttled_bytes += nbytes
    return paced


def _tampered(records: Any, kind: str) -> BufferList | None:
    """The records with their first batch duplicated or its CRC corrupted; None when there
    is no whole batch to touch."""
    if isinstance(records, BufferList):
        buffers = list(records.buffers)
    elif isinstance(records, (bytes, bytearray, memoryview)) and len(records):
        buffers = [records]
    else:
        return None
    if not buffers:
        return None
    head = memoryview(buffers[0]).cast("B")
    if len(head) < BATCH_HEADER:
        return None
    size = LENGTH_END + int.from_bytes(head[8:LENGTH_END], "big", signed=True)
    if not BATCH_HEADER <= size <= len(head):
        return None
    batch, rest = head[:size], head[size:]
    if kind == "duplicate-batch":
        first: list[Any] = [batch, batch]
    else:
        copy = bytearray(batch)  # only this batch is copied
        at = CRC_AT_V2 if copy[MAGIC_AT] >= 2 else CRC_AT_LEGACY
        copy[at] ^= 0xFF
        first = [copy]
    return BufferList(first + ([rest] if len(rest) else []) + buffers[1:])
