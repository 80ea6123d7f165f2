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
                                "accept_delays_by_listener": {}}


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
