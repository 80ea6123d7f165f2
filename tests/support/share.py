"""A minimal KIP-932 share consumer over any Requester (RawClient or a HandlerHarness broker):
the request bodies of ShareGroupHeartbeat, ShareFetch and ShareAcknowledge, and the values
of the records a ShareFetch acquired. Tests drive every step by hand; nothing here retries.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import decode_batch

from tests.support.rawclient import Requester

SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE, SHARE_FETCH, SHARE_ACKNOWLEDGE = 76, 77, 78, 79


def share_groups_enabled() -> dict[str, str]:
    """The broker properties with which Kafka 4.0 (and mockbroker) exposes the unstable
    KIP-932 APIs; a fresh dict each time (the cluster consumes it)."""
    return {"unstable.api.versions.enable": "true",
            "group.coordinator.rebalance.protocols": "classic,consumer,share"}

ACCEPT, RELEASE, REJECT = 1, 2, 3


def heartbeat_body(group: str, member_id: str, epoch: int,
                   topics: list[str] | None = None) -> dict[str, Any]:
    return {"group_id": group, "member_id": member_id, "member_epoch": epoch,
            "rack_id": None, "subscribed_topic_names": topics}


def ack_topics(topic_id: uuid.UUID, partition: int,
               acks: list[tuple[int, int, int]], fetch: bool) -> list[dict[str, Any]]:
    """One topic entry: (first, last, type) batches for one partition."""
    part: dict[str, Any] = {"partition_index": partition, "acknowledgement_batches": [
        {"first_offset": f, "last_offset": last, "acknowledge_types": [t]}
        for f, last, t in acks]}
    if fetch:
        part["partition_max_bytes"] = 1 << 20
    return [{"topic_id": topic_id, "partitions": [part]}]


@dataclass
class Delivery:
    """What one ShareFetch handed out on one partition."""

    values: dict[int, bytes | None] = field(default_factory=dict)  # offset -> value
    delivery_counts: dict[int, int] = field(default_factory=dict)


def delivered(response: Struct) -> Delivery:
    """The acquired records of a ShareFetch response (only acquired offsets count)."""
    out = Delivery()
    for topic in response.responses:
        for part in topic.partitions:
            counts = {o: r.delivery_count for r in part.acquired_records
                      for o in range(r.first_offset, r.last_offset + 1)}
            for raw in split_batches(part.records or b""):
                for record in decode_batch(raw).records:
                    if record.offset in counts:
                        out.values[record.offset] = record.value
                        out.delivery_counts[record.offset] = counts[record.offset]
    return out


@dataclass
class ShareMemberClient:
    """One member's view: its id, epoch and share session epoch on one broker."""

    coordinator: Requester
    leader: Requester
    group: str
    member_id: str = ""
    member_epoch: int = 0
    session_epoch: int = 0

    async def join(self, topics: list[str]) -> Struct:
        response = await self.coordinator.request(
            SHARE_GROUP_HEARTBEAT, 0, heartbeat_body(self.group, self.member_id, 0, topics))
        if response.error_code == 0:
            self.member_id, self.member_epoch = response.member_id, response.member_epoch
        return response

    async def heartbeat(self) -> Struct:
        response = await self.coordinator.request(
            SHARE_GROUP_HEARTBEAT, 0,
            heartbeat_body(self.group, self.member_id, self.member_epoch))
        if response.error_code == 0:
            self.member_epoch = response.member_epoch
        return response

    async def leave(self) -> Struct:
        return await self.coordinator.request(
            SHARE_GROUP_HEARTBEAT, 0, heartbeat_body(self.group, self.member_id, -1))

    async def fetch(self, topic_id: uuid.UUID, partition: int = 0,
                    acks: list[tuple[int, int, int]] | None = None, *,
                    max_wait_ms: int = 0, min_bytes: int = 1,
                    close: bool = False) -> Struct:
        epoch = -1 if close else self.session_epoch
        body = {"group_id": self.group, "member_id": self.member_id,
                "share_session_epoch": epoch, "max_wait_ms": max_wait_ms,
                "min_bytes": min_bytes, "max_bytes": 1 << 24,
                "topics": ack_topics(topic_id, partition, acks or [], fetch=True),
                "forgotten_topics_data": []}
        response = await self.leader.request(SHARE_FETCH, 0, body)
        if response.error_code == 0:
            self.session_epoch = 0 if close else self.session_epoch + 1
        return response

    async def acknowledge(self, topic_id: uuid.UUID, partition: int,
                          acks: list[tuple[int, int, int]], close: bool = False) -> Struct:
        body = {"group_id": self.group, "member_id": self.member_id,
                "share_session_epoch": -1 if close else self.session_epoch,
                "topics": ack_topics(topic_id, partition, acks, fetch=False)}
        response = await self.leader.request(SHARE_ACKNOWLEDGE, 0, body)
        if response.error_code == 0:
            self.session_epoch = 0 if close else self.session_epoch + 1
        return response
