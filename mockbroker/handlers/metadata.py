"""Metadata (key 3), v0-12: brokers, controller, cluster id, topics and partitions.

Answered from the receiving broker's own image, so a broker whose metadata is paused returns
older leaders and leader epochs (KIP-232 clients use the epoch to spot stale answers). In
consistent-read mode the image is the one at min(applied, lowest acknowledged metadata
offset) (RequestContext.read_image). The cluster id and the controller id come from that
image, i.e. from the controller-owned metadata log: the cluster id the log carries, the
controller id derived from the broker registrations and fencing records in it.
Topics a client names but that do not exist are auto-created when both the request (v4+)
and the cluster allow it; that request is answered UNKNOWN_TOPIC_OR_PARTITION for the topic,
as Kafka's is (creation goes through the controller), and the next one finds it. Topic ids in requests are Kafka's from v12 only: a v10/v11 request
naming a topic by id (or with a null name) gets Kafka's error answer for the whole request,
INVALID_REQUEST for each topic asked for and nothing else.

Large topics: a topic's partition entries are built once per change of its partitions (or
of the set of live brokers, which offline_replicas depends on) and kept in the image's
`TopicImage.views`; every response until the next change shares them, so nothing may
mutate a response's partition entries (the fault injector's `_with_errors` copies; each
response gets its own list of them, one pointer per partition to copy). The
entries hold only ints and tuples of ints: the garbage collector stops tracking them, and
a request allocates no per-partition containers that would trigger full collections over
the whole heap, which is what made the 90th percentile of a 10,000-partition Metadata
request several times its median.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import BrokerNode, ClusterError, MetadataImage, TopicImage
from mockbroker.cluster.internal_topics import INTERNAL_TOPICS
from mockbroker.cluster.kafka_uuid import ZERO_UUID
from mockbroker.cluster.security.authorizer import UNSET_OPERATIONS
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import PartitionShape, TopicPartition, handler, partition_shape

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.metadata import MetadataRequest

# READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (bits 3-8, 10, 11)
ALL_TOPIC_OPERATIONS = 3576
NULLABLE_NAME_VERSION = 12  # MetadataResponse topic names may be null from v12
TOPIC_ID_LOOKUP_VERSION = 12  # Kafka looks topics up by id from v12


PARTITIONS_VIEW = "metadata.partitions"  # this module's key in TopicImage.views
_NO_ERROR = int(ErrorCode.NONE)
_NO_LEADER = int(ErrorCode.LEADER_NOT_AVAILABLE)


def partition_entries(topic: TopicImage, live: frozenset[int]) -> tuple[dict[str, Any], ...]:
    """The topic's MetadataResponsePartition entries in partition order, the same for every
    version (the codec writes only the fields a version has). Shared: read them only."""
    cached = topic.views.get(PARTITIONS_VIEW)
    if cached is not None and cached[0] == live:
        return cached[1]  # type: ignore[no-any-return]
    parts = topic.partitions
    entries = tuple({
        "error_code": _NO_ERROR if p.leader >= 0 else _NO_LEADER, "partition_index": index,
        "leader_id": p.leader, "leader_epoch": p.leader_epoch, "replica_nodes": p.replicas,
        "isr_nodes": p.isr, "offline_replicas": tuple(r for r in p.replicas if r not in live)}
        for index, p in sorted(parts.items()))
    topic.views[PARTITIONS_VIEW] = (live, entries)
    return entries


def topic_entry(topic: TopicImage, live: frozenset[int],
                include_operations: bool) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.NONE, "name": topic.name, "topic_id": topic.topic_id,
        "is_internal": topic.name in INTERNAL_TOPICS,
        "partitions": list(partition_entries(topic, live)),  # a list, as readers expect
        "topic_authorized_operations": ALL_TOPIC_OPERATIONS if include_operations
        else UNSET_OPERATIONS,
    }


def _error_entry(name: str | None, topic_id: uuid.UUID, error: ErrorCode) -> dict[str, Any]:
    return {"error_code": error, "name": name, "topic_id": topic_id, "partitions": [],
            "is_internal": False, "topic_authorized_operations": UNSET_OPERATIONS}


@handler(3, 0, 12)
def handle_metadata(req: MetadataRequest, ctx: RequestContext) -> dict[str, Any]:
    image = ctx.read_image
    version = ctx.api_version
    include_ops = bool(req.include_topic_authorized_operations)
    allow_create = req.allow_auto_topic_creation if version >= 4 else True
    requested = req.topics
    if version == 0 and not requested:
        requested = None  # v0: an empty list means all topics
    if version < TOPIC_ID_LOOKUP_VERSION and requested and any(
            t.name is None or (version >= 10 and t.topic_id != ZERO_UUID) for t in requested):
        return _invalid_request(requested)
    live_brokers = image.live_brokers()
    live = frozenset(b.broker_id for b in live_brokers)
    topics: list[dict[str, Any]] = []
    if requested is None:
        topics = [topic_entry(t, live, include_ops) for _, t in sorted(image.topics.items())]
    else:
        for wanted in requested:
            topics.append(_one_topic(ctx, image, live, wanted, allow_create, include_ops))
    brokers = []
    for b in live_brokers:
        host, port = ctx.endpoint(b.broker_id, b.host, b.port)  # the request's listener
        brokers.append({"node_id": b.broker_id, "host": host, "port": port, "rack": b.rack})
    return {
        "throttle_time_ms": 0, "brokers": brokers, "cluster_id": image.cluster_id,
        "controller_id": ctx.cluster.controller_id(image), "topics": topics,
        "cluster_authorized_operations": UNSET_OPERATIONS,
    }


def _invalid_request(requested: list[MetadataRequest.MetadataRequestTopic]) -> dict[str, Any]:
    """Kafka's MetadataRequest.getErrorResponse for INVALID_REQUEST: every topic asked for
    (a null name as ""), no brokers, no cluster id, no controller."""
    return {
        "throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": -1,
        "topics": [{"error_code": ErrorCode.INVALID_REQUEST, "name": t.name or "",
                    "topic_id": t.topic_id if t.topic_id is not None else ZERO_UUID,
                    "is_internal": False, "partitions": [],
                    "topic_authorized_operations": UNSET_OPERATIONS} for t in requested],
        "cluster_authorized_operations": UNSET_OPERATIONS,
    }


def _one_topic(ctx: RequestContext, image: MetadataImage, live: frozenset[int],
               wanted: MetadataRequest.MetadataRequestTopic, allow_create: bool, include_ops: bool) -> dict[str, Any]:
    name = wanted.name
    if name is None or (wanted.topic_id != ZERO_UUID and ctx.api_version >= 10):
        topic = image.topics_by_id.get(wanted.topic_id)
        if topic is None:
            # the response's name is nullable only from v12: v10/v11 answer with ""
            unknown = None if ctx.api_version >= NULLABLE_NAME_VERSION else ""
            return _error_entry(unknown, wanted.topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
        return topic_entry(topic, live, include_ops)
    found = image.topics.get(name)
    if found is not None:
        return topic_entry(found, live, include_ops)
    try:
        ctx.cluster.validate_topic_name(name)
    except ClusterError as exc:
        return _error_entry(name, ZERO_UUID, exc.code)
    if allow_create and ctx.cluster.config.auto_create_topics:
        try:
            ctx.cluster.maybe_auto_create(name)
        except ClusterError as exc:
            return _error_entry(name, ZERO_UUID, exc.code)
        # Kafka asks its controller to create the topic and answers this request from the
        # metadata it has, which lacks the topic: the client asks again (Kafka 4.4's
        # DefaultAutoTopicCreationManager answers UNKNOWN_TOPIC_OR_PARTITION).
        return _error_entry(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return _error_entry(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


# -- errors from above (the fault injector): per partition, or per topic --------------------

def _requested(node: BrokerNode, version: int, body: MetadataRequest) -> list[TopicPartition]:
    """Every partition of the topics the request names (all topics for "all")."""
    image = node.image
    names: Iterable[str]
    if body.topics is None or (version == 0 and not body.topics):
        names = sorted(image.topics)
    else:
        names = [t.name for t in body.topics if t.name is not None]
    out: list[TopicPartition] = []
    for name in names:
        topic = image.topics.get(name)
        if topic is not None:
            out.extend((name, i) for i in sorted(topic.partitions))
    return out


def _with_errors(response: Mapping[str, Any], partition_errors: Mapping[TopicPartition, int],
                 topic_errors: Mapping[str, int]) -> dict[str, Any]:
    """A topic error empties the topic's partitions; a partition error marks one entry."""
    topics = []
    for t in response.get("topics") or []:
        t = dict(t)
        if t.get("name") in topic_errors:
            t["error_code"] = topic_errors[t["name"]]
            t["partitions"] = []
        else:
            parts = []
            for p in t.get("partitions") or []:
                code = partition_errors.get((str(t.get("name")), p["partition_index"]))
                parts.append(p if code is None else dict(p, error_code=code))
            t["partitions"] = parts
        topics.append(t)
    return dict(response, topics=topics)


partition_shape(3, PartitionShape(_requested, _with_errors, topic_errors=True))
