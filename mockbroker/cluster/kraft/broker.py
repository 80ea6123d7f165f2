"""One broker as the model sees it: identity, advertised endpoint, liveness, metadata image.

Each broker holds its own metadata image, applied from the controller's log up to its own
offset (it may lag: paused or delayed catch-up), its fetch sessions, and what it learnt from
its latest heartbeat (the offset it acknowledged and the lowest offset every unfenced broker
acknowledged). The Cluster mutates these; handlers read them through RequestContext.
"""

from __future__ import annotations

from mockbroker.cluster.kraft.metadata_log import MetadataImage
from mockbroker.cluster.log.fetch_sessions import FetchSessionCache


class BrokerNode:
    """One broker: its identity, advertised endpoint, liveness and metadata image."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.host = ""
        self.port = 0
        self.up = False
        self.paused = False  # metadata catch-up paused: the image stays as it is
        # cut off from the controller and the other brokers, not from clients (broker_sessions.py)
        self.isolated = False
        # > 0: the broker applies each metadata record only this long after it was written
        # (driven by dynamics.MetadataDelays through Cluster.tick)
        self.metadata_delay_ms = 0
        self.image = MetadataImage()
        self.fetch_sessions = FetchSessionCache()
        # from this broker's latest heartbeat: the offset it acknowledged, the
        # lowest offset acknowledged by all unfenced brokers it was told, and when (clock ms)
        self.acknowledged_offset = -1
        self.lowest_acknowledged_offset = -1
        self.last_heartbeat_ms = -1

    @property
    def applied_offset(self) -> int:
        return self.image.offset
