"""The differential harness: one case, the same requests, two clusters, one comparison.

Theory of operation. A *target* is a running cluster reached over loopback: mockbroker
(in-process, one broker, configured like the real node) or the session's real Kafka (one
KRaft node, tests/support/real_kafka.py). Both have a PLAINTEXT listener whose principal
(ANONYMOUS) is a super user, and a SASL_PLAINTEXT listener with PLAIN users `admin` (super
user) and `alice` (no ACLs unless a case grants them), and the standard authorizer on.

A *case* (tests/conformance/registry.py) is an async function given a `Session` bound to one
target. It sends requests with the project's own codec (`Session.call`), each answered
response normalised (tests/conformance/normalize.py) and appended to the session's
*transcript*, and may add derived observations (`Session.observe`). The same case runs
against both targets concurrently (topic and group names carry the case's id, so the shared
real Kafka never sees one case's names in another); the two transcripts must agree field by
field. Steps that are not part of the comparison (setup, waiting for a leader) pass
`record=False`.

A closed connection is an outcome too ({"closed": True}); the next call reconnects. Every
wait is bounded: a request by `REQUEST_TIMEOUT`, a polling helper by its own deadline.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.api import api
from kafka_protocol_codec.records import RecordSpec, build_batch

from tests.conformance.normalize import Normalizer, at_version
from tests.support.rawclient import ConnectionClosed, RawClient
from tests.support.real_kafka import SESSION_SASL_USERS

REQUEST_TIMEOUT = 15.0
WAIT_TIMEOUT = 20.0
USERS = SESSION_SASL_USERS  # admin (a super user) and alice (only what ACLs grant)


@dataclass(frozen=True)
class Target:
    """A cluster to send cases to."""

    name: str  # "mockbroker" or "kafka"
    port: int  # PLAINTEXT, principal ANONYMOUS (a super user)
    sasl_port: int  # SASL_PLAINTEXT with PLAIN
    node_ids: tuple[int, ...]


CLOSED = {"closed": True}


@dataclass
class Session:
    """One case against one target: its connections, names and transcript."""

    target: Target
    case_id: str
    transcript: list[Any] = field(default_factory=list)
    _connections: dict[str | None, RawClient] = field(default_factory=dict)
    normalizer: Normalizer = field(init=False)

    def __post_init__(self) -> None:
        self.normalizer = Normalizer(self.target.node_ids)

    # -- names -------------------------------------------------------------------------------

    def name(self, suffix: str = "") -> str:
        """A topic / group / transactional id unique to this case (the same on both
        targets)."""
        base = f"conf-{self.case_id}".replace("/", "-").replace("[", "-").replace("]", "")
        return f"{base}-{suffix}" if suffix else base

    # -- connections -------------------------------------------------------------------------

    async def connection(self, user: str | None = None) -> RawClient:
        """A connection as ANONYMOUS (PLAINTEXT) or as a SASL PLAIN `user`, kept open."""
        if user in self._connections:
            return self._connections[user]
        if user is None:
            raw = await RawClient.connect(self.target.port, client_id="conformance")
        else:
            raw = await RawClient.connect(self.target.sasl_port, client_id="conformance")
            await self.authenticate(raw, user, USERS[user])
        self._connections[user] = raw
        return raw

    async def authenticate(self, raw: RawClient, user: str, password: str) -> Struct:
        """SaslHandshake v1 + SaslAuthenticate v2 with PLAIN; returns the authenticate
        response (raises AssertionError on a refused login)."""
        handshake = await raw.request(17, 1, {"mechanism": "PLAIN"})
        assert handshake.error_code == 0, handshake
        answer = await raw.request(36, 2, {"auth_bytes": f"\0{user}\0{password}".encode()})
        assert answer.error_code == 0, answer
        return answer

    async def reconnect(self, user: str | None = None) -> None:
        raw = self._connections.pop(user, None)
        if raw is not None:
            await raw.close()

    async def close(self) -> None:
        for raw in self._connections.values():
            await raw.close()
        self._connections.clear()

    # -- requests ----------------------------------------------------------------------------

    async def call(self, api_key: int, version: int, body: Mapping[str, Any] | None = None,
                   *, user: str | None = None, record: bool = True,
                   label: str | None = None) -> Struct | None:
        """Send one request and return its decoded response (None when the broker closed
        the connection). Recorded in the transcript unless `record=False`."""
        raw = await self.connection(user)
        try:
            response: Struct | None = await raw.request(api_key, version, body,
                                                        timeout=REQUEST_TIMEOUT)
        except ConnectionClosed:
            response = None
            await self.reconnect(user)
        if record:
            self.transcript.append({
                "step": label or f"{api_key}v{version}",
                "response": CLOSED if response is None else self.normalizer.value(
                    "", at_version(api(api_key).response.fields, version, response))})
        return response

    def observe(self, label: str, value: Any) -> None:
        """Record a derived observation (normalised like a response)."""
        self.transcript.append({"step": label, "observed": self.normalizer.value("", value)})

    # -- setup helpers (not recorded unless asked) -------------------------------------------

    async def create_topic(self, name: str, partitions: int = 1,
                           configs: Mapping[str, str] | None = None) -> Struct | None:
        """CreateTopics v7 and wait until every partition has a leader (unrecorded)."""
        body = {"topics": [{"name": name, "num_partitions": partitions,
                            "replication_factor": 1, "assignments": [],
                            "configs": [{"name": k, "value": v}
                                        for k, v in (configs or {}).items()]}],
                "timeout_ms": 10000, "validate_only": False}
        answer = await self.call(19, 7, body, record=False)
        assert answer is not None and answer.topics[0].error_code == 0, answer
        await self.wait_leaders(name, partitions)
        return answer

    async def wait_leaders(self, topic: str, partitions: int) -> Struct:
        """Poll Metadata until `topic` has `partitions` partitions, each with a leader."""
        deadline = time.monotonic() + WAIT_TIMEOUT
        while True:
            meta = await self.call(3, 12, {"topics": [{"name": topic, "topic_id": None}],
                                           "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False},
                                   record=False)
            assert meta is not None
            topics = meta.topics
            if (topics and topics[0].error_code == 0 and len(topics[0].partitions) == partitions
                    and all(p.leader_id >= 0 and p.error_code == 0
                            for p in topics[0].partitions)
                    and await self._leading(topic, partitions)):
                return meta
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.target.name}: {topic} has no leaders: {meta}")
            await asyncio.sleep(0.05)

    async def _leading(self, topic: str, partitions: int) -> bool:
        """Whether the leader serves every partition already: Kafka's metadata cache names
        a leader a moment before its replica manager acts as one (ListOffsets, unrecorded)."""
        answer = await self.call(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{
            "name": topic, "partitions": [{"partition_index": i, "current_leader_epoch": -1,
                                           "timestamp": -1} for i in range(partitions)]}]},
                                 record=False)
        return answer is not None and all(p.error_code == 0 for t in answer.topics
                                          for p in t.partitions)

    async def topic_id(self, topic: str) -> uuid.UUID:
        """The topic's id from Metadata (unrecorded)."""
        meta = await self.call(3, 12, {"topics": [{"name": topic, "topic_id": None}],
                                       "allow_auto_topic_creation": False,
                                       "include_topic_authorized_operations": False},
                               record=False)
        assert meta is not None
        return uuid.UUID(str(meta.topics[0].topic_id))

    async def produce(self, topic: str, values: Sequence[bytes | None], *,
                      partition: int = 0, version: int = 9, acks: int = -1,
                      record: bool = False, keys: Sequence[bytes | None] | None = None,
                      timestamp: int | None = None, **batch: Any) -> Struct | None:
        """Produce one batch of `values` (unrecorded unless asked)."""
        specs = [RecordSpec(value=v, key=None if keys is None else keys[i])
                 for i, v in enumerate(values)]
        data = build_batch(specs, base_timestamp=timestamp, **batch)
        return await self.call(0, version, produce_body(topic, partition, data, acks=acks),
                               record=record)

    async def until(self, check: Any, *, timeout: float = WAIT_TIMEOUT,
                    what: str = "a condition") -> Any:
        """Await `check()` until it returns something truthy (bounded)."""
        deadline = time.monotonic() + timeout
        while True:
            result = await check()
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.target.name}: {what} not reached in {timeout} s")
            await asyncio.sleep(0.05)


def produce_body(topic: str, partition: int, data: bytes, *, acks: int = -1,
                 transactional_id: str | None = None,
                 timeout_ms: int = 10000) -> dict[str, Any]:
    return {"transactional_id": transactional_id, "acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": data}]}]}


def now_ms() -> int:
    return int(time.time() * 1000)


__all__ = [
    "CLOSED",
    "REQUEST_TIMEOUT",
    "USERS",
    "Session",
    "Target",
    "now_ms",
    "produce_body",
]
