"""Shared fixtures: an in-process cluster served from a background thread.

The whole suite encodes strictly (kafka_protocol_codec.strict): a response, request or
metadata record with a key its schema does not know fails instead of silently sending a
default. The environment variable makes subprocesses (the CLI started by tests) strict too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from kafka_protocol_codec import set_strict_encoding
from kafka_protocol_codec.strict import ENV_VAR

from mockbroker.embedded import MockClusterThread

os.environ[ENV_VAR] = "1"
set_strict_encoding(True)


@pytest.fixture
def cluster_thread() -> Iterator[MockClusterThread]:
    """A fresh 3-broker cluster on free loopback ports, served from a background thread."""
    with MockClusterThread(brokers=3) as mock:
        yield mock
