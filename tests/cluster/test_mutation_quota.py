"""The KIP-599 token bucket on a manual clock: burst = quota x 11 samples x 1 s, refill at the
quota's rate up to the burst, strict (check, then record) versus permissive (record, then
note the throttle), throttle time = -tokens / quota, shrinking as time passes."""

from __future__ import annotations

from mockbroker.cluster import ManualClock
from mockbroker.cluster.quotas.mutation_quota import ControllerMutationQuotas, TokenBucket, burst


def _quotas(values: dict[tuple[str, str], float]) -> tuple[ManualClock,
                                                           ControllerMutationQuotas]:
    clock = ManualClock()
    return clock, ControllerMutationQuotas(clock, lambda user, client: values.get((user, client)))


def test_burst_is_quota_times_samples_times_window() -> None:
    assert burst(5) == 55
    assert burst(5, samples=100, window_ms=1000) == 500  # Kafka's documented example


def test_bucket_refills_at_the_quota_rate_up_to_the_burst() -> None:
    bucket = TokenBucket(tokens=-60, last_update_ms=0)
    bucket.refill(quota=5, burst=500, now_ms=6000)
    assert bucket.tokens == -30
    bucket.refill(quota=5, burst=500, now_ms=12_000)
    assert bucket.tokens == 0
    bucket.refill(quota=5, burst=500, now_ms=1_000_000)
    assert bucket.tokens == 500


def test_strict_accepts_until_negative_then_refuses_until_refilled() -> None:
    clock, quotas = _quotas({("alice", "app"): 2.0})  # 22 tokens
    request = quotas.open("alice", "app", strict=True)
    assert request.record(20) and request.record(5)  # 22 -> 2 -> -3: both accepted
    assert request.throttle_time_ms() == 0  # nothing refused yet
    assert not request.record(1)
    assert request.throttle_time_ms() == 1500  # 3 tokens at 2/s
    clock.advance(500)
    assert request.throttle_time_ms() == 1000  # less the time since it was noted
    assert not quotas.open("alice", "app", strict=True).record(1)  # still -2
    clock.advance(1000)  # -> 0: no longer negative
    assert quotas.open("alice", "app", strict=True).record(1)
    assert quotas.tokens("alice", "app") == -1
    assert (quotas.mutations, quotas.refused) == (26, 2)


def test_permissive_records_everything_and_reports_the_debt() -> None:
    clock, quotas = _quotas({("bob", ""): 10.0})  # 110 tokens
    request = quotas.open("bob", "", strict=False)
    assert request.record(100)
    assert request.throttle_time_ms() == 0
    assert request.record(30)  # -20
    assert request.throttle_time_ms() == 2000
    clock.advance(3000)  # +30 -> 10
    later = quotas.open("bob", "", strict=False)
    assert later.record(5) and later.throttle_time_ms() == 0


def test_no_quota_is_unbounded_and_unmeasured() -> None:
    _, quotas = _quotas({})
    request = quotas.open("carol", "x", strict=True)
    assert all(request.record(1000) for _ in range(10))
    assert quotas.tokens("carol", "x") is None and quotas.mutations == 0


def test_a_changed_quota_keeps_the_tokens() -> None:
    values = {("dave", "c"): 1.0}
    clock, quotas = _quotas(values)
    assert quotas.open("dave", "c", strict=True).record(11)  # 11 -> 0
    values[("dave", "c")] = 100.0  # a higher quota: refill faster, larger burst
    clock.advance(100)
    assert quotas.tokens("dave", "c") == 10
    assert quotas.to_json()["buckets"] == [{"user": "dave", "client_id": "c", "tokens": 10}]
    quotas.reset()
    assert quotas.to_json() == {"mutations": 0, "refused_topics": 0, "throttled_responses": 0,
                                "buckets": []}
