"""When a metadata.version change makes brokers close client connections (KIP-778, with the
lowest acknowledged metadata offset of the BrokerHeartbeat proposal).

Theory of operation: every broker advertises ApiVersions from its OWN image (its applied
metadata.version level and finalized-features epoch), so a broker whose metadata is paused or
delayed keeps advertising the old level. A client that negotiated ApiVersions before an
upgrade would never learn the new level on its open connections, so the broker closes them
and the client reconnects and negotiates again. Closing as soon as a broker applies the
FeatureLevelRecord would let a client reconnect to a broker that has not applied it yet; so a
broker waits until the lowest metadata offset acknowledged by every unfenced broker (which it
learns from its own heartbeat) has reached the record: then every broker advertises the new
level.

`FeatureRenegotiation` is told after every heartbeat round (`after_heartbeats`). It scans the
metadata log for metadata.version FeatureLevelRecords written since its last look (the ones
present when it was created, the bootstrap, need no renegotiation) and keeps, per broker, the
newest such record and the brokers that have decided for it (an older change not yet decided
is covered by the newer one). When a running broker's heartbeat answer
carries a lowest acknowledged offset at or past that record, the decision is made once for
that broker: every listener (the server layer, which closes the broker's open connections and
reports how many) is called with a `Renegotiation`, which is kept in `events` for the control
API. A broker that is down when the decision would be made has no connections: its pending
record is dropped, so connections opened after it restarts are never closed for it.

Kafka itself does not close client connections on a metadata.version change: its brokers
advertise ApiVersions from their own image and clients keep what they negotiated until they
reconnect. This module is the behaviour the proposal describes, documented as such.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mockbroker.cluster.kraft.broker import BrokerNode
from mockbroker.cluster.kraft.features import METADATA_VERSION_FEATURE
from mockbroker.cluster.kraft.metadata_log import FEATURE_LEVEL, MetadataLog

MAX_EVENTS = 100  # decisions kept for the control API


@dataclass
class Renegotiation:
    """One broker's decision to close its client connections after a metadata.version change."""

    broker_id: int
    level: int  # the metadata.version level of the record
    record_offset: int  # the FeatureLevelRecord's offset in the metadata log
    lowest_acknowledged_offset: int  # what the broker's heartbeat told it
    at_ms: int  # cluster clock
    closed_connections: int = 0  # filled in by the listeners (the server layer)

    def to_json(self) -> dict[str, int]:
        return {"broker": self.broker_id, "metadata_version": self.level,
                "record_offset": self.record_offset,
                "lowest_acknowledged_offset": self.lowest_acknowledged_offset,
                "at_ms": self.at_ms, "closed_connections": self.closed_connections}


Listener = Callable[[Renegotiation], int]  # returns how many connections it closed


class FeatureRenegotiation:
    """Decides, per broker, when to close client connections after a metadata.version change."""

    def __init__(self, log: MetadataLog) -> None:
        self._log = log
        self._scanned = log.end_offset - 1  # bootstrap records need no renegotiation
        self._latest: tuple[int, int] | None = None  # newest change: (record offset, level)
        self._done: set[int] = set()  # brokers decided (or dropped) for the newest change
        self._listeners: list[Listener] = []
        self.events: list[Renegotiation] = []

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def pending(self, broker_id: int) -> int | None:
        """The offset of the record broker `broker_id` has yet to close connections for."""
        self._scan()
        if self._latest is None or broker_id in self._done:
            return None
        return self._latest[0]

    def _scan(self) -> None:
        for record in self._log.since(self._scanned):
            if record.record_type == FEATURE_LEVEL \
                    and record.data["name"] == METADATA_VERSION_FEATURE:
                self._latest = (record.offset, int(record.data["feature_level"]))
                self._done = set()
            self._scanned = record.offset

    def after_heartbeats(self, brokers: Iterable[BrokerNode], now_ms: int) -> list[Renegotiation]:
        """Make the decisions the latest heartbeat answers allow; returns them."""
        self._scan()
        if self._latest is None:
            return []
        offset, level = self._latest
        decided = []
        for node in brokers:
            if node.broker_id in self._done:
                continue
            if not node.up:
                self._done.add(node.broker_id)
                continue
            if node.lowest_acknowledged_offset < offset:
                continue
            self._done.add(node.broker_id)
            event = Renegotiation(node.broker_id, level, offset,
                                  node.lowest_acknowledged_offset, now_ms)
            for listener in list(self._listeners):
                event.closed_connections += listener(event)
            self.events.append(event)
            decided.append(event)
        del self.events[:-MAX_EVENTS]
        return decided
