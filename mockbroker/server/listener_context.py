"""What one listener shares with every connection it accepts: `ListenerContext`.

Theory of operation: a connection sees its listener only through this frozen record (cluster,
broker, advertised versions, frame limit, hooks, endpoints, security), so it never reaches
back into the BrokerServer that accepted it. `hooks` is the one shared, mutable part: the
connection reads it per request, so faults and traces set while it is open apply at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_protocol_codec.framing import DEFAULT_MAX_FRAME_SIZE

from mockbroker.cluster import BrokerNode, Cluster
from mockbroker.server.hooks import ServerHooks
from mockbroker.server.listeners import PLAINTEXT
from mockbroker.server.sasl import SaslSettings

if TYPE_CHECKING:
    from mockbroker.server.connection_throttle import ConnectionQuotas


@dataclass(frozen=True, slots=True)
class ListenerContext:
    """What one listener shares with every connection it accepts."""

    cluster: Cluster
    node: BrokerNode
    advertised: dict[int, tuple[int, int]]  # API key -> (min, max) version advertised
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    hooks: ServerHooks = field(default_factory=ServerHooks)  # shared, mutable: read per request
    # an extra listener's advertised endpoints by broker id (None: the registered ones)
    endpoints: dict[int, tuple[str, int]] | None = None
    name: str = PLAINTEXT  # the listener name and its security protocol
    security_protocol: str = PLAINTEXT
    sasl: SaslSettings | None = None  # set on SASL_PLAINTEXT and SASL_SSL listeners
    # the broker's connection creation rates (KIP-612), decided before a connection is served
    connection_quotas: ConnectionQuotas | None = None

