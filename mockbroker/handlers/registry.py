"""The handler table: API key -> (version range, function, and for partition-level APIs how
their requests name partitions and their responses carry per-partition errors).

The second part lets the layers above (the control API's fault injector) fail chosen
partitions of any partition-level request without knowing request or response shapes: each
handler module registers a `PartitionShape` next to its handler with `partition_shape`.

Registering touches no schema: an API's generated message module is imported when its first
request is decoded, not when the broker starts. That every registered version range lies
within its schema's is asserted by the tests (test_registry_ranges_lie_within_the_schemas).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from kafka_protocol_codec import Struct, api_name

if TYPE_CHECKING:  # the context module imports nothing from here: no cycle
    from mockbroker.cluster import BrokerNode
    from mockbroker.handlers.context import RequestContext

Result: TypeAlias = Mapping[str, Any] | None
HandlerFn: TypeAlias = Callable[[Struct, "RequestContext"], Result | Awaitable[Result]]
TopicPartition: TypeAlias = tuple[str, int]


@dataclass(frozen=True)
class PartitionShape:
    """How one partition-level API names partitions and reports per-partition errors.

    - `requested(node, version, body)`: the (topic, partition) pairs the request is about,
      as the receiving broker `node` resolves them (a fetch session's, all topics of a
      Metadata request for every topic, ...);
    - `with_errors(response, partition_errors, topic_errors)`: a copy of the response in
      which the given partitions (and, where the API has them, topics) carry those error
      codes instead of their results;
    - `withhold(body, errored)`: optional; adjusts the request before its handler runs so
      that errored partitions have no effect (Produce writes nothing for them, Fetch stops
      waiting);
    - `topic_errors`: whether a fault without a partition filter is a topic-level error.
    """

    requested: Callable[[BrokerNode, int, Struct], list[TopicPartition]]
    with_errors: Callable[[Mapping[str, Any], Mapping[TopicPartition, int],
                           Mapping[str, int]], dict[str, Any]]
    withhold: Callable[[Struct, set[TopicPartition]], None] | None = None
    topic_errors: bool = False


@dataclass(frozen=True)
class HandlerSpec:
    """One API's entry in the handler table: the versions handled, the function, and for a
    partition-level API its shape."""

    api_key: int
    min_version: int
    max_version: int
    func: HandlerFn
    partitions: PartitionShape | None = None

    @property
    def name(self) -> str:
        return api_name(self.api_key)


REGISTRY: dict[int, HandlerSpec] = {}


def handler(api_key: int, min_version: int, max_version: int) -> Callable[[HandlerFn], HandlerFn]:
    """Register `func` as the handler of `api_key` for versions min..max (inclusive)."""

    def register(func: HandlerFn) -> HandlerFn:
        if api_key in REGISTRY:
            raise ValueError(f"{api_name(api_key)} registered twice")
        REGISTRY[api_key] = HandlerSpec(api_key, min_version, max_version, func)
        return func

    return register


def partition_shape(api_key: int, shape: PartitionShape) -> None:
    """Declare how the (already registered) handler of `api_key` names partitions."""
    spec = REGISTRY[api_key]
    REGISTRY[api_key] = HandlerSpec(spec.api_key, spec.min_version, spec.max_version,
                                    spec.func, shape)


def partition_apis() -> frozenset[int]:
    """The API keys whose handlers registered a PartitionShape."""
    return frozenset(k for k, spec in REGISTRY.items() if spec.partitions is not None)


def advertised_versions(
        caps: Mapping[int, tuple[int, int]] | None = None) -> list[tuple[int, int, int]]:
    """(api_key, min, max) for every handled API, optionally capped per key (version
    emulation); keys missing from `caps` are dropped when caps are given."""
    out = []
    for key in sorted(REGISTRY):
        spec = REGISTRY[key]
        low, high = spec.min_version, spec.max_version
        if caps is not None:
            if key not in caps:
                continue
            low, high = max(low, caps[key][0]), min(high, caps[key][1])
            if low > high:
                continue
        out.append((key, low, high))
    return out
