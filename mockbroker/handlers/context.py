"""What a handler knows about the request it is answering."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_protocol_codec import TypedStruct

from mockbroker.cluster import BrokerNode, Cluster, MetadataImage


class CloseAfterRequest(Exception):
    """The request was carried out, and its client learns that something failed only by
    the connection closing: Kafka's answer to a Produce with acks=0 refused anywhere (no
    response is expected, so the producer sees the close and refreshes its metadata). Also
    raised for a request Kafka cannot even parse past its schema (a DescribeAcls filter with
    UNKNOWN elements), which it answers by closing. The server logs `reason` and closes."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)  # built for every request: slots make it cheaper to build and read
class RequestContext:
    """What a handler knows beyond the request body: the cluster and receiving broker, the
    header, the client and its listener."""

    cluster: Cluster
    broker: BrokerNode
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: TypedStruct  # the decoded request header (a generated RequestHeader)
    client_address: str = ""
    advertised: dict[int, tuple[int, int]] = field(default_factory=dict)
    # the endpoints of the listener the request arrived on, by broker id; None: the endpoints
    # registered in the metadata log (the first listener set)
    listener_endpoints: dict[int, tuple[str, int]] | None = None
    # who sent it (Kafka's KafkaPrincipal: User:ANONYMOUS, User:CN=... from a client
    # certificate, User:NAME after SASL) and on which listener, for authorization
    principal: str = "User:ANONYMOUS"
    listener_name: str = "PLAINTEXT"
    # set by quota enforcement (handlers.client_quotas): mute the connection this long after
    # the answer (KIP-219), or, for clients from before it, hold the answer that long
    throttle_ms: int = 0
    delay_response: bool = False
    # the handler recorded its quotas itself (a Fetch, as Kafka's handleFetchRequest does)
    quotas_recorded: bool = False
    # what the control API's faults make of the handler's response (injected partition
    # errors, mockbroker.control.faults), applied by the dispatcher before the answer is
    # decided (a Produce with acks=0 then closes on an injected error as on a real one)
    response_hook: Callable[[Mapping[str, Any] | None], Mapping[str, Any] | None] | None = None

    @property
    def image(self) -> MetadataImage:
        """The receiving broker's own metadata image (possibly stale)."""
        return self.broker.image

    @property
    def read_image(self) -> MetadataImage:
        """The image metadata reads (Metadata, DescribeConfigs, ListGroups, DescribeCluster)
        are answered from: the broker's own, or in consistent-read mode the image
        at min(its applied offset, the lowest acknowledged offset)."""
        return self.cluster.read_image(self.broker)

    @property
    def broker_id(self) -> int:
        return self.broker.broker_id

    def endpoint(self, broker_id: int, host: str, port: int) -> tuple[str, int]:
        """The (host, port) to tell this client for a broker whose registered endpoint is
        (host, port): that broker's endpoint on the listener the request arrived on, as
        Kafka answers with the request's listener name."""
        if self.listener_endpoints is None:
            return host, port
        return self.listener_endpoints.get(broker_id, (host, port))

    def now_ms(self) -> int:
        return self.cluster.clock.now_ms()
