"""The cluster model: the single owner of state, plain synchronous Python.

Mutated only on the event loop; no sockets, no asyncio. Time comes from an injected Clock.

Here: the Cluster (cluster.py and the cluster_*.py parts it is written as), broker sessions
and dynamics, and what every subsystem shares (clock, errors, Kafka ids, internal topics, Java
hash order, wire extensions). One subpackage per subsystem, each saying what it owns: log
(partition logs, replication), kraft (controller, metadata log, images), groups, producers
(producer state, transactions), security (ACLs, SCRAM), quotas, configs, client_telemetry,
persistence (--data-dir).
"""

from mockbroker.cluster.clock import Clock, ManualClock, SystemClock
from mockbroker.cluster.cluster import Cluster, ClusterConfig
from mockbroker.cluster.cluster_errors import ClusterError
from mockbroker.cluster.kraft.broker import BrokerNode
from mockbroker.cluster.kraft.metadata_log import MetadataImage, PartitionImage, TopicImage
from mockbroker.cluster.log.leadership import LeaderCheck
from mockbroker.cluster.log.partition import AppendResult, PartitionLog

__all__ = [
    "AppendResult",
    "BrokerNode",
    "Clock",
    "Cluster",
    "ClusterConfig",
    "ClusterError",
    "LeaderCheck",
    "ManualClock",
    "MetadataImage",
    "PartitionImage",
    "PartitionLog",
    "SystemClock",
    "TopicImage",
]
