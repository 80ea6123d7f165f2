"""KIP-612 broker-wide and listener connection creation rates in the accept path, on a
manual clock: `max.connection.creation.rate` (server.properties) and
`listener.name.<listener>.max.connection.creation.rate` (static or dynamic) make the
listener's acceptor wait before it serves the connection over the rate; the connection is
served afterwards, never closed. Unknown listener-prefixed keys are refused as Kafka does."""

from __future__ import annotations

import pytest

from mockbroker.cluster import ManualClock
from mockbroker.cluster.configs.broker_properties import (
    BrokerPropertyError,
    check_broker_properties,
)
from mockbroker.embedded import MockCluster
from tests.server.test_admin_configs import SET, incremental
from tests.support.admin import BROKER
from tests.support.rawclient import RawClient, connect_broker

API_VERSIONS = 18
INVALID_CONFIG = 40


async def _served(cluster: MockCluster) -> bool:
    async with await connect_broker(cluster, 0) as client:
        answer = await client.request(API_VERSIONS, 3, {"client_software_name": "rate",
                                                        "client_software_version": "1"})
        return bool(answer.error_code == 0)


async def _delays(cluster: MockCluster) -> dict[str, int]:
    state = await cluster.control.state()
    return dict(state["quotas"]["connections"]["brokers"]["0"]["accept_delays_by_listener"])


async def test_broker_wide_rate_delays_the_connection_over_it() -> None:
    async with MockCluster(brokers=1, clock=ManualClock(),
                           broker_properties={"max.connection.creation.rate": "1"}) as mc:
        # ten connections in one instant: 10 per 10 s is the rate; the 11th waits 1 s
        assert [await _served(mc) for _ in range(10)] == [True] * 10
        assert await _delays(mc) == {}
        assert await _served(mc)  # served after the acceptor's wait
        assert await _delays(mc) == {"PLAINTEXT": 1}
        assert (await mc.control.state())["quotas"]["connections"]["throttled_by_ip"] == {}


async def test_listener_rate_set_dynamically() -> None:
    async with MockCluster(brokers=1, clock=ManualClock()) as mc:
        admin: RawClient = await connect_broker(mc, 0)  # connection 1
        key = "listener.name.plaintext.max.connection.creation.rate"
        assert await incremental(admin, BROKER, "", (key, SET, "1")) == (0, None)
        code, message = await incremental(
            admin, BROKER, "", ("listener.name.plaintext.max.connections.bogus", SET, "1"))
        assert code == INVALID_CONFIG and message is not None and "Unknown" in message
        assert [await _served(mc) for _ in range(9)] == [True] * 9  # connections 2-10
        assert await _delays(mc) == {}
        assert await _served(mc)  # the 11th: 1.1/s on PLAINTEXT
        assert await _delays(mc) == {"PLAINTEXT": 1}
        await admin.close()


def test_listener_prefixed_property_is_known_and_checked() -> None:
    assert check_broker_properties(
        {"listener.name.external.max.connection.creation.rate": "5"}) == []
    with pytest.raises(BrokerPropertyError, match="Value must be at least 0"):
        check_broker_properties({"listener.name.external.max.connection.creation.rate": "-1"})
    notes = check_broker_properties({"listener.name.external.num.partitions": "3"})
    assert notes and "isn't a known config" in notes[0]
