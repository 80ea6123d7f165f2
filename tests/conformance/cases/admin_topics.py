"""CreateTopics, DeleteTopics and CreatePartitions: creation with counts and with explicit
assignments, validate_only, the configs a v5+ answer returns, and every refusal a client can
provoke (bad counts, names, configs, duplicates, unknown topics and ids, alice's denials)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conformance.cases.admin_support import (
    OP_CREATE,
    TOPIC,
    grant,
    plain,
    revoke,
    without_uncompared,
)
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases

CREATE_TOPICS = 19
DELETE_TOPICS = 20
CREATE_PARTITIONS = 37
METADATA = 3


def topic_spec(name: str, partitions: int = 1, replication: int = 1, *,
               assignments: list[dict[str, Any]] | None = None,
               configs: dict[str, str | None] | None = None) -> dict[str, Any]:
    return {"name": name, "num_partitions": partitions, "replication_factor": replication,
            "assignments": assignments or [],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}


def create_body(*topics: dict[str, Any], validate_only: bool = False) -> dict[str, Any]:
    return {"topics": list(topics), "timeout_ms": 10000, "validate_only": validate_only}


async def create(s: Session, *topics: dict[str, Any], version: int = 7,
                 validate_only: bool = False, user: str | None = None,
                 label: str | None = None) -> Any:
    """CreateTopics, recorded without admin_support.UNCOMPARED_TOPIC_CONFIGS."""
    answer = await s.call(CREATE_TOPICS, version,
                          create_body(*topics, validate_only=validate_only),
                          user=user, record=False)
    assert answer is not None
    result = plain(answer)
    for topic in result["topics"]:
        if topic.get("configs"):
            topic["configs"] = without_uncompared(topic["configs"])
    s.observe(label or f"{CREATE_TOPICS}v{version}", result)
    return answer


async def describe_topic(s: Session, topic: str, label: str = "metadata") -> None:
    """Metadata v12 of one topic, recorded: whether it exists, its partitions."""
    await s.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                "allow_auto_topic_creation": False,
                                "include_topic_authorized_operations": False}, label=label)


# -- CreateTopics ----------------------------------------------------------------------------

@cases("admin-topics/create", range(2, 8), api=CREATE_TOPICS)
async def create_topic(s: Session, version: int) -> None:
    """A topic with counts; v5+ answers carry its partitions, replication and configs."""
    topic = s.name()
    await create(s, topic_spec(topic, 2), version=version)
    await s.wait_leaders(topic, 2)
    await describe_topic(s, topic)


@cases("admin-topics/create-with-configs", [4, 5, 7], api=CREATE_TOPICS)
async def create_with_configs(s: Session, version: int) -> None:
    """Configs given at creation show as TOPIC_CONFIG in the v5+ answer."""
    topic = s.name()
    await create(s, topic_spec(topic, 1, configs={"cleanup.policy": "compact",
                                                  "retention.ms": "123456",
                                                  "max.message.bytes": "2000000"}),
                 version=version)


@cases("admin-topics/create-defaults", [4, 7], api=CREATE_TOPICS)
async def create_defaults(s: Session, version: int) -> None:
    """num_partitions and replication_factor -1: the broker's defaults (v4+)."""
    topic = s.name()
    await create(s, topic_spec(topic, -1, -1), version=version)
    await s.wait_leaders(topic, 1)


@cases("admin-topics/validate-only", [3, 7], api=CREATE_TOPICS)
async def validate_only(s: Session, version: int) -> None:
    """validate_only creates nothing (v7: the zero topic id)."""
    topic = s.name()
    await create(s, topic_spec(topic, 3), version=version, validate_only=True)
    await describe_topic(s, topic)


@case("admin-topics/validate-only-invalid", api=CREATE_TOPICS)
async def validate_only_invalid(s: Session) -> None:
    await create(s, topic_spec(s.name(), 0), validate_only=True)
    await create(s, topic_spec(s.name("b"), 1, configs={"cleanup.policy": "nope"}),
                 validate_only=True, label="bad config")


@case("admin-topics/explicit-assignment", api=CREATE_TOPICS)
async def explicit_assignment(s: Session) -> None:
    topic = s.name()
    node = s.target.node_ids[0]
    await create(s, topic_spec(topic, -1, -1, assignments=[
        {"partition_index": 0, "broker_ids": [node]},
        {"partition_index": 1, "broker_ids": [node]}]))
    await s.wait_leaders(topic, 2)
    await describe_topic(s, topic)


@case("admin-topics/assignment-unknown-broker", api=CREATE_TOPICS)
async def assignment_unknown_broker(s: Session) -> None:
    await create(s, topic_spec(s.name(), -1, -1, assignments=[
        {"partition_index": 0, "broker_ids": [77]}]))


@case("admin-topics/assignment-with-counts", api=CREATE_TOPICS)
async def assignment_with_counts(s: Session) -> None:
    """Assignments together with a partition count: INVALID_REQUEST."""
    node = s.target.node_ids[0]
    await create(s, topic_spec(s.name(), 1, -1, assignments=[
        {"partition_index": 0, "broker_ids": [node]}]))


@case("admin-topics/assignment-duplicate-broker", api=CREATE_TOPICS)
async def assignment_duplicate_broker(s: Session) -> None:
    node = s.target.node_ids[0]
    await create(s, topic_spec(s.name(), -1, -1, assignments=[
        {"partition_index": 0, "broker_ids": [node, node]}]))


@case("admin-topics/assignment-gap", api=CREATE_TOPICS)
async def assignment_gap(s: Session) -> None:
    """Partition indexes must be 0..n-1 without gaps."""
    node = s.target.node_ids[0]
    await create(s, topic_spec(s.name(), -1, -1, assignments=[
        {"partition_index": 0, "broker_ids": [node]},
        {"partition_index": 2, "broker_ids": [node]}]))


@cases("admin-topics/invalid-partitions", [0, -2], api=CREATE_TOPICS)
async def invalid_partitions(s: Session, count: int) -> None:
    await create(s, topic_spec(s.name(), count))


@cases("admin-topics/invalid-replication", [0, 3, -2], api=CREATE_TOPICS)
async def invalid_replication(s: Session, factor: int) -> None:
    await create(s, topic_spec(s.name(), 1, factor))


@case("admin-topics/already-exists", api=CREATE_TOPICS)
async def already_exists(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await create(s, topic_spec(topic, 2))
    await create(s, topic_spec(topic, 2), validate_only=True, label="validate only")


@case("admin-topics/internal-topic-exists", api=CREATE_TOPICS)
async def internal_topic(s: Session) -> None:
    """__consumer_offsets, once it exists: TOPIC_ALREADY_EXISTS."""
    await s.call(10, 4, {"key_type": 0, "coordinator_keys": [s.name()]}, record=False)
    await s.until(lambda: _exists(s, "__consumer_offsets"), what="__consumer_offsets")
    await create(s, topic_spec("__consumer_offsets", 1), validate_only=True)


async def _exists(s: Session, topic: str) -> bool:
    meta = await s.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": None}],
                                       "allow_auto_topic_creation": False,
                                       "include_topic_authorized_operations": False},
                        record=False)
    return meta is not None and meta.topics[0].error_code == 0


@cases("admin-topics/invalid-name", ["bad name", "..", ".", "x" * 250, "a/b", ""],
       api=CREATE_TOPICS)
async def invalid_name(s: Session, name: str) -> None:
    await create(s, topic_spec(name, 1))


@case("admin-topics/colliding-name", api=CREATE_TOPICS)
async def colliding_name(s: Session) -> None:
    """a.b exists: a_b collides (INVALID_TOPIC_EXCEPTION)."""
    topic = s.name() + ".dot"
    await s.create_topic(topic)
    await create(s, topic_spec(s.name() + "_dot", 1))


@cases("admin-topics/invalid-config", ["unknown", "bad-value", "bad-number", "null",
                                       "out-of-range"], api=CREATE_TOPICS)
async def invalid_config(s: Session, kind: str) -> None:
    choices: dict[str, dict[str, str | None]] = {
        "unknown": {"no.such.config": "1"},
        "bad-value": {"cleanup.policy": "bogus"},
        "bad-number": {"retention.ms": "abc"},
        "null": {"retention.ms": None},
        "out-of-range": {"min.insync.replicas": "0"},
    }
    await create(s, topic_spec(s.name(), 1, configs=choices[kind]))


@case("admin-topics/duplicate-name", api=CREATE_TOPICS)
async def duplicate_name(s: Session) -> None:
    topic = s.name()
    await create(s, topic_spec(topic, 1), topic_spec(topic, 2), topic_spec(s.name("other"), 1))


@case("admin-topics/create-denied", api=CREATE_TOPICS)
async def create_denied(s: Session) -> None:
    """alice has no CREATE: TOPIC_AUTHORIZATION_FAILED; the topic does not exist."""
    topic = s.name()
    await create(s, topic_spec(topic, 1), user="alice")
    await describe_topic(s, topic)


@case("admin-topics/create-without-describe-configs", api=CREATE_TOPICS)
async def create_without_describe_configs(s: Session) -> None:
    """alice may CREATE the topic but not DESCRIBE_CONFIGS it: the v5+ answer withholds the
    configs (topic_config_error_code TOPIC_AUTHORIZATION_FAILED)."""
    topic = s.name()
    await grant(s, TOPIC, topic, OP_CREATE)
    try:
        await s.until(lambda: _can_create(s, topic), what="alice's ACL")
        await create(s, topic_spec(topic, 1), user="alice")
    finally:
        await revoke(s, TOPIC, topic, OP_CREATE)


async def _can_create(s: Session, topic: str) -> bool:
    answer = await s.call(CREATE_TOPICS, 7, create_body(topic_spec(topic, 1), validate_only=True),
                          user="alice", record=False)
    return answer is not None and answer.topics[0].error_code == 0


# -- DeleteTopics ----------------------------------------------------------------------------

async def until_gone(s: Session, topic: str) -> None:
    """Wait (bounded) until Metadata no longer lists the deleted topic, then record that: a
    broker learns of a deletion from the metadata log, a moment after the answer."""
    async def gone() -> bool:
        return not await _exists(s, topic)

    await s.until(gone, what=f"{topic} deleted")
    await describe_topic(s, topic, label="deleted")


def delete_body(version: int, names: list[str] | None = None,
                ids: list[uuid.UUID] | None = None) -> dict[str, Any]:
    if version >= 6:
        topics = [{"name": n, "topic_id": uuid.UUID(int=0)} for n in names or []]
        topics += [{"name": None, "topic_id": i} for i in ids or []]
        return {"topics": topics, "timeout_ms": 10000}
    return {"topic_names": names or [], "timeout_ms": 10000}


@cases("admin-topics/delete", range(1, 7), api=DELETE_TOPICS)
async def delete_by_name(s: Session, version: int) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(DELETE_TOPICS, version, delete_body(version, [topic]))
    await until_gone(s, topic)


@cases("admin-topics/delete-unknown", [1, 5, 6], api=DELETE_TOPICS)
async def delete_unknown(s: Session, version: int) -> None:
    await s.call(DELETE_TOPICS, version, delete_body(version, [s.name("missing")]))


@case("admin-topics/delete-by-id", api=DELETE_TOPICS)
async def delete_by_id(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    topic_id = await s.topic_id(topic)
    await s.call(DELETE_TOPICS, 6, delete_body(6, ids=[topic_id]))
    await until_gone(s, topic)


@case("admin-topics/delete-unknown-id", api=DELETE_TOPICS)
async def delete_unknown_id(s: Session) -> None:
    await s.call(DELETE_TOPICS, 6, delete_body(6, ids=[uuid.uuid4()]))


@case("admin-topics/delete-name-and-id", api=DELETE_TOPICS)
async def delete_name_and_id(s: Session) -> None:
    """A v6 entry naming both a name and an id: INVALID_REQUEST."""
    topic = s.name()
    await s.create_topic(topic)
    topic_id = await s.topic_id(topic)
    await s.call(DELETE_TOPICS, 6, {"topics": [{"name": topic, "topic_id": topic_id}],
                                    "timeout_ms": 10000})


@case("admin-topics/delete-duplicate", api=DELETE_TOPICS)
async def delete_duplicate(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(DELETE_TOPICS, 6, delete_body(6, [topic, topic]))


@case("admin-topics/delete-denied", api=DELETE_TOPICS)
async def delete_denied(s: Session) -> None:
    """alice: TOPIC_AUTHORIZATION_FAILED by name; by id (she cannot describe it) too."""
    topic = s.name()
    await s.create_topic(topic)
    topic_id = await s.topic_id(topic)
    await s.call(DELETE_TOPICS, 6, delete_body(6, [topic]), user="alice")
    await s.call(DELETE_TOPICS, 6, delete_body(6, ids=[topic_id]), user="alice", label="by id")
    await s.call(DELETE_TOPICS, 6, delete_body(6, [s.name("missing")]), user="alice",
                 label="unknown")


@case("admin-topics/delete-invalid-name", api=DELETE_TOPICS)
async def delete_invalid_name(s: Session) -> None:
    await s.call(DELETE_TOPICS, 6, delete_body(6, ["bad name"]))


# -- CreatePartitions ------------------------------------------------------------------------

def partitions_body(topic: str, count: int, assignments: list[list[int]] | None = None, *,
                    validate_only: bool = False) -> dict[str, Any]:
    return {"topics": [{"name": topic, "count": count,
                        "assignments": None if assignments is None else
                        [{"broker_ids": ids} for ids in assignments]}],
            "timeout_ms": 10000, "validate_only": validate_only}


KIP_253_REASON = ("mockbroker implements the draft KIP-253 expansion: adding partitions starts a "
                  "new leader epoch on the existing ones (mockbroker/cluster/kraft/controller.py "
                  "create_partitions); Kafka 4.4 leaves their leader epochs as they were")


@cases("admin-topics/create-partitions", range(0, 4), api=CREATE_PARTITIONS,
       known=KIP_253_REASON)
async def create_partitions(s: Session, version: int) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(CREATE_PARTITIONS, version, partitions_body(topic, 3))
    await s.wait_leaders(topic, 3)
    await describe_topic(s, topic)


@case("admin-topics/create-partitions-validate-only", api=CREATE_PARTITIONS)
async def create_partitions_validate_only(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(CREATE_PARTITIONS, 3, partitions_body(topic, 4, validate_only=True))
    await describe_topic(s, topic)


@cases("admin-topics/create-partitions-not-more", [1, 2], api=CREATE_PARTITIONS)
async def create_partitions_not_more(s: Session, count: int) -> None:
    """Fewer or the same partitions: INVALID_PARTITIONS."""
    topic = s.name()
    await s.create_topic(topic, 2)
    await s.call(CREATE_PARTITIONS, 3, partitions_body(topic, count))


@case("admin-topics/create-partitions-unknown", api=CREATE_PARTITIONS)
async def create_partitions_unknown(s: Session) -> None:
    await s.call(CREATE_PARTITIONS, 3, partitions_body(s.name("missing"), 2))


@case("admin-topics/create-partitions-assignment", api=CREATE_PARTITIONS)
async def create_partitions_assignment(s: Session) -> None:
    topic = s.name()
    node = s.target.node_ids[0]
    await s.create_topic(topic)
    await s.call(CREATE_PARTITIONS, 3, partitions_body(topic, 3, [[node], [node]]))
    await s.wait_leaders(topic, 3)


@cases("admin-topics/create-partitions-bad-assignment", ["count", "broker", "factor"],
       api=CREATE_PARTITIONS)
async def create_partitions_bad_assignment(s: Session, kind: str) -> None:
    topic = s.name()
    node = s.target.node_ids[0]
    await s.create_topic(topic)
    assignments = {"count": [[node]], "broker": [[node], [55]],
                   "factor": [[node], [node, 55]]}[kind]
    await s.call(CREATE_PARTITIONS, 3, partitions_body(topic, 3, assignments))


@case("admin-topics/create-partitions-denied", api=CREATE_PARTITIONS)
async def create_partitions_denied(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    await s.call(CREATE_PARTITIONS, 3, partitions_body(topic, 2), user="alice")


@case("admin-topics/create-partitions-duplicate", api=CREATE_PARTITIONS)
async def create_partitions_duplicate(s: Session) -> None:
    topic = s.name()
    await s.create_topic(topic)
    body = partitions_body(topic, 2)
    body["topics"] = body["topics"] * 2
    await s.call(CREATE_PARTITIONS, 3, body)
