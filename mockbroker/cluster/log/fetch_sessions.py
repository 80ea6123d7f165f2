"""Fetch sessions (KIP-227), per broker.

Theory of operation: a consumer opens a session with a full fetch (session id 0, epoch 0);
the broker remembers the partitions it asked for and what it last told the consumer about
each (high watermark, LSO, log start). Later fetches are incremental: they name only
partitions that changed (added or updated) or are forgotten, with the session epoch counting
up from 1, and the response lists only partitions with news (records, offsets that moved, or
an error). Epoch -1 closes the session; an unknown id gives FETCH_SESSION_ID_NOT_FOUND and a
wrong epoch INVALID_FETCH_SESSION_EPOCH.

From Fetch v13 (KIP-516) requests name topics by id, and a session opened by such a request
keys its partitions by (topic id, partition), so a topic deleted and recreated under the same
name is a different entry; older versions key by (topic name, partition). A session is one or
the other for its whole life: an incremental request of the other kind gets
FETCH_SESSION_TOPIC_ID_ERROR, as Kafka answers it.

A broker keeps at most MAX_SESSIONS sessions (Kafka's max.incremental.fetch.session.cache.slots
default); a new one beyond that evicts the session used least recently, so consumers that keep
fetching keep theirs however many sessions other clients open and abandon.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TypeAlias

from kafka_protocol_codec.error_codes import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_SESSIONS = 1000

# (topic name, partition) before Fetch v13, (topic id, partition) from v13
SessionKey: TypeAlias = tuple[str | uuid.UUID, int]


@dataclass
class SessionPartition:
    """One partition of a fetch session: what the client last asked and what the broker
    last sent, so an incremental answer carries only changes."""

    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    # what the last response said (None: never sent)
    sent_high_watermark: int | None = None
    sent_last_stable_offset: int | None = None
    sent_log_start_offset: int | None = None


@dataclass
class FetchSession:
    """One KIP-227 incremental fetch session: the partitions it tracks and the epoch its
    next request must carry."""

    session_id: int
    epoch: int  # the epoch the next request must carry
    partitions: dict[SessionKey, SessionPartition] = field(default_factory=dict)
    uses_topic_ids: bool = False


@dataclass
class SessionLookup:
    """How a Fetch request's session fields resolve: an error, or the session to answer
    from and whether in full."""

    error: ErrorCode
    session: FetchSession | None
    full: bool  # answer every partition (new session or sessionless)
    response_session_id: int


class FetchSessionCache:
    def __init__(self) -> None:
        self.sessions: dict[int, FetchSession] = {}
        self._next_id = 1

    def resolve(self, session_id: int, epoch: int,
                uses_topic_ids: bool = False) -> SessionLookup:
        """Apply a request's (session id, epoch) and say how to answer it; `uses_topic_ids`
        says whether the request names topics by id (Fetch v13+)."""
        if session_id == 0:
            if epoch == INITIAL_EPOCH:
                session = self._new_session(uses_topic_ids)
                return SessionLookup(ErrorCode.NONE, session, True, session.session_id)
            if epoch == FINAL_EPOCH:
                return SessionLookup(ErrorCode.NONE, None, True, 0)
            # Kafka's FetchManager: any other epoch is incremental, and no session has id 0
            return SessionLookup(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, None, True, 0)
        existing = self.sessions.get(session_id)
        if epoch == FINAL_EPOCH:
            self.sessions.pop(session_id, None)
            return SessionLookup(ErrorCode.NONE, None, True, 0)
        if epoch == INITIAL_EPOCH:
            self.sessions.pop(session_id, None)
            session = self._new_session(uses_topic_ids)
            return SessionLookup(ErrorCode.NONE, session, True, session.session_id)
        if existing is None:
            return SessionLookup(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, None, True, 0)
        if epoch != existing.epoch:
            return SessionLookup(ErrorCode.INVALID_FETCH_SESSION_EPOCH, None, True, 0)
        if existing.uses_topic_ids != uses_topic_ids:
            return SessionLookup(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, None, True, 0)
        del self.sessions[session_id]  # used now: the last to be evicted
        self.sessions[session_id] = existing
        return SessionLookup(ErrorCode.NONE, existing, False, existing.session_id)

    def _new_session(self, uses_topic_ids: bool) -> FetchSession:
        if len(self.sessions) >= MAX_SESSIONS:
            self.sessions.pop(next(iter(self.sessions)))  # evict the least recently used
        session = FetchSession(self._next_id, 1, uses_topic_ids=uses_topic_ids)
        self._next_id = self._next_id % 0x7FFFFFFF + 1
        self.sessions[session.session_id] = session
        return session

    def forget(self, session_id: int) -> None:
        """Drop a session (one opened by a full fetch that was answered throttled)."""
        self.sessions.pop(session_id, None)

    def clear(self) -> None:
        self.sessions.clear()
