"""The cluster model: the single owner of state, plain synchronous Python.

Mutated only on the event loop; no sockets, no asyncio. Time comes from an injected Clock.
"""

from mockbroker.cluster.clock import Clock, ManualClock, SystemClock
from mockbroker.cluster.cluster import BrokerNode, Cluster, ClusterConfig
from mockbroker.cluster.errors import ClusterError
from mockbroker.cluster.metadata import MetadataImage, PartitionImage, TopicImage
from mockbroker.cluster.partition import PartitionLog

__all__ = [
    "BrokerNode",
    "Clock",
    "Cluster",
    "ClusterConfig",
    "ClusterError",
    "ManualClock",
    "MetadataImage",
    "PartitionImage",
    "PartitionLog",
    "SystemClock",
    "TopicImage",
]
