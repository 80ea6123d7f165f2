"""When logs roll, are retired and are cleaned: Kafka's LogManager and LogCleaner schedule.

Theory of operation: every replica's PartitionLog gets a `TopicSegmentPolicy` (through
Replication.segment_policy) that answers the topic's segment.bytes and segment.ms, re-read
whenever the metadata offset moved (an AlterConfigs applies at the next append), and the
injected clock. The cluster tick runs `tick`: every log.retention.check.interval.ms
(default 300000, a static broker property) retention runs over every replica of every topic
whose cleanup.policy has `delete`, and every log.cleaner.backoff.ms (default 15000) the
cleaner looks at every replica of every `compact` topic (log_cleaner.py decides what each
does); the backoff is re-read before each wait, so a dynamic override (per broker or
cluster-wide) applies from the next pass. Both run at most once per tick, so an
advance-clock of hours is one check. Nothing is scheduled with log.cleaner.enable=false. Every producer.id.expiration.check.interval.ms
(default 600000) the producers idle for producer.id.expiration.ms (default one day; both
static broker properties) are forgotten by every replica (producer_state.expire_producers),
so the producer state a partition keeps is bounded by the producers of the last day, as in
Kafka, not by every producer id a client ever made up. `run` does both at once (the control verb
run-log-cleaner), optionally ignoring min.cleanable.dirty.ratio.

Each replica is retired and cleaned on its own, as in Kafka, against its own high watermark;
the leader's retention also moves its followers' log start at once (its replication hook),
as a follower adopts the leader's log start from its fetches. A cleaner pass shares its
output between replicas holding the same batches (log_cleaner.clean_log's memo).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mockbroker.cluster.clock import Clock
from mockbroker.cluster.configs.config_defs import segment_bytes
from mockbroker.cluster.kraft.metadata_log import RESOURCE_BROKER, MetadataImage
from mockbroker.cluster.log.log_cleaner import (
    CleanedBatches,
    LogConfig,
    MemoKey,
    apply_retention,
    clean_log,
    cleanable,
)
from mockbroker.cluster.log.partition import PartitionLog
from mockbroker.cluster.log.replicas import Replication
from mockbroker.cluster.producers.producer_state import expire_producers

DEFAULT_RETENTION_CHECK_MS = 300_000
DEFAULT_CLEANER_BACKOFF_MS = 15_000
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
DEFAULT_PRODUCER_CHECK_MS = 600_000


class LogManagerModel(Protocol):
    """The parts of the Cluster the log manager uses."""

    clock: Clock
    replication: Replication

    @property
    def image(self) -> MetadataImage: ...

    def topic_config(self, name: str, image: MetadataImage | None = None,
                     broker_id: int | None = None) -> dict[str, str]: ...

    def static_broker_config(self, broker_id: int) -> dict[str, str]: ...


class TopicSegmentPolicy:
    """partition.SegmentPolicy for one topic: its segment.bytes/segment.ms and the clock.
    Asked on every append, so it holds the controller's image (one object, applied in
    place as the metadata log grows) and the clock's bound method."""

    def __init__(self, model: LogManagerModel, topic: str) -> None:
        self._model = model
        self._image = model.image
        self._topic = topic
        self._offset = -2
        self._limits = (0, 0)
        self.now_ms = model.clock.now_ms

    def limits(self) -> tuple[int, int]:
        image = self._image
        if image.offset != self._offset:
            config = self._model.topic_config(self._topic, image)
            self._limits = (segment_bytes(config), int(config["segment.ms"]))
            self._offset = image.offset
        return self._limits


@dataclass
class PassResult:
    """What one run did to one replica (the control verb's answer)."""

    topic: str
    partition: int
    broker: int
    segments_deleted: int = 0
    cleaned: bool = False
    records_removed: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "broker": self.broker,
                "segments_deleted": self.segments_deleted, "cleaned": self.cleaned,
                "records_removed": self.records_removed}


class LogManager:
    def __init__(self, model: LogManagerModel) -> None:
        self.model = model
        self._policies: dict[str, TopicSegmentPolicy] = {}
        static = model.static_broker_config(0)
        self.retention_check_ms = int(static.get("log.retention.check.interval.ms",
                                                 DEFAULT_RETENTION_CHECK_MS))
        self.static_cleaner_backoff_ms = int(static.get("log.cleaner.backoff.ms",
                                                        DEFAULT_CLEANER_BACKOFF_MS))
        self.cleaner_backoff_ms = self.static_cleaner_backoff_ms
        self.cleaner_enabled = static.get("log.cleaner.enable", "true").lower() == "true"
        self.producer_expiration_ms = int(static.get("producer.id.expiration.ms",
                                                     DEFAULT_PRODUCER_ID_EXPIRATION_MS))
        self.producer_check_ms = int(static.get("producer.id.expiration.check.interval.ms",
                                                DEFAULT_PRODUCER_CHECK_MS))
        now = model.clock.now_ms()
        self.next_retention_ms = now + self.retention_check_ms
        self.next_cleaning_ms = now + self.cleaner_backoff_ms
        self.next_producer_check_ms = now + self.producer_check_ms

    def segment_policy(self, topic: str) -> TopicSegmentPolicy:
        policy = self._policies.get(topic)
        if policy is None:
            policy = self._policies[topic] = TopicSegmentPolicy(self.model, topic)
        return policy

    def reset(self) -> None:
        """Forget the topics' policies (after a cluster reset their logs are gone)."""
        self._policies.clear()

    # -- scheduling -------------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        if now_ms >= self.next_retention_ms:
            self.next_retention_ms = now_ms + self.retention_check_ms
            self.run_retention(now_ms)
        if self.cleaner_enabled and now_ms >= self.next_cleaning_ms:
            self.cleaner_backoff_ms = self.dynamic_cleaner_backoff_ms()
            self.next_cleaning_ms = now_ms + self.cleaner_backoff_ms
            self.run_cleaner(now_ms)
        if now_ms >= self.next_producer_check_ms:
            self.next_producer_check_ms = now_ms + self.producer_check_ms
            self.expire_producers(now_ms)

    def dynamic_cleaner_backoff_ms(self) -> int:
        """log.cleaner.backoff.ms as the cleaner reads it before each wait: broker 0's
        dynamic override, else the cluster-wide one, else the static value (Kafka's
        LogCleaner reconfigures it at run time)."""
        configs = self.model.image.configs
        for resource in ((RESOURCE_BROKER, "0"), (RESOURCE_BROKER, "")):
            value = configs.get(resource, {}).get("log.cleaner.backoff.ms")
            if value is not None:
                return int(value)
        return self.static_cleaner_backoff_ms

    def expire_producers(self, now_ms: int) -> int:
        """Forget, on every replica, the producers idle for producer.id.expiration.ms;
        how many entries went."""
        return sum(expire_producers(log.producer_states, now_ms, self.producer_expiration_ms)
                   for replica_set in list(self.model.replication.partitions.values())
                   for log in replica_set.logs.values())

    def run(self, topic: str | None = None, *, force: bool = False) -> list[PassResult]:
        """Retention then a cleaner pass now, over every replica (of `topic`); `force`
        cleans compacted logs whatever their dirty ratio."""
        now = self.model.clock.now_ms()
        results: dict[tuple[str, int, int], PassResult] = {}
        for result in self.run_retention(now, topic):
            results[(result.topic, result.partition, result.broker)] = result
        for result in self.run_cleaner(now, topic, force=force):
            entry = results.setdefault((result.topic, result.partition, result.broker), result)
            entry.cleaned, entry.records_removed = result.cleaned, result.records_removed
        return sorted(results.values(), key=lambda r: (r.topic, r.partition, r.broker))

    # -- passes -----------------------------------------------------------------------------

    def _replicas(self, topic: str | None) -> Iterator[tuple[str, int, int, PartitionLog,
                                                             Mapping[str, str]]]:
        configs: dict[str, Mapping[str, str]] = {}
        for replica_set in list(self.model.replication.partitions.values()):
            name = replica_set.topic
            if (topic is not None and name != topic) or name not in self.model.image.topics:
                continue
            config = configs.get(name)
            if config is None:
                config = configs[name] = self.model.topic_config(name)
            for broker_id, log in sorted(replica_set.logs.items()):
                yield name, replica_set.partition, broker_id, log, config

    def run_retention(self, now_ms: int, topic: str | None = None) -> list[PassResult]:
        out = []
        for name, partition, broker_id, log, config in self._replicas(topic):
            deleted = apply_retention(log, LogConfig.of(config), now_ms)
            if deleted:
                out.append(PassResult(name, partition, broker_id, segments_deleted=deleted))
        return out

    def run_cleaner(self, now_ms: int, topic: str | None = None, *,
                    force: bool = False) -> list[PassResult]:
        out = []
        memo: dict[MemoKey, CleanedBatches] = {}
        for name, partition, broker_id, log, config in self._replicas(topic):
            log_config = LogConfig.of(config)
            if not log_config.compact:
                continue
            result = clean_log(log, log_config, now_ms, force=force, memo=memo)
            if result is not None:
                out.append(PassResult(name, partition, broker_id, cleaned=True,
                                      records_removed=result.records_removed))
        return out

    # -- inspection -------------------------------------------------------------------------

    def log_state(self, topic: str, log: PartitionLog) -> dict[str, Any]:
        """What `state` shows of a log: segments, size, log start, the cleaner's view."""
        out: dict[str, Any] = {
            "segments": len(log.segments), "size_bytes": log.size_bytes,
            "log_start_offset": log.log_start_offset,
            "active_segment_base_offset": log.segments[-1].base_offset,
        }
        if topic in self.model.image.topics:
            config = LogConfig.of(self.model.topic_config(topic))
            if config.compact:
                span = cleanable(log, config, self.model.clock.now_ms())
                out.update({"cleaner_last_run_ms": log.cleaner_last_run_ms,
                            "cleaner_checkpoint": log.cleaner_checkpoint,
                            "dirty_ratio": round(span.dirty_ratio, 4)})
        return out
