"""Fixtures for the in-process handler tests: a fresh 3-broker harness per test.

The harness (tests.support.handlers.HandlerHarness) is a Cluster on a ManualClock with every
broker registered; handlers are called directly, so these tests open no sockets and never
wait on a timer.
"""

from __future__ import annotations

import pytest

from tests.support.handlers import HandlerHarness


@pytest.fixture
def harness() -> HandlerHarness:
    return HandlerHarness(brokers=3)
