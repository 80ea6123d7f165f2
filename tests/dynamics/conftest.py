"""Fixtures for the cluster-dynamics tests: a fresh 3-broker cluster per test.

The tests steer the cluster only through its control API (`mock.control`, the same verbs as
over HTTP) while real clients produce and consume.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mockbroker.embedded import MockClusterThread


@pytest.fixture
def mock() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3) as cluster:
        yield cluster
