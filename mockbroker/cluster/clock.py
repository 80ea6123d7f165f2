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


class ManualClock:
    """A clock that only moves when told to; it starts at `start_ms`, by default the wall
    time when it is made (records that clients timestamp with their own clocks are then
    within Kafka's message.timestamp.after.max.ms of the broker's time, as on a real one)."""

    def __init__(self, start_ms: int | None = None) -> None:
        self._now = SystemClock().now_ms() if start_ms is None else start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("time does not go backwards")
        self._now += ms
