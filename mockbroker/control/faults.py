"""Injected faults: errors, disconnects and latency, matched per request.

Theory of operation: a `Fault` is a rule (API key, optional broker, topic, partition; a
count of requests it still applies to, or a probability, or neither for "until cleared").
`FaultInjector` is the server's request hook (mockbroker.server.hooks): for each request it
finds the rules that match and fire, and returns a plan the connection follows.

- Latency rules add up to a delay before the request is handled (only that connection
  waits, as requests on one connection are handled in order anyway).
- `disconnect` closes the connection before the request is handled.
- Errors on the partition-level APIs (those whose handlers register a PartitionShape in
  mockbroker.handlers.registry: Produce, Fetch, ListOffsets, Metadata, OffsetForLeaderEpoch)
  go into the per-partition error codes of the matching partitions; the other partitions
  are answered normally. The handler module says how its request names partitions, how its
  response carries an error, and what to withhold from the handler (Produce partitions that
  get an error are taken out of the request, so nothing is written for them; a Fetch with
  an injected error answers at once, as Kafka does). Where the shape has topic-level errors
  (Metadata), a rule without a partition sets the topic's error.
- On every other API the error goes into the response's top-level error_code (or, for
  batched FindCoordinator, every coordinator entry), and the handler is not called.

A rule fires at most once per request; `count` counts requests. With a topic or partition
filter a request matches only if it names a matching partition (a Fetch within a fetch
session also matches on the session's partitions). Probabilities draw from one seeded
random.Random, so a test run is repeatable; `reset` reseeds it.

Connection-level faults (control/wire_faults.py) live in `wire_faults` beside `faults`: they
take their ids from the same sequence, so `clear`, `get` and `active` cover both.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_protocol_codec import TypedStruct, api, default_struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import BrokerNode
from mockbroker.control.wire_faults import WireFault
from mockbroker.handlers.registry import REGISTRY, PartitionShape, partition_apis

FIND_COORDINATOR = 10
PARTITION_APIS = partition_apis()
DEFAULT_SEED = 0

TopicPartition = tuple[str, int]


def _in_range(version: int, versions: tuple[int, int | None]) -> bool:
    low, high = versions
    return low <= version and (high is None or version <= high)


def has_top_level_error(api_key: int, version: int | None = None) -> bool:
    """Whether the API's response has a top-level error_code (at `version`, or at any)."""
    for f in api(api_key).response.fields:
        if f.name == "error_code" and f.versions is not None:
            return version is None or _in_range(version, f.versions)
    return False


@dataclass
class Fault:
    """One injected fault: which requests it matches (API, broker, topic, partition), what
    it does (an error, a disconnect, latency) and how often."""

    fault_id: int
    kind: str  # "error" or "latency"
    api_key: int
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    count: int | None = None  # requests it still applies to; None: no limit
    probability: float | None = None
    error: int | None = None  # with kind "error"; None means disconnect
    latency_ms: int = 0
    fired: int = 0

    @property
    def disconnect(self) -> bool:
        return self.kind == "error" and self.error is None

    def matches_partition(self, topic: str, partition: int) -> bool:
        return (self.topic is None or self.topic == topic) and (
            self.partition is None or self.partition == partition)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.fault_id, "kind": self.kind, "api": api(self.api_key).name,
                               "api_key": self.api_key, "broker": self.broker,
                               "topic": self.topic, "partition": self.partition,
                               "count": self.count, "probability": self.probability,
                               "fired": self.fired}
        if self.kind == "error":
            out["error"] = "disconnect" if self.error is None else ErrorCode(self.error).name
            out["error_code"] = self.error
        else:
            out["ms"] = self.latency_ms
        return out


@dataclass
class Plan:
    """What the connection does with one request (see mockbroker.server.hooks)."""

    api_key: int
    api_version: int
    delay_ms: float = 0.0
    disconnect: bool = False
    response: Mapping[str, Any] | None = None
    partition_errors: dict[TopicPartition, int] = field(default_factory=dict)
    topic_errors: dict[str, int] = field(default_factory=dict)

    def after(self, response: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        if response is None or not (self.partition_errors or self.topic_errors):
            return response
        return _shape(self.api_key).with_errors(response, self.partition_errors,
                                                self.topic_errors)


def _shape(api_key: int) -> PartitionShape:
    shape = REGISTRY[api_key].partitions
    assert shape is not None, f"API {api_key} registered no PartitionShape"
    return shape


class FaultInjector:
    """The registry of active faults, and the server's request hook."""

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self.faults: dict[int, Fault] = {}
        self.wire_faults: dict[int, WireFault] = {}  # connection-level, wire_faults.py
        self._next_id = 1
        self.seed = seed
        self.rng = random.Random(seed)
        self.observers: list[Callable[[int], None]] = []

    def add(self, fault: Fault) -> Fault:
        fault.fault_id = self._next_id
        self._next_id += 1
        self.faults[fault.fault_id] = fault
        return fault

    def add_wire(self, fault: WireFault) -> WireFault:
        fault.fault_id = self._next_id
        self._next_id += 1
        self.wire_faults[fault.fault_id] = fault
        return fault

    def clear(self, fault_id: int | None = None) -> int:
        if fault_id is None:
            count = len(self.faults) + len(self.wire_faults)
            self.faults.clear()
            self.wire_faults.clear()
            return count
        found = self.faults.pop(fault_id, None) or self.wire_faults.pop(fault_id, None)
        return 1 if found is not None else 0

    def get(self, fault_id: int) -> Fault | WireFault | None:
        """An active fault of either kind by id."""
        return self.faults.get(fault_id) or self.wire_faults.get(fault_id)

    def active(self) -> list[dict[str, Any]]:
        """Every active fault as JSON, in the order they were added."""
        both: list[Fault | WireFault] = [*self.faults.values(), *self.wire_faults.values()]
        return [f.to_json() for f in sorted(both, key=lambda f: f.fault_id)]

    def add_observer(self, observer: Callable[[int], None]) -> None:
        """Call `observer(api_key)` for every request from now on (scenario triggers)."""
        self.observers.append(observer)

    def remove_observer(self, observer: Callable[[int], None]) -> None:
        if observer in self.observers:
            self.observers.remove(observer)

    def issued(self, fault_id: int) -> bool:
        """Whether `fault_id` was ever handed out (it may since have been consumed)."""
        return 0 < fault_id < self._next_id

    def reseed(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = seed
        self.rng = random.Random(self.seed)

    # -- the request hook -------------------------------------------------------------------

    def idle(self) -> bool:
        """No fault installed and no observer: `before` returns None for every request."""
        return not self.faults and not self.observers

    def before(self, node: BrokerNode, api_key: int, api_version: int,
               body: TypedStruct) -> Plan | None:
        if self.observers:
            for observer in list(self.observers):
                observer(api_key)
        if not self.faults:
            return None
        candidates = [f for f in self.faults.values()
                      if f.api_key == api_key and (f.broker is None or f.broker == node.broker_id)]
        if not candidates:
            return None
        plan: Plan | None = None
        partitions: list[TopicPartition] | None = None
        for fault in candidates:
            matched: list[TopicPartition] = []
            if api_key in PARTITION_APIS and ((fault.kind == "error" and not fault.disconnect)
                                              or fault.topic is not None):
                if partitions is None:
                    partitions = requested_partitions(node, api_key, api_version, body)
                matched = [tp for tp in partitions if fault.matches_partition(*tp)]
                if not matched:
                    continue
            elif fault.kind == "error" and not fault.disconnect and api_key not in PARTITION_APIS \
                    and not _can_answer_error(api_key, api_version):
                continue
            if not self._fires(fault):
                continue
            plan = plan or Plan(api_key, api_version)
            self._apply(fault, plan, body, matched)
        if plan is not None and plan.partition_errors:
            _strip_for_errors(plan, body)
        return plan

    def _fires(self, fault: Fault) -> bool:
        if fault.probability is not None and self.rng.random() >= fault.probability:
            return False
        fault.fired += 1
        if fault.count is not None:
            fault.count -= 1
            if fault.count <= 0:
                self.faults.pop(fault.fault_id, None)
        return True

    def _apply(self, fault: Fault, plan: Plan, body: TypedStruct,
               matched: list[TopicPartition]) -> None:
        if fault.kind == "latency":
            plan.delay_ms += fault.latency_ms
        elif fault.disconnect:
            plan.disconnect = True
        elif fault.api_key in PARTITION_APIS:
            assert fault.error is not None
            if _shape(fault.api_key).topic_errors and fault.partition is None:
                for topic, _ in matched:
                    plan.topic_errors[topic] = fault.error
            else:
                for tp in matched:
                    plan.partition_errors[tp] = fault.error
        elif plan.response is None:
            assert fault.error is not None
            plan.response = error_response(fault.api_key, plan.api_version, body, fault.error)


def _can_answer_error(api_key: int, version: int) -> bool:
    return has_top_level_error(api_key, version) or (api_key == FIND_COORDINATOR
                                                     and version >= 4)


def error_response(api_key: int, version: int, body: Any, code: int) -> dict[str, Any]:
    """A whole response carrying `code` at the top level (defaults everywhere else)."""
    response: dict[str, Any] = default_struct(api(api_key).response.fields)
    if api_key == FIND_COORDINATOR and version >= 4:
        response["coordinators"] = [
            {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code,
             "error_message": ErrorCode(code).name} for key in body.coordinator_keys or []]
    else:
        response["error_code"] = code
        if "error_message" in response:
            response["error_message"] = ErrorCode(code).name
        if api_key == FIND_COORDINATOR:
            response.update(node_id=-1, host="", port=-1)
    return response


def requested_partitions(node: BrokerNode, api_key: int, version: int,
                         body: TypedStruct) -> list[TopicPartition]:
    """The (topic, partition) pairs a partition-level request is about."""
    return _shape(api_key).requested(node, version, body)


def _strip_for_errors(plan: Plan, body: TypedStruct) -> None:
    """What the handler must not act on: the errored partitions (see PartitionShape)."""
    withhold = _shape(plan.api_key).withhold
    if withhold is not None:
        withhold(body, set(plan.partition_errors))
