"""The handler table: API key -> (version range, function)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from kafka_protocol_codec import Struct, api

if False:  # typing only; avoids an import cycle at runtime
    from mockbroker.handlers.context import RequestContext

Result: TypeAlias = Mapping[str, Any] | None
HandlerFn: TypeAlias = Callable[[Struct, "RequestContext"], Result | Awaitable[Result]]


@dataclass(frozen=True)
class HandlerSpec:
    api_key: int
    min_version: int
    max_version: int
    func: HandlerFn

    @property
    def name(self) -> str:
        return api(self.api_key).name


REGISTRY: dict[int, HandlerSpec] = {}


def handler(api_key: int, min_version: int, max_version: int) -> Callable[[HandlerFn], HandlerFn]:
    """Register `func` as the handler of `api_key` for versions min..max (inclusive)."""

    def register(func: HandlerFn) -> HandlerFn:
        spec = api(api_key)
        if min_version < spec.min_version or max_version > spec.max_version:
            raise ValueError(f"{spec.name} {min_version}-{max_version} is outside the "
                             f"schema's {spec.min_version}-{spec.max_version}")
        if api_key in REGISTRY:
            raise ValueError(f"{spec.name} registered twice")
        REGISTRY[api_key] = HandlerSpec(api_key, min_version, max_version, func)
        return func

    return register


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
