"""Controller mutation quotas (KIP-599): the `controller_mutation_rate` of a (user, client-id)
limits how many partitions its CreateTopics, CreatePartitions and DeleteTopics create or
delete per second, as Kafka's ControllerMutationQuotaManager does.

Theory of operation: each (user, client-id) that has a quota owns a token bucket (Kafka's
TokenBucket). The quota Q (mutations/s) is the refill rate; the bucket holds at most
B = Q x samples x window (controller.quota.window.num 11 x controller.quota.window.size.seconds
1 s: 11 Q). Recording P mutations takes P tokens; the bucket may go below zero. The quota is
exhausted while tokens < 0, and the throttle time is the time to refill to zero:
round(-tokens / Q x 1000) ms.

A request opens one `MutationQuota` and charges it once per topic that passed every other
check, with that topic's partition count, as Kafka's controller does
(ReplicationControlManager calls applyPartitionChangeQuota per topic):
- strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): the bucket is checked
  *before* recording; when already exhausted the topic is refused (THROTTLING_QUOTA_EXCEEDED,
  "The throttling quota has been exceeded.") and the throttle time noted. A topic that finds
  the bucket non-negative is accepted whatever its size, so one request may drive it far
  below zero, and only the next mutation is refused;
- permissive (older versions, whose clients do not know error 89): every mutation is
  accepted and recorded; the throttle time is noted when the bucket ends below zero.
The response carries the noted throttle time, less the time elapsed since it was noted.

The controller in KRaft charges validate_only requests too: a validated topic is charged
before the controller drops the records of a validate-only request, so a dry run spends
tokens (Kafka's ZooKeeper-era broker did not; this follows KRaft).

The buckets are cluster-wide, as KRaft's single active controller measures them. The quota
value is read at each charge through the quota store's lookup, so a changed quota applies to
the next charge, the bucket keeping its tokens (Kafka updates the metric config in place).
A new bucket starts full (Kafka's starts empty at time zero and so fills at once), so a
bucket that has refilled to full is the same as none: `expire` (the cluster's tick) drops
those, and a bucket is kept only while its (user, client-id) is still paying for mutations
(Kafka expires the sensor after an hour without use).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mockbroker.cluster.clock import Clock

CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
SAMPLES = 11  # controller.quota.window.num
WINDOW_MS = 1000  # controller.quota.window.size.seconds
THROTTLING_MESSAGE = "The throttling quota has been exceeded."
STRICT_SINCE = {19: 6, 37: 3, 20: 5}  # CreateTopics, CreatePartitions, DeleteTopics

# (user, client-id) -> the resolved controller_mutation_rate, None: no quota
QuotaLookup = Callable[[str, str], "float | None"]


@dataclass
class TokenBucket:
    """Kafka's TokenBucket stat: refilled at the quota's rate up to the burst."""

    tokens: float
    last_update_ms: int

    def refill(self, quota: float, burst: float, now_ms: int) -> None:
        elapsed_s = max(now_ms - self.last_update_ms, 0) / 1000
        self.tokens = min(burst, self.tokens + quota * elapsed_s)
        self.last_update_ms = now_ms

    def take(self, quota: float, burst: float, permits: float, now_ms: int) -> None:
        self.refill(quota, burst, now_ms)
        self.tokens = min(burst, self.tokens - permits)


def burst(quota: float, samples: int = SAMPLES, window_ms: int = WINDOW_MS) -> float:
    return quota * samples * window_ms / 1000


def throttle_ms(tokens: float, quota: float) -> int:
    """Time to refill a bucket at `tokens` (< 0) to zero, as Kafka rounds it."""
    return round(-tokens / quota * 1000)


class MutationQuota:
    """One request's view of its (user, client-id)'s bucket (Kafka's
    Strict/PermissiveControllerMutationQuota)."""

    def __init__(self, owner: ControllerMutationQuotas, user: str, client_id: str,
                 strict: bool) -> None:
        self._owner = owner
        self.user, self.client_id, self.strict = user, client_id, strict
        self._throttle_ms = 0
        self._noted_at_ms = 0

    def record(self, permits: int) -> bool:
        """Charge `permits` partition mutations; False: refused (strict, quota exhausted)."""
        return self._owner.charge(self, permits)

    def note_throttle(self, throttle: int, now_ms: int) -> None:
        self._throttle_ms, self._noted_at_ms = throttle, now_ms

    def throttle_time_ms(self) -> int:
        """The noted throttle less the time since it was noted (Kafka's throttleTime)."""
        elapsed = self._owner.clock.now_ms() - self._noted_at_ms
        return max(0, self._throttle_ms - elapsed)


class ControllerMutationQuotas:
    """The token buckets of every (user, client-id) with a controller_mutation_rate."""

    def __init__(self, clock: Clock, lookup: QuotaLookup, samples: int = SAMPLES,
                 window_ms: int = WINDOW_MS) -> None:
        self.clock = clock
        self._lookup = lookup
        self.samples, self.window_ms = samples, window_ms
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self._expired_at_ms: int | None = None
        self.mutations = 0  # partition mutations recorded against a quota
        self.refused = 0  # topics refused with THROTTLING_QUOTA_EXCEEDED
        self.throttled_responses = 0

    def open(self, user: str, client_id: str, strict: bool) -> MutationQuota:
        return MutationQuota(self, user, client_id, strict)

    def tokens(self, user: str, client_id: str) -> float | None:
        """The bucket's tokens now (refilled), None without a quota or bucket."""
        quota = self._lookup(user, client_id)
        bucket = self._buckets.get((user, client_id))
        if quota is None or bucket is None:
            return None
        bucket.refill(quota, self._burst(quota), self.clock.now_ms())
        return bucket.tokens

    def _burst(self, quota: float) -> float:
        return burst(quota, self.samples, self.window_ms)

    def charge(self, quota_view: MutationQuota, permits: int) -> bool:
        quota = self._lookup(quota_view.user, quota_view.client_id)
        if quota is None:
            return True  # no quota: unbounded, nothing measured
        now = self.clock.now_ms()
        limit = self._burst(quota)
        bucket = self._buckets.get((quota_view.user, quota_view.client_id))
        if bucket is None:
            bucket = self._buckets[(quota_view.user, quota_view.client_id)] = \
                TokenBucket(limit, now)
        if quota_view.strict:
            bucket.refill(quota, limit, now)
            if bucket.tokens < 0:  # exhausted before this mutation: refused
                quota_view.note_throttle(throttle_ms(bucket.tokens, quota), now)
                self.refused += 1
                return False
            bucket.take(quota, limit, permits, now)
            self.mutations += permits
            return True
        bucket.take(quota, limit, permits, now)
        self.mutations += permits
        if bucket.tokens < 0:
            quota_view.note_throttle(throttle_ms(bucket.tokens, quota), now)
        return True

    def expire(self, now_ms: int) -> None:
        """Drop the buckets that are full again, or whose quota is gone: charging either
        next starts from a full bucket, kept or not (a ticker of the cluster's: at most
        once a window, however often it ticks)."""
        if self._expired_at_ms is not None and 0 <= now_ms - self._expired_at_ms < \
                self.window_ms:
            return
        self._expired_at_ms = now_ms
        for key, bucket in list(self._buckets.items()):
            quota = self._lookup(*key)
            if quota is None or bucket.tokens + quota * max(
                    now_ms - bucket.last_update_ms, 0) / 1000 >= self._burst(quota):
                del self._buckets[key]

    @property
    def bucket_count(self) -> int:
        return len(self._buckets)

    def reset(self) -> None:
        self._buckets.clear()
        self.mutations = self.refused = self.throttled_responses = 0

    def to_json(self) -> dict[str, object]:
        buckets = []
        for (user, client_id) in sorted(self._buckets):
            tokens = self.tokens(user, client_id)
            if tokens is not None:
                buckets.append({"user": user, "client_id": client_id,
                                "tokens": round(tokens, 3)})
        return {"mutations": self.mutations, "refused_topics": self.refused,
                "throttled_responses": self.throttled_responses, "buckets": buckets}
