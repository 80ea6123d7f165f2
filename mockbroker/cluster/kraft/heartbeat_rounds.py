"""Broker heartbeats (lowest acknowledged metadata offset), on the wire as BrokerHeartbeat v1.

Theory of operation: KRaft brokers heartbeat the active controller every
broker.heartbeat.interval.ms, carrying the metadata offset they have applied. Here every
running broker does so at `ClusterConfig.heartbeat_interval_ms` (Cluster.tick drives it).
Each heartbeat goes through the generated codec exactly as it would cross the network: the
broker's request (header v2 and body) is encoded, handed to the controller in-process and
decoded there; the controller's answer is encoded as a response and decoded by the broker.
Nothing but bytes passes between the two sides.

The answer carries LowestAcknowledgedOffset: the lowest metadata offset every unfenced
broker has acknowledged. A draft KIP adds it as a plain v1 field; the real v1
schema has no such field, so mockbroker carries it as a tagged-field extension of the v1
response (tag 16384, wire_extensions.py; docs/extensions.md). A decoder that does not know
the tag skips it, so the response stays valid BrokerHeartbeat v1.

The heartbeats of one interval are answered together (Controller.heartbeat_round): the
controller records every acknowledgement first and then answers, so all brokers learn the
same lowest offset in the same loop turn. That keeps consistent-read mode monotonic across
brokers (a client reading round-robin never sees an older view after a newer one), where
independently timed heartbeats would leave brokers briefly disagreeing about the value.

Why not one timer per broker (Kafka's broker.heartbeat.interval.ms runs per broker): broker A
heartbeating after the lowest offset rose learns the new value while broker B, due later in
the interval, still serves the old one, so a client reading A then B goes back. Independent
timers would keep the guarantee only with a shared switch-over instant: the controller
snapshots the lowest offset at each interval boundary of the common clock, every answer in
that interval carries the snapshot, and brokers serve it from the next boundary on. That
holds only while every unfenced broker heartbeats at least once per interval (a late one,
e.g. a stalled event loop, serves an older value until its next heartbeat), makes consistent
reads lag one more interval, and needs the period in the answer; the single round keeps the
guarantee unconditional.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from kafka_protocol_codec import decode_request, decode_response, encode_request, encode_response
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import wire_extensions
from mockbroker.cluster.kraft.controller import Controller

if TYPE_CHECKING:  # the generated classes, for annotations only
    from kafka_protocol_codec.generated.broker_heartbeat import (
        BrokerHeartbeatRequest,
        BrokerHeartbeatResponse,
    )

BROKER_HEARTBEAT = wire_extensions.BROKER_HEARTBEAT
VERSION = 1


@dataclass(frozen=True)
class HeartbeatRequest:
    """What a broker tells the controller in a BrokerHeartbeat: who it is and how far it
    has replayed the metadata log."""

    broker_id: int
    broker_epoch: int
    current_metadata_offset: int


@dataclass(frozen=True)
class HeartbeatResult:
    """What a broker reads from the controller's answer."""

    broker_id: int
    sent_offset: int
    error: ErrorCode
    is_caught_up: bool
    is_fenced: bool
    lowest_acknowledged_offset: int


_correlation = itertools.count(1)


def encode_heartbeat(request: HeartbeatRequest, correlation_id: int) -> bytes:
    """The broker side: a BrokerHeartbeat v1 request frame (without the size prefix)."""
    return encode_request(BROKER_HEARTBEAT, VERSION, {
        "broker_id": request.broker_id, "broker_epoch": request.broker_epoch,
        "current_metadata_offset": request.current_metadata_offset,
        "want_fence": False, "want_shut_down": False, "offline_log_dirs": []},
        correlation_id=correlation_id, client_id=f"broker-{request.broker_id}")


def answer_heartbeats(controller: Controller, frames: Sequence[bytes]) -> list[bytes]:
    """The controller side: decode request frames, answer them together, encode answers."""
    requests = [decode_request(frame) for frame in frames]
    answers = controller.heartbeat_round([cast("BrokerHeartbeatRequest", r.body)
                                          for r in requests])
    return [encode_response(BROKER_HEARTBEAT, r.api_version, r.correlation_id, answer)
            for r, answer in zip(requests, answers, strict=True)]


def heartbeat_round(controller: Controller,
                    requests: Sequence[HeartbeatRequest]) -> list[HeartbeatResult]:
    """Send one heartbeat per broker to the controller and decode the answers."""
    ids = [next(_correlation) for _ in requests]
    frames = [encode_heartbeat(r, cid) for r, cid in zip(requests, ids, strict=True)]
    results = []
    for request, cid, frame in zip(requests, ids, answer_heartbeats(controller, frames),
                                   strict=True):
        response = decode_response(BROKER_HEARTBEAT, VERSION, frame)
        if response.correlation_id != cid:
            raise AssertionError(f"heartbeat answer {response.correlation_id} for {cid}")
        body = cast("BrokerHeartbeatResponse", response.body)
        results.append(HeartbeatResult(
            request.broker_id, request.current_metadata_offset, ErrorCode(body.error_code),
            bool(body.is_caught_up), bool(body.is_fenced), body.lowest_acknowledged_offset))
    return results
