"""Fixtures for the wire tests: a running 3-broker MockCluster and a raw client of broker 0.

A module that needs another cluster (a manual clock, other options) defines its own `mc`;
`client` then connects to that one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mockbroker.embedded import MockCluster
from tests.support.admin import running_cluster
from tests.support.rawclient import RawClient, connect_broker


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with running_cluster() as cluster:
        yield cluster


@pytest.fixture
async def client(mc: MockCluster) -> AsyncIterator[RawClient]:
    async with await connect_broker(mc, 0) as raw:
        yield raw
