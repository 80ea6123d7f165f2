"""Shared fixtures: an in-process cluster served from a background thread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mockbroker.embedded import MockClusterThread


@pytest.fixture
def cluster_thread() -> Iterator[MockClusterThread]:
    """A fresh 3-broker cluster on free loopback ports, served from a background thread."""
    with MockClusterThread(brokers=3) as mock:
        yield mock
