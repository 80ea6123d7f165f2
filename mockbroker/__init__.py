"""mockbroker: a Kafka broker simulator that real Kafka clients cannot tell from a cluster."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["MockCluster", "MockClusterThread"]

if TYPE_CHECKING:
    from mockbroker.embedded import MockCluster, MockClusterThread


def __getattr__(name: str) -> Any:
    # Lazy, so `python -m mockbroker` and the codec do not pay for what they do not use.
    if name in __all__:
        from mockbroker import embedded

        return getattr(embedded, name)
    raise AttributeError(name)
