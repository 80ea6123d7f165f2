"""The handler table: API key -> (version range, function, and for partition-level APIs how
their requests name partitions and their responses carry per-partition errors).

The second part lets the layers above (the control API's fault injector) fail chosen
partitions of any partition-level request without knowing request or response shapes: each
handler module registers a `PartitionShape` next to its handler with `partition_shape`.

Registering touches no schema: an API's generated message module is imported when its first
request is decoded, not when the broker starts. That every registered version range lies
within its schema's is asserted by the tests (test_registry_ranges_lie_within_the_schemas).

Start-up imports no handler body either: the package (mockbroker/handlers/__init__.py)
`declare`s each handler module with the APIs and version ranges it registers, and a declared
API counts as in the table (`in`, iteration, `advertised_versions`) before its module is
imported; the first read of its entry (`REGISTRY[key]`, the first request) imports the module,
whose `@handler` then fills the entry. Registering a range other than the declared one is an
error, and tests/handlers/test_handler_declarations.py imports every module and compares:
what is advertised is what is handled.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, ItemsView, Iterator, Mapping, ValuesView
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from kafka_protocol_codec import api_name

if TYPE_CHECKING:  # the context module imports nothing from here: no cycle
    from mockbroker.cluster import BrokerNode
    from mockbroker.handlers.context import RequestContext

Result: TypeAlias = Mapping[str, Any] | None
# A handler's request parameter is annotated with its API's generated request class
# (kafka_protocol_codec.generated.<api>.<Name>Request), so mypy checks its field reads.
HandlerFn: TypeAlias = Callable[[Any, "RequestContext"], Result | Awaitable[Result]]
_Handler = TypeVar("_Handler", bound=HandlerFn)
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

    # the request body: the API's generated request class
    requested: Callable[[BrokerNode, int, Any], list[TopicPartition]]
    with_errors: Callable[[Mapping[str, Any], Mapping[TopicPartition, int],
                           Mapping[str, int]], dict[str, Any]]
    withhold: Callable[[Any, set[TopicPartition]], None] | None = None
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


@dataclass(frozen=True)
class Declaration:
    """What a handler module will register for one API, known before it is imported."""

    module: str
    min_version: int
    max_version: int
    partition_level: bool  # it registers a PartitionShape


class HandlerTable(dict[int, HandlerSpec]):
    """REGISTRY: API key -> HandlerSpec. An entry exists once its module registered it; a
    declared API is in the table before that, and reading its entry imports its module."""

    def __init__(self) -> None:
        super().__init__()
        self.declared: dict[int, Declaration] = {}

    def __missing__(self, api_key: int) -> HandlerSpec:
        declaration = self.declared.get(api_key)
        if declaration is None:
            raise KeyError(api_key)
        importlib.import_module(declaration.module)  # its @handler fills the entry
        return dict.__getitem__(self, api_key)

    def __contains__(self, api_key: object) -> bool:
        return api_key in self.declared or dict.__contains__(self, api_key)

    def __iter__(self) -> Iterator[int]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def keys(self) -> list[int]:  # type: ignore[override]
        return list(self.declared) + [k for k in dict.keys(self) if k not in self.declared]

    def items(self) -> ItemsView[int, HandlerSpec]:  # type: ignore[override]
        return ItemsView({key: self[key] for key in self.keys()})

    def values(self) -> ValuesView[HandlerSpec]:  # type: ignore[override]
        return ValuesView({key: self[key] for key in self.keys()})

    def get(self, api_key: int, default: HandlerSpec | None = None) -> HandlerSpec | None:  # type: ignore[override]
        return self[api_key] if api_key in self else default

    def versions(self, api_key: int) -> tuple[int, int]:
        """The handled version range, without importing the handler module."""
        spec = dict.get(self, api_key)
        if spec is not None:
            return spec.min_version, spec.max_version
        declaration = self.declared[api_key]
        return declaration.min_version, declaration.max_version


REGISTRY = HandlerTable()


def declare(module: str, versions: Mapping[int, tuple[int, int]],
            partition_level: frozenset[int] = frozenset()) -> None:
    """Declare that importing the handler module `module` (of this package) registers a
    handler for each API key of `versions` with that (min, max) range, and a PartitionShape
    for each key of `partition_level`."""
    for api_key, (low, high) in versions.items():
        if api_key in REGISTRY.declared:
            raise ValueError(f"{api_name(api_key)} declared twice")
        REGISTRY.declared[api_key] = Declaration(f"{__package__}.{module}", low, high,
                                                 api_key in partition_level)


def handler(api_key: int, min_version: int,
            max_version: int) -> Callable[[_Handler], _Handler]:
    """Register `func` as the handler of `api_key` for versions min..max (inclusive)."""

    def register(func: _Handler) -> _Handler:
        if dict.__contains__(REGISTRY, api_key):
            raise ValueError(f"{api_name(api_key)} registered twice")
        declaration = REGISTRY.declared.get(api_key)
        if declaration is not None and (declaration.min_version, declaration.max_version) \
                != (min_version, max_version):
            raise ValueError(f"{api_name(api_key)} registered for v{min_version}-{max_version}, "
                             f"declared for v{declaration.min_version}-"
                             f"{declaration.max_version} (mockbroker/handlers/__init__.py)")
        REGISTRY[api_key] = HandlerSpec(api_key, min_version, max_version, func)
        return func

    return register


def partition_shape(api_key: int, shape: PartitionShape) -> None:
    """Declare how the (already registered) handler of `api_key` names partitions."""
    spec = dict.__getitem__(REGISTRY, api_key)
    declaration = REGISTRY.declared.get(api_key)
    if declaration is not None and not declaration.partition_level:
        raise ValueError(f"{api_name(api_key)} registers a PartitionShape but is not declared "
                         f"partition-level (mockbroker/handlers/__init__.py)")
    REGISTRY[api_key] = HandlerSpec(spec.api_key, spec.min_version, spec.max_version,
                                    spec.func, shape)


def partition_apis() -> frozenset[int]:
    """The API keys whose handlers register a PartitionShape (declared ones without importing
    their modules)."""
    declared = {k for k, d in REGISTRY.declared.items() if d.partition_level}
    registered = {k for k, spec in dict.items(REGISTRY) if spec.partitions is not None}
    return frozenset(declared | registered)


def advertised_versions(
        caps: Mapping[int, tuple[int, int]] | None = None) -> list[tuple[int, int, int]]:
    """(api_key, min, max) for every handled API, optionally capped per key (version
    emulation); keys missing from `caps` are dropped when caps are given."""
    out = []
    for key in sorted(REGISTRY):
        low, high = REGISTRY.versions(key)
        if caps is not None:
            if key not in caps:
                continue
            low, high = max(low, caps[key][0]), min(high, caps[key][1])
            if low > high:
                continue
        out.append((key, low, high))
    return out
