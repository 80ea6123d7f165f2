"""KIP-612 connection creation rates, the sans-IO decisions on a manual clock: Kafka's Rate
over 11 samples of 1 s (a window of at least 10 s), throttle (rate - limit) / limit x window
capped at 1 s; an IP over its rate is throttled and taken back out of every measurement; the
broker-wide and listener rates make the acceptor wait instead."""

from __future__ import annotations

from mockbroker.cluster import ManualClock
from mockbroker.server.connection_throttle import ConnectionQuotas, Rate, listener_rate_key


def _quotas(ip_rates: dict[str, float] | None = None,
            configs: dict[str, str] | None = None) -> tuple[ManualClock, ConnectionQuotas]:
    clock = ManualClock()
    rates = ip_rates or {}
    return clock, ConnectionQuotas(clock, rates.get, lambda: configs or {})


def test_rate_window_is_at_least_ten_samples_then_the_elapsed_time() -> None:
    clock = ManualClock(0)
    rate = Rate()
    rate.record(clock.now_ms(), 10)
    assert rate.measure(0) == (1.0, 10_000)
    assert rate.measure(10_500) == (10 / 10.5, 10_500)
    assert rate.measure(11_000) == (0.0, 10_000)  # the only sample expired


def test_ip_over_its_rate_is_throttled_and_not_counted() -> None:
    clock, quotas = _quotas({"10.0.0.1": 5})
    # 50 connections in the first instant: 50 / 10 s = 5/s, within the quota
    assert [quotas.ip_throttle_ms("PLAINTEXT", "10.0.0.1") for _ in range(50)] == [0] * 50
    # the 51st: 5.1/s, (5.1 - 5) / 5 x 10 s = 200 ms; un-recorded, so the next the same
    assert quotas.ip_throttle_ms("PLAINTEXT", "10.0.0.1") == 200
    assert quotas.ip_throttle_ms("PLAINTEXT", "10.0.0.1") == 200
    assert quotas.rate("10.0.0.1") == 5.0
    assert quotas.throttled_by_ip == {"10.0.0.1": 2}
    # other IPs have no quota here; the window grows with time, the rate falls
    assert quotas.ip_throttle_ms("PLAINTEXT", "10.0.0.2") == 0
    clock.advance(10_200)  # 51 / 10.2 s = 5/s exactly: accepted
    assert quotas.ip_throttle_ms("PLAINTEXT", "10.0.0.1") == 0
    assert quotas.to_json() == {"throttled_by_ip": {"10.0.0.1": 2},
                                "accept_delays_by_listener": {}, "open_by_ip": {},
                                "open_by_listener": {}, "refused_by_ip": {},
                                "slot_waits_by_listener": {}}


def test_throttle_is_capped_at_one_sample() -> None:
    _, quotas = _quotas({"127.0.0.1": 1})
    assert [quotas.ip_throttle_ms("PLAINTEXT", "127.0.0.1") for _ in range(12)] == \
        [0] * 10 + [1000, 1000]  # (1.1 - 1) / 1 x 10 s = 1 s, the cap


def test_no_quota_never_throttles_and_a_fraction_below_one_refuses_all() -> None:
    _, quotas = _quotas({"10.0.0.3": 0.5})
    assert all(quotas.ip_throttle_ms("L", "10.0.0.9") == 0 for _ in range(1000))
    assert quotas.ip_throttle_ms("L", "10.0.0.3") == 1000  # Kafka's int quota: 0


def test_broker_and_listener_rates_delay_the_acceptor() -> None:
    configs = {"max.connection.creation.rate": "2", listener_rate_key("EXTERNAL"): "1"}
    clock, quotas = _quotas(configs=configs)
    assert [quotas.accept_delay_ms("PLAINTEXT") for _ in range(20)] == [0] * 20
    # broker-wide: 21 / 10 s = 2.1/s, (2.1 - 2) / 2 x 10 s = 500 ms
    assert quotas.accept_delay_ms("PLAINTEXT") == 500
    # EXTERNAL's own limit (1/s) is still free, the broker-wide one is not
    assert quotas.accept_delay_ms("EXTERNAL") == 1000  # 2.2/s: (0.2 / 2) x 10 s
    assert quotas.delayed_by_listener == {"PLAINTEXT": 1, "EXTERNAL": 1}
    clock.advance(11_000)  # every sample expired
    assert [quotas.accept_delay_ms("EXTERNAL") for _ in range(10)] == [0] * 10
    assert quotas.accept_delay_ms("EXTERNAL") == 1000  # its listener limit: 1.1/s


def test_an_ip_throttled_connection_leaves_the_broker_rate() -> None:
    configs = {"max.connection.creation.rate": "1"}
    _, quotas = _quotas({"10.0.0.1": 1}, configs)
    for _ in range(10):
        assert quotas.accept_delay_ms("PLAINTEXT") == 0
        assert quotas.ip_throttle_ms("PLAINTEXT", "10.0.0.1") == 0
    assert quotas.accept_delay_ms("PLAINTEXT") == 1000  # broker-wide 1.1/s
    assert quotas.ip_throttle_ms("PLAINTEXT", "10.0.0.1") == 1000  # and its IP: un-recorded
    # the broker's rate is back at 10 connections: the next waits as long as the 11th
    assert quotas.accept_delay_ms("PLAINTEXT") == 1000
    quotas.reset()
    assert quotas.accept_delay_ms("PLAINTEXT") == 0 and quotas.throttled_by_ip == {}


# -- connection counts: max.connections, per listener, per IP (Kafka's ConnectionQuotas.inc) --

def test_per_ip_limit_refuses_at_the_limit_and_frees_on_close() -> None:
    _, quotas = _quotas(configs={"max.connections.per.ip": "2"})
    assert [quotas.open("PLAINTEXT", "127.0.0.1") for _ in range(3)] == [True, True, False]
    assert quotas.open("PLAINTEXT", "10.0.0.1")  # another IP has its own count
    assert quotas.open_by_ip == {"127.0.0.1": 2, "10.0.0.1": 1}
    assert quotas.refused_by_ip == {"127.0.0.1": 1}
    quotas.close("PLAINTEXT", "127.0.0.1")
    assert quotas.open("SSL", "127.0.0.1")  # a slot again, on any listener
    assert quotas.open_by_listener == {"PLAINTEXT": 2, "SSL": 1}


def test_per_ip_overrides_resolve_hosts_and_beat_the_default() -> None:
    configs = {"max.connections.per.ip": "0",
               "max.connections.per.ip.overrides": "localhost:1, 10.0.0.7:3,::1:2"}
    hosts = {"localhost": "127.0.0.1"}
    quotas = ConnectionQuotas(ManualClock(), {}.get, lambda: configs,
                              lambda host: hosts.get(host, host))
    assert quotas.max_connections_for("127.0.0.1") == 1
    assert quotas.max_connections_for("10.0.0.7") == 3
    assert quotas.max_connections_for("0:0:0:0:0:0:0:1") == 2  # IPv6, normalised
    assert quotas.max_connections_for("10.0.0.8") == 0
    assert not quotas.open("PLAINTEXT", "10.0.0.8")  # 0: every connection refused
    assert [quotas.open("PLAINTEXT", "127.0.0.1") for _ in range(2)] == [True, False]


def test_broker_and_listener_max_connections_block_the_slot() -> None:
    configs = {"max.connections": "3", "listener.name.external.max.connections": "1"}
    _, quotas = _quotas(configs=configs)
    assert quotas.slot_available("EXTERNAL") and quotas.open("EXTERNAL", "10.0.0.1")
    assert not quotas.slot_available("EXTERNAL")  # its listener limit
    assert quotas.slot_available("PLAINTEXT")
    assert quotas.open("PLAINTEXT", "10.0.0.1") and quotas.open("PLAINTEXT", "10.0.0.2")
    assert not quotas.slot_available("PLAINTEXT")  # broker-wide: 3 open
    freed: list[str] = []
    quotas.slot_freed.append(lambda: freed.append("woken"))
    quotas.close("EXTERNAL", "10.0.0.1")
    assert freed == ["woken"]
    assert quotas.slot_available("PLAINTEXT") and quotas.slot_available("EXTERNAL")
    assert quotas.total_open == 2 and quotas.excess() == 0
    configs["max.connections"] = "1"  # lowered dynamically: one too many
    assert quotas.excess() == 1
    quotas.reset()  # counters go; the open connections stay counted
    assert quotas.total_open == 2 and quotas.refused_by_ip == {}


def test_unset_limits_are_kafkas_int_max() -> None:
    _, quotas = _quotas()
    assert all(quotas.open("L", "10.0.0.1") for _ in range(1000))
    assert quotas.slot_available("L") and quotas.max_connections_for("10.0.0.1") == 2**31 - 1
