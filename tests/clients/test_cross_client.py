"""What one client writes, every other client reads back exactly (all ordered pairs)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mockbroker.embedded import MockClusterThread
from tests.clients.conftest import CLIENT_NAMES
from tests.clients.test_roundtrip import PARTITIONS, roundtrip
from tests.support.kafka_clients import Client

pytestmark = pytest.mark.clients

MESSAGES = 300
_CODECS = (None, "gzip", "snappy", "lz4", "zstd")
# Every ordered pair; the codec rotates so each consumer decodes several producers' codecs.
PAIRS = [pytest.param(p, c, _CODECS[i % len(_CODECS)],
                      id=f"{p}->{c}-{_CODECS[i % len(_CODECS)] or 'none'}")
         for i, (p, c) in enumerate((p, c) for p in CLIENT_NAMES for c in CLIENT_NAMES
                                    if p != c)]


@pytest.mark.parametrize(("producer_name", "consumer_name", "compression"), PAIRS)
def test_cross_client(mock: MockClusterThread, client_factory: Callable[[str], Client],
                      topic_name: Callable[[str], str], producer_name: str,
                      consumer_name: str, compression: str | None) -> None:
    topic = topic_name()
    mock.call(mock.cluster.create_topic, topic, PARTITIONS)
    roundtrip(mock, client_factory(producer_name), client_factory(consumer_name), topic,
              MESSAGES, compression)
