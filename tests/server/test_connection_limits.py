"""Kafka's connection limits on real sockets: max.connections.per.ip (and its overrides)
closes a connection over the limit at once; max.connections, broker-wide or per listener,
makes the listener's acceptor wait until a connection closes; a lowered max.connections
closes the least recently used connections; on a TLS listener the decisions come at TCP
accept, before any TLS handshake (KIP-612 rates too). Configs static and dynamic.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mockbroker.cluster import ManualClock
from mockbroker.cluster.configs.broker_properties import (
    BrokerPropertyError,
    check_broker_properties,
)
from mockbroker.embedded import MockCluster
from mockbroker.kafka_properties import merge
from tests.server.test_admin_configs import DELETE, SET, describe, incremental
from tests.support.admin import BROKER
from tests.support.rawclient import RawClient, connect_broker

API_VERSIONS = 18
INVALID_REQUEST = 42
VERSIONS_BODY = {"client_software_name": "limits", "client_software_version": "1"}


async def _answers(client: RawClient) -> bool:
    answer = await client.request(API_VERSIONS, 3, VERSIONS_BODY)
    return bool(answer.error_code == 0)


async def _connections(mc: MockCluster) -> dict[str, Any]:
    return dict((await mc.control.state())["quotas"]["connections"])


async def _until(check: Callable[[], Awaitable[bool]]) -> bool:
    """Poll a condition of the broker's state (bounded: 200 rounds of 25 ms)."""
    for _ in range(200):
        if await check():
            return True
        await asyncio.sleep(0.025)
    return False


async def test_per_ip_limit_closes_the_next_connection_at_once() -> None:
    async with MockCluster(brokers=1, broker_properties={"max.connections.per.ip": "2"}) as mc:
        first, second = await connect_broker(mc), await connect_broker(mc)
        assert await _answers(first) and await _answers(second)
        third = await connect_broker(mc)  # TCP connects; the broker closes it unread
        assert await third.is_closed()
        state = await _connections(mc)
        assert state["open_by_ip"] == {"127.0.0.1": 2}
        assert state["refused_by_ip"] == {"127.0.0.1": 1}
        assert state["brokers"]["0"]["open_by_listener"] == {"PLAINTEXT": 2}
        await first.close()
        assert await _until(lambda: _open_is(mc, 1))
        async with await connect_broker(mc) as fourth:  # a slot again
            assert await _answers(fourth)
        await second.close()
        await third.close()


async def _open_is(mc: MockCluster, count: int) -> bool:
    return sum((await _connections(mc))["open_by_ip"].values()) == count


async def test_per_ip_limit_and_overrides_set_dynamically() -> None:
    async with MockCluster(brokers=1) as mc:
        admin = await connect_broker(mc)
        assert await incremental(admin, BROKER, "", ("max.connections.per.ip", SET, "0")) == (
            INVALID_REQUEST, "requirement failed: max.connections.per.ip can be set to zero "
            "only if max.connections.per.ip.overrides property is set.")
        code, message = await incremental(
            admin, BROKER, "0", ("max.connections.per.ip.overrides", SET, "127.0.0.1"))
        assert code == INVALID_REQUEST and message is not None
        assert message.startswith("Error parsing configuration property "
                                  "'max.connections.per.ip.overrides'")
        assert await incremental(admin, BROKER, "0", (
            "max.connections.per.ip", SET, "0"),
            ("max.connections.per.ip.overrides", SET, "localhost:2")) == (0, None)
        second = await connect_broker(mc)  # 127.0.0.1 is localhost: 2 allowed
        assert await _answers(second)
        third = await connect_broker(mc)
        assert await third.is_closed()
        assert await incremental(admin, BROKER, "0", (
            "max.connections.per.ip.overrides", SET, "localhost:3")) == (0, None)
        async with await connect_broker(mc) as fourth:
            assert await _answers(fourth)
        for client in (admin, second, third):
            await client.close()


async def test_broker_max_connections_makes_the_acceptor_wait_for_a_close() -> None:
    async with MockCluster(brokers=1) as mc:
        admin = await connect_broker(mc)
        assert await incremental(admin, BROKER, "", ("max.connections", SET, "2")) == (0, None)
        second = await connect_broker(mc)
        assert await _answers(second)
        waiting = await connect_broker(mc)  # TCP connects; the acceptor holds it
        await waiting.send(API_VERSIONS, 3, VERSIONS_BODY)
        assert await _until(lambda: _slot_waits_are(mc, {"PLAINTEXT": 1}))
        assert (await _connections(mc))["open_by_listener"] == {"PLAINTEXT": 2}
        await second.close()  # a slot frees: the waiting connection is taken and served
        answer = await waiting.receive(API_VERSIONS, 3, 1)
        assert answer.body.error_code == 0
        assert (await _connections(mc))["refused_by_ip"] == {}
        await waiting.close()
        await admin.close()


async def _slot_waits_are(mc: MockCluster, expected: dict[str, int]) -> bool:
    brokers = (await _connections(mc))["brokers"]
    return bool(brokers["0"]["slot_waits_by_listener"] == expected)


async def test_raising_the_limit_wakes_the_acceptor() -> None:
    async with MockCluster(brokers=1, broker_properties={"max.connections": "1"}) as mc:
        admin = await connect_broker(mc)
        waiting = await connect_broker(mc)
        await waiting.send(API_VERSIONS, 3, VERSIONS_BODY)
        assert await _until(lambda: _slot_waits_are(mc, {"PLAINTEXT": 1}))
        mc.cluster.set_configs([(BROKER, "", "max.connections", "5")])
        mc.cluster.propagate()
        answer = await waiting.receive(API_VERSIONS, 3, 1)
        assert answer.body.error_code == 0
        await waiting.close()
        await admin.close()


async def test_listener_max_connections_holds_only_that_listener() -> None:
    async with MockCluster(brokers=1, listeners="PLAINTEXT://127.0.0.1:0,EXTRA://127.0.0.1:0",
                           listener_security_protocol_map="EXTRA:PLAINTEXT",
                           broker_properties={"listener.name.extra.max.connections": "1"}
                           ) as mc:
        extra_port = mc.server.extra_bound_ports[0][0]
        held = await RawClient.connect(extra_port)
        assert await _answers(held)
        waiting = await RawClient.connect(extra_port)
        await waiting.send(API_VERSIONS, 3, VERSIONS_BODY)
        assert await _until(lambda: _slot_waits_are(mc, {"EXTRA": 1}))
        async with await connect_broker(mc) as plain:  # PLAINTEXT has no limit
            assert await _answers(plain)
        await held.close()
        assert (await waiting.receive(API_VERSIONS, 3, 1)).body.error_code == 0
        await waiting.close()


async def test_lowering_max_connections_closes_the_least_recently_used() -> None:
    async with MockCluster(brokers=1) as mc:
        idle = [await connect_broker(mc) for _ in range(2)]
        for client in idle:
            assert await _answers(client)
        admin = await connect_broker(mc)  # the most recently used
        assert await incremental(admin, BROKER, "0", ("max.connections", SET, "1")) == (0, None)
        assert [await client.is_closed() for client in idle] == [True, True]
        assert await _answers(admin)
        assert await incremental(admin, BROKER, "0", ("max.connections", DELETE, None)) == \
            (0, None)
        for client in idle:
            await client.close()
        await admin.close()


async def test_tls_listener_decides_at_tcp_accept_before_the_handshake() -> None:
    """Kafka's acceptor counts and refuses TCP connections before any TLS byte: a plain TCP
    connection that never says hello takes the IP's only slot, and the next one is closed
    at once without a handshake; KIP-612 rates are measured at accept as well."""
    async with MockCluster(brokers=1, listeners="SSL://127.0.0.1:0", clock=ManualClock(),
                           broker_properties={"max.connections.per.ip": "1"}) as mc:
        port = mc.server.bound_ports[0]
        files = mc.tls_files
        assert files is not None
        silent = await RawClient.connect(port)  # TCP only: no ClientHello
        assert await _until(lambda: _open_is(mc, 1))
        refused = await RawClient.connect(port)
        assert await refused.is_closed()
        assert (await _connections(mc))["refused_by_ip"] == {"127.0.0.1": 1}
        await silent.close()
        await refused.close()
        assert await _until(lambda: _open_is(mc, 0))
        context = ssl.create_default_context(cafile=files.ca)
        async with await RawClient.connect(port, "localhost", ssl=context) as tls:
            assert await _answers(tls)


async def test_tls_listener_measures_the_ip_rate_at_tcp_accept() -> None:
    """KIP-612 on a TLS listener: the IP's connection rate counts TCP connections as they
    are accepted, before (here: without) a TLS handshake, so the 11th plain TCP connection
    at 1/s is closed unserved after its throttle."""
    async with MockCluster(brokers=1, listeners="SSL://127.0.0.1:0",
                           clock=ManualClock()) as mc:
        await mc.control.set_quota({"ip": "127.0.0.1"}, {"connection_creation_rate": 1})
        port = mc.server.bound_ports[0]
        silent = [await RawClient.connect(port) for _ in range(10)]  # no ClientHello
        assert await _until(lambda: _open_is(mc, 10))
        throttled = await RawClient.connect(port)
        assert await throttled.is_closed()
        state = await _connections(mc)
        assert state["throttled_by_ip"] == {"127.0.0.1": 1}
        assert state["open_by_ip"] == {"127.0.0.1": 10}
        for client in (*silent, throttled):
            await client.close()


# -- DescribeConfigs of listener-prefixed keys (Kafka's ConfigHelper) ---------------------------

def _entries(result: Any) -> dict[str, tuple[Any, ...]]:
    return {c.name: (c.value, c.config_source, c.read_only,
                     [(s.name, s.value, s.source) for s in c.synonyms])
            for c in result.configs}


async def test_listener_prefixed_keys_are_described_with_their_sources() -> None:
    """A listener-prefixed key set dynamically is listed with DYNAMIC_BROKER_CONFIG or
    DYNAMIC_DEFAULT_BROKER_CONFIG; its synonyms run from its own first layer through its
    base key's (here the static max.connections and Kafka's default); it is read-only, as
    Kafka's dynamic-config set names base keys only. A static one is STATIC_BROKER_CONFIG."""
    rate_key = "listener.name.plaintext.max.connection.creation.rate"
    max_key = "listener.name.plaintext.max.connections"
    static_key = "listener.name.other.max.connections"
    async with MockCluster(brokers=2, broker_properties={
            "max.connections": "100", static_key: "7"}) as mc:
        admin = await connect_broker(mc)
        assert await incremental(admin, BROKER, "", (rate_key, SET, "50"),
                                 (max_key, SET, "40")) == (0, None)
        assert await incremental(admin, BROKER, "0", (max_key, SET, "30"),
                                 ("max.connections", SET, "90")) == (0, None)
        described = _entries(await describe(admin, BROKER, "0"))
        int_max = "2147483647"
        assert described[max_key] == ("30", 2, True, [
            (max_key, "30", 2), ("max.connections", "90", 2), (max_key, "40", 3),
            ("max.connections", "100", 4), ("max.connections", int_max, 5)])
        assert described[rate_key] == ("50", 3, True, [
            (rate_key, "50", 3), ("max.connection.creation.rate", int_max, 5)])
        assert described[static_key] == ("7", 4, True, [
            (static_key, "7", 4), ("max.connections", "100", 4),
            ("max.connections", int_max, 5)])
        assert described["max.connections"] == ("90", 2, False, [
            ("max.connections", "90", 2), ("max.connections", "100", 4),
            ("max.connections", int_max, 5)])  # the listener keys are not its synonyms
        other = _entries(await describe(admin, BROKER, "1"))
        assert other[max_key][:2] == ("40", 3)  # broker 1: the cluster default only
        defaults = _entries(await describe(admin, BROKER, ""))
        assert sorted(defaults) == [rate_key, max_key]
        assert defaults[max_key] == ("40", 3, True, [(max_key, "40", 3)])
        only = await describe(admin, BROKER, "0", [max_key], docs=True)
        assert [(c.name, c.value, c.documentation) for c in only.configs] == [
            (max_key, "30", None)]
        await admin.close()


# -- configuration: static properties and dynamic checks ----------------------------------------

def test_static_properties_from_the_environment_are_known_and_checked() -> None:
    properties = merge({}, {"KAFKA_MAX_CONNECTIONS_PER_IP": "2",
                            "KAFKA_MAX_CONNECTIONS": "50",
                            "KAFKA_LISTENER_NAME_EXTERNAL_MAX_CONNECTIONS": "5"},
                       [("max.connections.per.ip.overrides", "localhost:3,10.0.0.1:1")])
    assert properties == {"max.connections.per.ip": "2", "max.connections": "50",
                          "listener.name.external.max.connections": "5",
                          "max.connections.per.ip.overrides": "localhost:3,10.0.0.1:1"}
    assert check_broker_properties(properties) == []
    with pytest.raises(BrokerPropertyError, match="can be set to zero only if"):
        check_broker_properties({"max.connections.per.ip": "0"})
    assert check_broker_properties({"max.connections.per.ip": "0",
                                    "max.connections.per.ip.overrides": "h:1"}) == []
    with pytest.raises(BrokerPropertyError, match="contains invalid addresses : h/x"):
        check_broker_properties({"max.connections.per.ip.overrides": "h/x:1"})
    with pytest.raises(BrokerPropertyError, match="Error parsing configuration property"):
        check_broker_properties({"max.connections.per.ip.overrides": "10.0.0.1:many"})
    with pytest.raises(BrokerPropertyError, match="Value must be at least 0"):
        check_broker_properties({"listener.name.external.max.connections": "-1"})


async def test_dynamic_zero_limits_are_refused_as_kafkas_listener_quota_does() -> None:
    async with MockCluster(brokers=1) as mc:
        admin = await connect_broker(mc)
        for key, base in (("max.connections", "max.connections"),
                          ("listener.name.plaintext.max.connections", "max.connections"),
                          ("max.connection.creation.rate", "max.connection.creation.rate")):
            assert await incremental(admin, BROKER, "", (key, SET, "0")) == (
                INVALID_REQUEST, f"Invalid {base} 0")
        assert await _answers(admin)
        await admin.close()
