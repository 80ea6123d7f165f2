"""Metadata: topics that exist, do not exist, are named badly or by unknown ids; auto-creation
with and without the right to create."""

from __future__ import annotations

import uuid

from tests.conformance.harness import Session
from tests.conformance.registry import case, cases

METADATA = 3
VERSIONS = range(0, 13)


def body(version: int, names: list[str] | None, auto_create: bool = False,
         ids: list[uuid.UUID] | None = None) -> dict[str, object]:
    topics: list[dict[str, object]] | None = None
    if names is not None:
        topics = [{"name": n, "topic_id": None} for n in names]
    if ids is not None:
        topics = [{"name": None, "topic_id": i} for i in ids]
    return {"topics": topics, "allow_auto_topic_creation": auto_create,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}


@cases("metadata/existing-topic", VERSIONS, api=METADATA)
async def existing(s: Session, version: int) -> None:
    topic = s.name()
    await s.create_topic(topic, 3)
    await s.call(METADATA, version, body(version, [topic]))


@cases("metadata/unknown-topic", range(4, 13), api=METADATA)
async def unknown(s: Session, version: int) -> None:
    await s.call(METADATA, version, body(version, [s.name("missing")]))


@cases("metadata/invalid-topic-name", [1, 9, 12], api=METADATA)
async def invalid_name(s: Session, version: int) -> None:
    await s.call(METADATA, version, body(version, ["bad name"], auto_create=True))


@cases("metadata/unknown-topic-id", [10, 12], api=METADATA)
async def unknown_id(s: Session, version: int) -> None:
    await s.call(METADATA, version, body(version, None, ids=[uuid.uuid4()]))


@cases("metadata/topic-by-id", [10, 12], api=METADATA)
async def by_id(s: Session, version: int) -> None:
    topic = s.name()
    await s.create_topic(topic, 2)
    await s.call(METADATA, version, body(version, None, ids=[await s.topic_id(topic)]))


@cases("metadata/authorized-operations", [8, 10, 12], api=METADATA)
async def authorized_operations(s: Session, version: int) -> None:
    topic = s.name()
    await s.create_topic(topic)
    request = body(version, [topic])
    request["include_topic_authorized_operations"] = True
    if version <= 10:
        request["include_cluster_authorized_operations"] = True
    await s.call(METADATA, version, request)
    await s.call(METADATA, version, request, user="alice", label="as alice")


@cases("metadata/auto-create-denied", [4, 9, 12], api=METADATA)
async def auto_create_denied(s: Session, version: int) -> None:
    """alice may not create topics: with auto-creation asked for and enabled on the broker,
    Kafka answers TOPIC_AUTHORIZATION_FAILED (29)."""
    await s.call(METADATA, version, body(version, [s.name("nope")], auto_create=True),
                 user="alice")


@cases("metadata/auto-create", [4, 12], api=METADATA)
async def auto_create(s: Session, version: int) -> None:
    """Auto-creation by a super user: the first answer says LEADER_NOT_AVAILABLE, then the
    topic exists with the broker's default partitions."""
    topic = s.name()
    await s.call(METADATA, version, body(version, [topic], auto_create=True))
    meta = await s.wait_leaders(topic, 1)
    s.observe("partitions", len(meta.topics[0].partitions))


@case("metadata/all-topics-as-alice", api=METADATA)
async def all_topics_unauthorized(s: Session) -> None:
    """All topics, as a user with no ACLs: no topic is visible."""
    topic = s.name()
    await s.create_topic(topic)
    answer = await s.call(METADATA, 12, body(12, None), user="alice", record=False)
    assert answer is not None
    s.observe("visible", [t.name for t in answer.topics if t.name.startswith("conf-")])
