"""CreateTopics (key 19) v0-7, DeleteTopics (key 20) v0-6, CreatePartitions (key 37) v0-3.

Where admin requests are handled: any broker accepts them and applies them through the
controller (Cluster.create_topic / delete_topic / create_partitions write to the metadata log
and propagate), as KRaft brokers forward them to the active controller. Validation therefore
uses the controller's view (Cluster.image), not the receiving broker's possibly stale image.

The checks, their order and their messages follow Kafka's KRaft controller
(ControllerApis and ReplicationControlManager):
- a name given twice in one request: INVALID_REQUEST "Duplicate topic name." once for that
  name (after the other results), the name is otherwise ignored;
- CreateTopics: illegal name (INVALID_TOPIC_EXCEPTION), existing topic (TOPIC_ALREADY_EXISTS),
  a name colliding with an existing one by '.'/'_' (INVALID_TOPIC_EXCEPTION), null or invalid
  configs (INVALID_CONFIG), then either a manual assignment (num_partitions and
  replication_factor must both be -1: INVALID_REQUEST; bad replica lists:
  INVALID_REPLICA_ASSIGNMENT) or counts (-1: broker default; 0 or below -1:
  INVALID_PARTITIONS / INVALID_REPLICATION_FACTOR; more replicas than live brokers:
  INVALID_REPLICATION_FACTOR). v5+ results carry the partition count, replication factor and
  the effective configs with their sources (withheld, topic_config_error_code
  TOPIC_AUTHORIZATION_FAILED and the counts -1, from a creator without DESCRIBE_CONFIGS on
  the topic); v7 the topic id (for validate_only, where no
  topic is created, a fresh random id: Kafka's controller draws the id before it validates).
- DeleteTopics: v0-5 by name, v6 by name or id (not both); unknown names
  UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID.
- CreatePartitions: the count must grow (INVALID_PARTITIONS), manual assignments must supply
  one replica list per new partition with the topic's replication factor.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster, ClusterError
from mockbroker.cluster.cluster_topics import TOO_LARGE_OPERATION, check_partitions_per_request
from mockbroker.cluster.internal_topics import METADATA_TOPIC
from mockbroker.cluster.kafka_uuid import ZERO_UUID
from mockbroker.cluster.quotas.mutation_quota import MutationQuota
from mockbroker.cluster.security.authorizer import AclOperation, ResourceType
from mockbroker.handlers.authorization_checks import allowed
from mockbroker.handlers.common import UNKNOWN_TOPIC_MESSAGE
from mockbroker.handlers.config_entries import (
    create_topics_entry,
    topic_views,
    validate_topic_configs,
)
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.controller_mutation import THROTTLED, open_mutation_quota, with_throttle
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.create_partitions import CreatePartitionsRequest
    from kafka_protocol_codec.generated.create_topics import CreateTopicsRequest
    from kafka_protocol_codec.generated.delete_topics import DeleteTopicsRequest

DEFAULT = -1
UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."


def _duplicates(names: Sequence[str | None]) -> list[str]:
    counts = Counter(n for n in names if n is not None)
    out: list[str] = []
    for name in names:
        if name is not None and counts[name] > 1 and name not in out:
            out.append(name)
    return out


# -- replica assignments ---------------------------------------------------------------------

def _live_ids(cluster: Cluster) -> set[int]:
    return {b.broker_id for b in cluster.image.live_brokers()}


def _check_manual(cluster: Cluster, replicas: Sequence[int], replication_factor: int | None,
                  partition: int) -> None:
    """Kafka's checks of one manually assigned replica list."""
    if not replicas:
        raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker in sorted(replicas):
        if broker not in cluster.brokers:
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"The manual partition assignment includes broker {broker}, "
                               "but no such broker is registered.")
        if broker == previous:
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"The manual partition assignment includes the broker {broker} "
                               "more than once.")
        previous = broker
    if replication_factor is not None and len(replicas) != replication_factor:
        raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes a partition with "
                           f"{len(replicas)} replica(s), but this is not consistent with "
                           f"previous partitions, which have {replication_factor} replica(s).")
    if not set(replicas) & _live_ids(cluster):
        raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "All brokers specified in the manual partition assignment for "
                           f"partition {partition} are fenced or in controlled shutdown.")


def _check_placement(cluster: Cluster, replication_factor: int) -> None:
    live = len(_live_ids(cluster))
    if replication_factor > live:
        raise ClusterError(ErrorCode.INVALID_REPLICATION_FACTOR,
                           f"Unable to replicate the partition {replication_factor} time(s): "
                           f"The target replication factor of {replication_factor} cannot be "
                           f"reached because only {live} broker(s) are registered.")


# -- CreateTopics ----------------------------------------------------------------------------

@handler(19, 0, 7)
def handle_create_topics(req: CreateTopicsRequest, ctx: RequestContext) -> dict[str, Any]:
    duplicates = _duplicates([t.name for t in req.topics])
    validate_only = bool(req.validate_only)
    try:  # the whole request first, before anything is allocated, as Kafka's controller
        check_partitions_per_request(sum(_requested_partitions(ctx.cluster, t)
                                         for t in req.topics))
    except ClusterError as exc:
        return {"throttle_time_ms": 0,
                "topics": [_topic_error(t.name, exc.code, exc.message) for t in req.topics]}
    quota = open_mutation_quota(ctx)
    results = [_create_topic(ctx, topic, validate_only, quota) for topic in req.topics
               if topic.name not in duplicates]
    results += [_topic_error(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
                for name in duplicates]
    return with_throttle(ctx, quota, {"throttle_time_ms": 0, "topics": results})


def _requested_partitions(cluster: Cluster, topic: CreateTopicsRequest.CreatableTopic) -> int:
    """How many partitions a CreateTopics entry asks for (an upper bound, as Kafka counts)."""
    if topic.assignments:
        return len(topic.assignments)
    if topic.num_partitions == DEFAULT:
        return cluster.config.default_partitions
    return int(max(topic.num_partitions, 0))


def _topic_error(name: str, error: ErrorCode, message: str) -> dict[str, Any]:
    return {"name": name, "topic_id": ZERO_UUID, "error_code": error, "error_message": message,
            "num_partitions": -1, "replication_factor": -1, "configs": []}


def _create_topic(ctx: RequestContext, topic: CreateTopicsRequest.CreatableTopic,
                  validate_only: bool,
                  quota: MutationQuota) -> dict[str, Any]:
    cluster = ctx.cluster
    try:
        configs = _creation_configs(cluster, topic)
        assignments = _creation_assignments(cluster, topic)
        # KIP-599: charged last, with the partitions it creates (validate_only too, as KRaft)
        if not quota.record(_requested_partitions(cluster, topic)):
            return _topic_error(topic.name, *THROTTLED)
        created = cluster.create_topic(topic.name, topic.num_partitions,
                                       topic.replication_factor, configs, assignments,
                                       validate_only)
    except ClusterError as exc:
        return _topic_error(topic.name, exc.code, exc.message)
    if created is not None:
        parts = [created.partitions[i] for i in sorted(created.partitions)]
        count, rf, topic_id = len(parts), len(parts[0].replicas), created.topic_id
    elif assignments is not None:  # validate_only: the id Kafka drew for the topic
        count, rf, topic_id = len(assignments), len(assignments[0]), uuid.uuid4()
    else:
        count = cluster.config.default_partitions if topic.num_partitions == DEFAULT \
            else topic.num_partitions
        rf = cluster.config.replication_factor() if topic.replication_factor == DEFAULT \
            else topic.replication_factor
        topic_id = uuid.uuid4()
    if not allowed(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, topic.name):
        # created, but the creator may not see its configs: Kafka withholds them, and the
        # counts with them (v5+)
        return {"name": topic.name, "topic_id": topic_id, "error_code": ErrorCode.NONE,
                "error_message": None,
                "topic_config_error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                "num_partitions": DEFAULT, "replication_factor": DEFAULT, "configs": []}
    effective = dict(cluster.topic_config(topic.name, broker_id=ctx.broker_id))  # a copy: the cached view is shared
    effective.update(configs)
    views = topic_views(cluster, cluster.image, ctx.broker_id, effective, configs)
    return {"name": topic.name, "topic_id": topic_id, "error_code": ErrorCode.NONE,
            "error_message": None, "topic_config_error_code": ErrorCode.NONE,
            "num_partitions": count, "replication_factor": rf,
            "configs": [create_topics_entry(v) for v in views]}


def _creation_configs(cluster: Cluster, topic: CreateTopicsRequest.CreatableTopic) -> dict[str, str]:
    """Name checks first (as Kafka orders them), then the configs."""
    name = topic.name
    cluster.validate_topic_name(name)
    if name == METADATA_TOPIC:
        raise ClusterError(ErrorCode.INVALID_REQUEST,
                           f"Creation of internal topic {METADATA_TOPIC} is prohibited.")
    if name in cluster.image.topics:
        raise ClusterError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    unified = name.replace(".", "_")
    for existing in cluster.image.topics:
        if existing.replace(".", "_") == unified:
            raise ClusterError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                               f"Topic '{name}' collides with existing topic: {existing}")
    nulls = [c.name for c in topic.configs if c.value is None]
    if nulls:
        raise ClusterError(ErrorCode.INVALID_CONFIG,
                           f"Null value not supported for topic configs: {','.join(nulls)}")
    configs = {c.name: c.value for c in topic.configs if c.value is not None}  # none left
    validate_topic_configs(configs)
    return configs


def _creation_assignments(cluster: Cluster,
                          topic: CreateTopicsRequest.CreatableTopic) -> list[list[int]] | None:
    if not topic.assignments:
        if topic.replication_factor < DEFAULT or topic.replication_factor == 0:
            raise ClusterError(ErrorCode.INVALID_REPLICATION_FACTOR,
                               "Replication factor must be larger than 0, or -1 to use the "
                               "default value.")
        if topic.num_partitions < DEFAULT or topic.num_partitions == 0:
            raise ClusterError(ErrorCode.INVALID_PARTITIONS,
                               "Number of partitions was set to an invalid non-positive value.")
        _check_placement(cluster, cluster.config.replication_factor()
                         if topic.replication_factor == DEFAULT else topic.replication_factor)
        return None
    if topic.replication_factor != DEFAULT:
        raise ClusterError(ErrorCode.INVALID_REQUEST,
                           "A manual partition assignment was specified, but replication "
                           "factor was not set to -1.")
    if topic.num_partitions != DEFAULT:
        raise ClusterError(ErrorCode.INVALID_REQUEST,
                           "A manual partition assignment was specified, but numPartitions "
                           "was not set to -1.")
    by_index: dict[int, list[int]] = {}
    rf: int | None = None
    for assignment in topic.assignments:
        index = assignment.partition_index
        if index in by_index:
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "Found multiple manual partition assignments for partition "
                               f"{index}")
        _check_manual(cluster, assignment.broker_ids, rf, index)
        rf = len(assignment.broker_ids)
        by_index[index] = list(assignment.broker_ids)
    if sorted(by_index) != list(range(len(by_index))):
        raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "partitions should be a consecutive 0-based integer sequence")
    return [by_index[i] for i in range(len(by_index))]


# -- DeleteTopics ----------------------------------------------------------------------------

@handler(20, 0, 6)
def handle_delete_topics(req: DeleteTopicsRequest, ctx: RequestContext) -> dict[str, Any]:
    cluster = ctx.cluster
    results: list[dict[str, Any]] = []

    def answer(name: str | None, topic_id: uuid.UUID, error: ErrorCode,
               message: str | None = None) -> None:
        results.append({"name": name, "topic_id": topic_id, "error_code": error,
                        "error_message": message})

    requested: list[tuple[str | None, uuid.UUID]] = [(n, ZERO_UUID) for n in req.topic_names]
    requested += [(t.name, t.topic_id) for t in req.topics] if ctx.api_version >= 6 else []
    names: list[str] = []
    ids: list[uuid.UUID] = []
    for name, topic_id in requested:
        if name is None and topic_id == ZERO_UUID:
            answer(None, ZERO_UUID, ErrorCode.INVALID_REQUEST,
                   "Neither topic name nor id were specified.")
        elif name is not None and topic_id != ZERO_UUID:
            answer(name, topic_id, ErrorCode.INVALID_REQUEST,
                   "You may not specify both topic name and topic id.")
        elif name is not None:
            names.append(name)
        else:
            ids.append(topic_id)
    dup_names = _duplicates(names)
    id_counts = Counter(ids)
    for name in dup_names:
        answer(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
    for topic_id in dict.fromkeys(i for i in ids if id_counts[i] > 1):
        answer(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
    to_delete: dict[uuid.UUID, str] = {}
    for topic_id in dict.fromkeys(i for i in ids if id_counts[i] == 1):
        found = cluster.image.topics_by_id.get(topic_id)
        if found is None:
            answer(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_ID_MESSAGE)
        else:
            to_delete[topic_id] = found.name
    for name in (n for n in names if n not in dup_names):
        topic = cluster.image.topics.get(name)
        if topic is None:
            answer(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
        elif topic.topic_id in to_delete:
            del to_delete[topic.topic_id]
            answer(name, topic.topic_id, ErrorCode.INVALID_REQUEST,
                   "The provided topic name maps to an ID that was already supplied.")
        else:
            to_delete[topic.topic_id] = name
    quota = open_mutation_quota(ctx)
    for name, topic_id in requested:  # delete in request order
        if topic_id == ZERO_UUID and name in cluster.image.topics:
            topic_id = cluster.image.topics[name].topic_id
        name = to_delete.pop(topic_id, None)
        if name is None:
            continue
        if not quota.record(len(cluster.image.topics[name].partitions)):  # KIP-599
            answer(name, topic_id, *THROTTLED)
            continue
        cluster.delete_topic(name)
        answer(name, topic_id, ErrorCode.NONE)
    return with_throttle(ctx, quota, {"throttle_time_ms": 0, "responses": results})


# -- CreatePartitions ------------------------------------------------------------------------

@handler(37, 0, 3)
def handle_create_partitions(req: CreatePartitionsRequest, ctx: RequestContext) -> dict[str, Any]:
    duplicates = _duplicates([t.name for t in req.topics])
    results = [{"name": name, "error_code": ErrorCode.INVALID_REQUEST,
                "error_message": "Duplicate topic name."} for name in duplicates]
    added = 0
    for topic in req.topics:
        known = ctx.cluster.image.topics.get(topic.name)
        if known is not None and topic.name not in duplicates:
            added += max(topic.count - len(known.partitions), 0)
    try:  # the records of the whole request are bounded, as in Kafka's controller
        check_partitions_per_request(added, TOO_LARGE_OPERATION)
    except ClusterError as exc:
        return {"throttle_time_ms": 0,
                "results": [{"name": t.name, "error_code": exc.code,
                             "error_message": exc.message} for t in req.topics]}
    quota = open_mutation_quota(ctx)
    for topic in req.topics:
        if topic.name in duplicates:
            continue
        try:
            _create_partitions(ctx.cluster, topic, bool(req.validate_only), quota)
            error, message = ErrorCode.NONE, None
        except ClusterError as exc:
            error, message = exc.code, exc.message or None
        results.append({"name": topic.name, "error_code": error, "error_message": message})
    return with_throttle(ctx, quota, {"throttle_time_ms": 0, "results": results})


def _create_partitions(cluster: Cluster, topic: CreatePartitionsRequest.CreatePartitionsTopic,
                       validate_only: bool,
                       quota: MutationQuota) -> None:
    found = cluster.image.topics.get(topic.name)
    if found is None or not found.partitions:  # Kafka's controller: no message (None)
        raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
    current = len(found.partitions)
    if topic.count == current:
        raise ClusterError(ErrorCode.INVALID_PARTITIONS,
                           f"Topic already has {current} partition(s).")
    if topic.count < current:
        raise ClusterError(ErrorCode.INVALID_PARTITIONS,
                           f"The topic {topic.name} currently has {current} partition(s); "
                           f"{topic.count} would not be an increase.")
    additional = topic.count - current
    rf = len(found.partitions[min(found.partitions)].replicas)
    assignments: list[list[int]] | None = None
    if topic.assignments is not None:
        if len(topic.assignments) != additional:
            raise ClusterError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"Attempted to add {additional} additional partition(s), but "
                               f"only {len(topic.assignments)} assignment(s) were specified.")
    if not quota.record(additional):  # KIP-599: before the replicas are checked, as Kafka
        raise ClusterError(*THROTTLED)
    if topic.assignments is not None:
        assignments = [list(a.broker_ids) for a in topic.assignments]
        for offset, replicas in enumerate(assignments):
            _check_manual(cluster, replicas, rf, current + offset)
    else:
        _check_placement(cluster, rf)
    cluster.create_partitions(topic.name, topic.count, assignments, validate_only)
