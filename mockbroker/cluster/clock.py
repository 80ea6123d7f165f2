"""Injected time: the cluster never reads the wall clock directly.

Timeouts (group sessions, transactions, metadata delays) are computed from `Clock.now_ms()`,
so tests can substitute a ManualClock and move time forward without sleeping.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch (used for timestamps and deadlines)."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


START_GRAIN_MS = 100_000


class ManualClock:
    """A clock that only moves when told to. It starts at `start_ms`, by default the wall
    time when it is made, rounded down to a whole START_GRAIN_MS: records that clients
    timestamp with their own clocks are then within Kafka's message.timestamp.after.max.ms
    (an hour) of the broker's time, as on a real broker, and time windows (quota samples of
    a second, ten seconds) start on their boundaries, so what a test computes from them
    does not depend on the moment it ran."""

    def __init__(self, start_ms: int | None = None) -> None:
        if start_ms is None:
            start_ms = SystemClock().now_ms() // START_GRAIN_MS * START_GRAIN_MS
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("time does not go backwards")
        self._now += ms
