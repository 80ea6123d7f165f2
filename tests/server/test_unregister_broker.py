"""UnregisterBroker (64) over the wire: an id that is not registered, a stopped broker's
registration removed, a running broker registering again with a new epoch."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kafka_protocol_codec.error_codes import ErrorCode as E

from mockbroker.cluster.kraft.metadata_log import REGISTER_BROKER, UNREGISTER_BROKER
from mockbroker.embedded import MockCluster
from tests.support.admin import running_cluster
from tests.support.rawclient import connect_broker

UNREGISTER_BROKER_API = 64


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with running_cluster() as cluster:
        yield cluster


async def test_unregister_broker(mc: MockCluster) -> None:
    cluster = mc.cluster
    cluster.create_topic("t", 1, 3)
    async with await connect_broker(mc, 0) as client:
        answer = await client.request(UNREGISTER_BROKER_API, 0, {"broker_id": 77})
        assert (answer.error_code, answer.error_message) == (
            E.BROKER_ID_NOT_REGISTERED, "Broker ID 77 is not currently registered")
        # a running broker: unregistered, then registered again with a new epoch
        epoch = cluster.image.brokers[1].epoch
        start = cluster.controller.log.end_offset
        answer = await client.request(UNREGISTER_BROKER_API, 0, {"broker_id": 1})
        assert (answer.error_code, answer.error_message) == (E.NONE, None)
        kinds = [r.record_type for r in cluster.controller.log.since(start - 1)]
        assert UNREGISTER_BROKER in kinds and kinds.index(UNREGISTER_BROKER) < \
            kinds.index(REGISTER_BROKER)
        again = cluster.image.brokers[1]
        assert (again.epoch > epoch, again.fenced) == (True, False)
        assert sorted(cluster.image.partition("t", 0).isr) == [0, 1, 2]
        # a stopped broker: its registration is gone
        cluster.fence_broker(2)
        answer = await client.request(UNREGISTER_BROKER_API, 0, {"broker_id": 2})
        assert answer.error_code == E.NONE
        assert 2 not in cluster.image.brokers and 2 not in cluster.image.partition("t", 0).isr
        answer = await client.request(UNREGISTER_BROKER_API, 0, {"broker_id": 2})
        assert answer.error_code == E.BROKER_ID_NOT_REGISTERED
