"""Which operation on which resource each API needs: the authorization table beside the
handler registry, and `dispatch`, which applies it (and then the client quotas) around the
handler.

Theory of operation: with the cluster's authorizer off (Kafka without
`authorizer.class.name`) `dispatch` calls the handler directly. With it on, the API's entry
in `CHECKS` runs first and returns one of:
- None: allowed, the handler runs as is;
- a `Denied` response: the handler does not run, the client gets that answer;
- a `Partial`: the handler runs on what is allowed (the denied parts were taken out of the
  request), then `finish` puts the denied parts back into the response with their errors.

Partition-level APIs (those with a PartitionShape in the registry) reuse the shape: the
topics of the partitions the request names are checked, the denied ones are withheld from
the handler and answered TOPIC_AUTHORIZATION_FAILED through the shape's `with_errors`, as
injected faults are (the shared checks are in authorization_checks.py). Every registered API must have an entry (`no_check` says so explicitly;
a test holds the table and the registry together), so adding an API cannot forget its check.
The entries follow Kafka's KafkaApis and AuthHelper.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, cast

from kafka_protocol_codec import TypedStruct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.internal_topics import INTERNAL_TOPICS
from mockbroker.cluster.kafka_uuid import ZERO_UUID
from mockbroker.cluster.security.authorizer import (
    CLUSTER_NAME,
    UNSET_OPERATIONS,
    AclOperation,
    ResourceType,
)
from mockbroker.handlers.acks import produce_answer
from mockbroker.handlers.authorization_checks import (
    CLUSTER_DENIED,
    DENIED_MESSAGES,
    GROUP_DENIED,
    TOPIC_DENIED,
    TXN_DENIED,
    Check,
    Denied,
    Partial,
    Verdict,
    allowed,
    authorized_operations,
    config_resources,
    named_items,
    nested_topics,
    no_check,
    on_cluster,
    on_group,
    on_partition_topics,
    on_transactional_id,
    whole_error,
    with_group_operations,
)
from mockbroker.handlers.client_quotas import apply_quotas, produced_bytes
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.produce import carries_transactional_batch
from mockbroker.handlers.registry import REGISTRY, Result
from mockbroker.handlers.txn_admin import TOPIC_DENIED_MESSAGE

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.add_offsets_to_txn import AddOffsetsToTxnRequest
    from kafka_protocol_codec.generated.add_partitions_to_txn import AddPartitionsToTxnRequest
    from kafka_protocol_codec.generated.alter_replica_log_dirs import AlterReplicaLogDirsRequest
    from kafka_protocol_codec.generated.consumer_group_heartbeat import (
        ConsumerGroupHeartbeatRequest,
    )
    from kafka_protocol_codec.generated.create_topics import CreateTopicsRequest
    from kafka_protocol_codec.generated.delete_groups import DeleteGroupsRequest
    from kafka_protocol_codec.generated.delete_topics import DeleteTopicsRequest
    from kafka_protocol_codec.generated.describe_cluster import DescribeClusterRequest
    from kafka_protocol_codec.generated.describe_topic_partitions import (
        DescribeTopicPartitionsRequest,
    )
    from kafka_protocol_codec.generated.find_coordinator import FindCoordinatorRequest
    from kafka_protocol_codec.generated.init_producer_id import InitProducerIdRequest
    from kafka_protocol_codec.generated.list_groups import ListGroupsRequest
    from kafka_protocol_codec.generated.list_transactions import ListTransactionsRequest
    from kafka_protocol_codec.generated.metadata import MetadataRequest
    from kafka_protocol_codec.generated.offset_commit import OffsetCommitRequest
    from kafka_protocol_codec.generated.offset_fetch import OffsetFetchRequest
    from kafka_protocol_codec.generated.produce import ProduceRequest
    from kafka_protocol_codec.generated.txn_offset_commit import TxnOffsetCommitRequest
    from kafka_protocol_codec.generated.write_txn_markers import WriteTxnMarkersRequest

Op = AclOperation
RT = ResourceType


def dispatch(body: TypedStruct, ctx: RequestContext) -> Result | Awaitable[Result]:
    """Run the request's handler under the authorization table, then record it against
    its client quotas (mockbroker.handlers.client_quotas)."""
    started = time.perf_counter()
    produced = produced_bytes(cast("ProduceRequest", body)) if ctx.api_key == 0 else 0
    # without an authorizer the handler runs as it is
    result = REGISTRY[ctx.api_key].func(body, ctx) if not ctx.cluster.acls.enabled \
        else _authorized(body, ctx)
    # most handlers answer a plain dict at once: no Awaitable ABC check for those
    if result is not None and type(result) is not dict and inspect.isawaitable(result):
        return _quotas_later(result, ctx, produced, started)
    if ctx.response_hook is not None:
        result = ctx.response_hook(result)
    result = apply_quotas(ctx, produced, started, result)
    return produce_answer(body, result) if ctx.api_key == 0 else result


async def _quotas_later(result: Awaitable[Result], ctx: RequestContext, produced: int,
                        started: float) -> Result:
    answer = await result
    if ctx.response_hook is not None:
        answer = ctx.response_hook(answer)
    return apply_quotas(ctx, produced, started, answer)


def _authorized(body: TypedStruct, ctx: RequestContext) -> Result | Awaitable[Result]:
    """The handler under its ACL check (the authorizer is on)."""
    func = REGISTRY[ctx.api_key].func
    verdict = CHECKS[ctx.api_key](body, ctx)
    if verdict is None:
        return func(body, ctx)
    if isinstance(verdict, Denied):
        return verdict.response
    result = func(body, ctx)
    if inspect.isawaitable(result):
        return _finish_later(result, verdict)
    return None if result is None else verdict.finish(result)


async def _finish_later(result: Awaitable[Result], verdict: Partial) -> Result:
    done = await result
    return None if done is None else verdict.finish(done)


def _transactional_produce(body: ProduceRequest, ctx: RequestContext) -> Verdict:
    """A transactional Produce needs WRITE on its transactional id (Kafka answers every
    partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise); only when it carries a
    transactional batch, as Kafka checks. Without a transactional id the handler refuses
    it."""
    txn_id = body.transactional_id if ctx.api_version >= 3 else None
    if txn_id is None or not carries_transactional_batch(body) \
            or allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, txn_id):
        return None
    shape = REGISTRY[ctx.api_key].partitions
    assert shape is not None
    every = {tp: TXN_DENIED for tp in shape.requested(ctx.broker, ctx.api_version, body)}
    if shape.withhold is not None:
        shape.withhold(body, set(every))
    return Partial(lambda response: shape.with_errors(response, every, {}))


def init_producer_id(body: InitProducerIdRequest, ctx: RequestContext) -> Verdict:
    """WRITE on the transactional id; an idempotent producer needs IDEMPOTENT_WRITE on the
    cluster or WRITE on some topic (Kafka 3.0+, KIP-679)."""
    no_producer = {"producer_id": -1, "producer_epoch": -1}  # Kafka's error answer
    if body.transactional_id is not None:
        if allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, body.transactional_id):
            return None
        return Denied(dict(whole_error(ctx.api_key, TXN_DENIED), **no_producer))
    if allowed(ctx, Op.IDEMPOTENT_WRITE, RT.CLUSTER, CLUSTER_NAME):
        return None
    host = ctx.client_address.rsplit(":", 1)[0]
    if ctx.cluster.acls.any_allowed(ctx.image.acls, ctx.principal, host, Op.WRITE, RT.TOPIC):
        return None
    return Denied(dict(whole_error(ctx.api_key, CLUSTER_DENIED), **no_producer))


def write_txn_markers(body: WriteTxnMarkersRequest, ctx: RequestContext) -> Verdict:
    """ALTER or CLUSTER_ACTION on the cluster; otherwise every partition of every marker
    answers CLUSTER_AUTHORIZATION_FAILED."""
    if allowed(ctx, Op.ALTER, RT.CLUSTER, CLUSTER_NAME) \
            or allowed(ctx, Op.CLUSTER_ACTION, RT.CLUSTER, CLUSTER_NAME):
        return None
    return Denied({"markers": [
        {"producer_id": m.producer_id, "topics": [
            {"name": t.name, "partitions": [
                {"partition_index": i, "error_code": CLUSTER_DENIED}
                for i in t.partition_indexes]} for t in m.topics]}
        for m in body.markers]})


def find_coordinator(body: FindCoordinatorRequest, ctx: RequestContext) -> Verdict:
    """DESCRIBE on the group (key type 0) or transactional id (1); a denied key is answered
    in its place with the error and its message, as Kafka's `getCoordinator` does."""
    key_type = body.key_type if ctx.api_version >= 1 else 0
    rtype, code = (RT.GROUP, GROUP_DENIED) if key_type == 0 else (RT.TRANSACTIONAL_ID,
                                                                   TXN_DENIED)
    message = DENIED_MESSAGES[code]
    if ctx.api_version < 4:
        if allowed(ctx, Op.DESCRIBE, rtype, body.key or ""):
            return None
        denied_answer = dict(whole_error(ctx.api_key, code), node_id=-1, host="", port=-1)
        if ctx.api_version >= 1:
            denied_answer["error_message"] = message
        return Denied(denied_answer)
    requested = list(body.coordinator_keys or [])
    denied = {k for k in requested if not allowed(ctx, Op.DESCRIBE, rtype, k)}
    if not denied:
        return None
    body.coordinator_keys = [k for k in requested if k not in denied]

    def finish(response: Mapping[str, Any]) -> Mapping[str, Any]:
        answered = iter(response.get("coordinators") or [])
        entries = [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code,
                    "error_message": message} if k in denied else next(answered)
                   for k in requested]
        return dict(response, coordinators=entries)
    return Partial(finish)


def offset_commit(body: OffsetCommitRequest, ctx: RequestContext) -> Verdict:
    """READ on the group (every partition GROUP_AUTHORIZATION_FAILED), then READ on each
    topic (its partitions TOPIC_AUTHORIZATION_FAILED)."""
    group_ok = allowed(ctx, Op.READ, RT.GROUP, body.group_id or "")
    denied = [t for t in body.topics or []
              if not group_ok or not allowed(ctx, Op.READ, RT.TOPIC, t.name)]
    if not denied:
        return None
    errors = [{"name": t.name, "partitions": [
        {"partition_index": p.partition_index,
         "error_code": TOPIC_DENIED if group_ok else GROUP_DENIED} for p in t.partitions]}
        for t in denied]
    body.topics = [t for t in body.topics if t not in denied]
    # refused topics come first, as Kafka's response builder has them
    return Partial(lambda response: dict(response,
                                         topics=[*errors, *response.get("topics", [])]))


def offset_fetch(body: OffsetFetchRequest, ctx: RequestContext) -> Verdict:
    """DESCRIBE on the group, as Kafka's KafkaApis asks (READ implies it; the group's, v8+:
    that group's entry, GROUP_AUTHORIZATION_FAILED), then DESCRIBE on each topic: a named one's partitions answer TOPIC_AUTHORIZATION_FAILED,
    from "all topics" it is left out."""
    if ctx.api_version < 8:
        if not allowed(ctx, Op.DESCRIBE, RT.GROUP, body.group_id or ""):
            if ctx.api_version >= 2:
                return Denied(whole_error(ctx.api_key, GROUP_DENIED))
            return Denied({"throttle_time_ms": 0, "topics": [
                {"name": t.name, "partitions": [
                    {"partition_index": i, "committed_offset": -1, "metadata": "",
                     "error_code": GROUP_DENIED} for i in t.partition_indexes]}
                for t in body.topics or []]})
        named = body.topics is not None
        return Partial(lambda response: dict(response, topics=_described_topics(
            ctx, response.get("topics") or [], named)))
    denied = [g for g in body.groups if not allowed(ctx, Op.DESCRIBE, RT.GROUP, g.group_id)]
    named_by_group = {g.group_id: g.topics is not None for g in body.groups}
    body.groups = [g for g in body.groups if g not in denied]
    errors = [{"group_id": g.group_id, "topics": [], "error_code": GROUP_DENIED}
              for g in denied]

    def finish(response: Mapping[str, Any]) -> Mapping[str, Any]:
        groups = [dict(g, topics=_described_topics(ctx, g.get("topics") or [],
                                                   named_by_group.get(g["group_id"], True)))
                  for g in response.get("groups") or []]
        return dict(response, groups=[*groups, *errors])
    return Partial(finish)


def _described_topics(ctx: RequestContext, topics: list[Mapping[str, Any]],
                      named: bool) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for t in topics:
        if allowed(ctx, Op.DESCRIBE, RT.TOPIC, t["name"]):
            out.append(t)
        elif named:
            out.append(dict(t, partitions=[dict(p, committed_offset=-1, metadata="",
                                                error_code=TOPIC_DENIED)
                                           for p in t.get("partitions") or []]))
    return out


def list_groups(body: ListGroupsRequest, ctx: RequestContext) -> Verdict:
    """DESCRIBE on the cluster lists every group; otherwise only the groups the principal
    may DESCRIBE are listed."""
    del body
    if allowed(ctx, Op.DESCRIBE, RT.CLUSTER, CLUSTER_NAME):
        return None

    def finish(response: Mapping[str, Any]) -> Mapping[str, Any]:
        return dict(response, groups=[g for g in response.get("groups") or []
                                      if allowed(ctx, Op.DESCRIBE, RT.GROUP, g["group_id"])])
    return Partial(finish)


def create_topics(body: CreateTopicsRequest, ctx: RequestContext) -> Verdict:
    """CREATE on the cluster, or else on each topic."""
    if allowed(ctx, Op.CREATE, RT.CLUSTER, CLUSTER_NAME):
        return None
    return named_items(RT.TOPIC, Op.CREATE, "topics", "topics", "name", TOPIC_DENIED,
                       extra={"num_partitions": -1, "replication_factor": -1,
                              "configs": []})(body, ctx)


def delete_topics(body: DeleteTopicsRequest, ctx: RequestContext) -> Verdict:
    """DELETE on each topic; v6+ may name a topic by id only (its name is looked up)."""
    if ctx.api_version < 6:
        return named_items(RT.TOPIC, Op.DELETE, "topic_names", "responses", "name",
                           TOPIC_DENIED, request_key=None)(body, ctx)
    by_id = ctx.read_image.topics_by_id
    denied = []
    for t in body.topics or []:
        found = by_id.get(t.topic_id)
        name = t.name if t.name is not None else None if found is None else found.name
        if name is not None and not allowed(ctx, Op.DELETE, RT.TOPIC, name):
            denied.append((t, name))
    if not denied:
        return None
    gone = {id(t) for t, _ in denied}
    body.topics = [t for t in body.topics if id(t) not in gone]
    # a topic asked for by id is named only to a principal that may DESCRIBE it (Kafka's
    # ControllerApis.deleteTopics)
    errors = [{"name": name if t.name is not None or allowed(ctx, Op.DESCRIBE, RT.TOPIC, name)
               else None, "topic_id": t.topic_id, "error_code": TOPIC_DENIED,
               "error_message": DENIED_MESSAGES[TOPIC_DENIED]} for t, name in denied]
    return Partial(lambda response: dict(response, responses=[
        *(response.get("responses") or []), *errors]))


def consumer_group_heartbeat(body: ConsumerGroupHeartbeatRequest, ctx: RequestContext) -> Verdict:
    """READ on the group, DESCRIBE on every subscribed topic (KIP-848)."""
    if not allowed(ctx, Op.READ, RT.GROUP, body.group_id or ""):
        return Denied(whole_error(ctx.api_key, GROUP_DENIED))
    for topic in body.subscribed_topic_names or []:
        if not allowed(ctx, Op.DESCRIBE, RT.TOPIC, topic):
            return Denied(whole_error(ctx.api_key, TOPIC_DENIED))
    return None


def txn_offset_commit(body: TxnOffsetCommitRequest, ctx: RequestContext) -> Verdict:
    if not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, body.transactional_id or ""):
        code = TXN_DENIED
    elif not allowed(ctx, Op.READ, RT.GROUP, body.group_id or ""):
        code = GROUP_DENIED
    else:
        return None
    return Denied({"throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index,
                                         "error_code": code} for p in t.partitions]}
        for t in body.topics or []]})


def add_offsets_to_txn(body: AddOffsetsToTxnRequest, ctx: RequestContext) -> Verdict:
    if not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, body.transactional_id or ""):
        return Denied(whole_error(ctx.api_key, TXN_DENIED))
    if not allowed(ctx, Op.READ, RT.GROUP, body.group_id or ""):
        return Denied(whole_error(ctx.api_key, GROUP_DENIED))
    return None


def add_partitions_to_txn(body: AddPartitionsToTxnRequest, ctx: RequestContext) -> Verdict:
    """WRITE on the transactional id, then on every topic; any denial fails the request
    (v0-3: every partition carries an error, OPERATION_NOT_ATTEMPTED for the allowed). v4+
    is the brokers' batched form: it needs CLUSTER_ACTION (CLUSTER_AUTHORIZATION_FAILED, no
    results, otherwise), as in Kafka's KafkaApis."""
    if ctx.api_version > 3:
        if allowed(ctx, Op.CLUSTER_ACTION, RT.CLUSTER, CLUSTER_NAME):
            return None
        return Denied(dict(whole_error(ctx.api_key, CLUSTER_DENIED),
                           results_by_transaction=[]))
    txn_ok = allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, body.v3_and_below_transactional_id)
    topics = body.v3_and_below_topics or []
    topic_ok = {t.name: allowed(ctx, Op.WRITE, RT.TOPIC, t.name) for t in topics}
    if txn_ok and all(topic_ok.values()):
        return None

    def code(name: str) -> int:
        if not txn_ok:
            return TXN_DENIED
        return ErrorCode.OPERATION_NOT_ATTEMPTED if topic_ok[name] else TOPIC_DENIED
    return Denied({"throttle_time_ms": 0, "error_code": 0, "results_by_topic_v3_and_below": [
        {"name": t.name, "results_by_partition": [
            {"partition_index": p, "partition_error_code": code(t.name)}
            for p in t.partitions]} for t in topics]})


def metadata(body: MetadataRequest, ctx: RequestContext) -> Verdict:
    """DESCRIBE on each topic: unauthorized topics are left out of an all-topics answer and
    answered TOPIC_AUTHORIZATION_FAILED when named. When the request asks for auto-creation
    (always before v4) and the broker allows it, a named topic that does not exist needs
    CREATE on the cluster or the topic, else it is answered TOPIC_AUTHORIZATION_FAILED too
    (Kafka's KafkaApis.getTopicMetadata); without auto-creation it is simply unknown.
    Authorized-operation fields are computed when asked for."""
    version = ctx.api_version
    named = body.topics is not None and not (version == 0 and not body.topics)
    errors: list[dict[str, Any]] = []
    if named:
        image = ctx.read_image
        keep = []
        auto_create = ((version < 4 or bool(body.allow_auto_topic_creation))
                       and ctx.cluster.config.auto_create_topics)
        may_create = not auto_create or allowed(ctx, Op.CREATE, RT.CLUSTER, CLUSTER_NAME)
        for wanted in body.topics or []:  # not None: `named`
            name = wanted.name
            if name is None and version >= 10:
                found = image.topics_by_id.get(wanted.topic_id)
                name = None if found is None else found.name
            if name is not None and not allowed(ctx, Op.DESCRIBE, RT.TOPIC, name):
                errors.append(_metadata_error(name, wanted, TOPIC_DENIED))
            elif (name is not None and name not in image.topics and not may_create
                  and not allowed(ctx, Op.CREATE, RT.TOPIC, name)):
                errors.append(dict(_metadata_error(name, wanted, TOPIC_DENIED),
                                   topic_id=ZERO_UUID, is_internal=name in INTERNAL_TOPICS))
            else:
                keep.append(wanted)
        body.topics = keep
    # v0 reads an empty list as "all topics": the handler then answers all, dropped below
    only_errors = named and version == 0 and not body.topics

    def finish(response: Mapping[str, Any]) -> Mapping[str, Any]:
        include_ops = version >= 8 and body.include_topic_authorized_operations
        topics = []
        for t in response.get("topics") or []:
            if t.get("error_code") == ErrorCode.NONE and t.get("name") is not None:
                if not named and not allowed(ctx, Op.DESCRIBE, RT.TOPIC, t["name"]):
                    continue
                if include_ops:
                    t = dict(t, topic_authorized_operations=authorized_operations(
                        ctx, RT.TOPIC, t["name"]))
            if not only_errors:
                topics.append(t)
        out = dict(response, topics=[*topics, *errors])
        if 8 <= version <= 10 and body.include_cluster_authorized_operations:
            out["cluster_authorized_operations"] = cluster_operations(ctx)
        return out
    return Partial(finish)


def _metadata_error(name: str, wanted: MetadataRequest.MetadataRequestTopic, code: int) -> dict[str, Any]:
    return {"error_code": code, "name": name, "topic_id": wanted.topic_id
            if getattr(wanted, "topic_id", None) is not None else ZERO_UUID,
            "partitions": [], "is_internal": False,
            "topic_authorized_operations": UNSET_OPERATIONS}


def cluster_operations(ctx: RequestContext) -> int:
    """The cluster's authorized operations: 0 without DESCRIBE on the cluster, as Kafka
    answers."""
    if not allowed(ctx, Op.DESCRIBE, RT.CLUSTER, CLUSTER_NAME):
        return 0
    return authorized_operations(ctx, RT.CLUSTER, CLUSTER_NAME)


def describe_cluster(body: DescribeClusterRequest, ctx: RequestContext) -> Verdict:
    """No check (any client may describe the cluster); the authorized operations asked
    for are computed."""
    if not body.include_cluster_authorized_operations:
        return None
    return Partial(lambda response: dict(response,
                                         cluster_authorized_operations=cluster_operations(ctx)))


def list_transactions(body: ListTransactionsRequest, ctx: RequestContext) -> Verdict:
    """Only the transactional ids the principal may DESCRIBE are listed."""
    del body
    return Partial(lambda response: dict(response, transaction_states=[
        s for s in response.get("transaction_states") or []
        if allowed(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID, s["transactional_id"])]))


def alter_replica_log_dirs(body: AlterReplicaLogDirsRequest, ctx: RequestContext) -> Verdict:
    """ALTER on the cluster; otherwise every partition CLUSTER_AUTHORIZATION_FAILED."""
    if allowed(ctx, Op.ALTER, RT.CLUSTER, CLUSTER_NAME):
        return None
    return Denied({"throttle_time_ms": 0, "results": [
        {"topic_name": t.name, "partitions": [{"partition_index": p,
                                               "error_code": CLUSTER_DENIED}
                                              for p in t.partitions]}
        for d in body.dirs or [] for t in d.topics or []]})


def describe_topic_partitions(body: DescribeTopicPartitionsRequest, ctx: RequestContext) -> Verdict:
    """DESCRIBE on each topic (KIP-966): a named one is answered TOPIC_AUTHORIZATION_FAILED,
    from all topics (an empty list) it is left out; authorized operations from the ACLs."""
    named = bool(body.topics)
    denied = [t.name for t in body.topics or []
              if not allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.name)]
    body.topics = [t for t in body.topics or [] if t.name not in denied]
    only_errors = named and not body.topics  # an emptied list would mean "all"

    def finish(response: Mapping[str, Any]) -> Mapping[str, Any]:
        topics = [] if only_errors else [
            dict(t, topic_authorized_operations=authorized_operations(ctx, RT.TOPIC, t["name"]))
            if t.get("error_code") == ErrorCode.NONE else t
            for t in response.get("topics") or []
            if named or allowed(ctx, Op.DESCRIBE, RT.TOPIC, t["name"])]
        errors = [{"error_code": TOPIC_DENIED, "name": n, "topic_id": ZERO_UUID,
                   "is_internal": False, "partitions": [],
                   "topic_authorized_operations": UNSET_OPERATIONS} for n in denied]
        return dict(response, topics=[*topics, *errors])
    return Partial(finish)


_delete_named_groups = named_items(RT.GROUP, Op.DELETE, "groups_names", "results", "group_id",
                                   GROUP_DENIED, request_key=None)


def delete_groups(body: DeleteGroupsRequest, ctx: RequestContext) -> Verdict:
    """DELETE on each group, each name taken once (Kafka's KafkaApis takes the distinct
    names before it authorizes)."""
    body.groups_names = list(dict.fromkeys(body.groups_names or []))
    return _delete_named_groups(body, ctx)


# API key -> its check, following Kafka's KafkaApis / AuthHelper
# ConsumerGroupDescribe (KIP-848) and ShareGroupDescribe (KIP-932) answer alike: DESCRIBE on
# each named group, a denied one with an empty description and its error
_group_describe = with_group_operations(named_items(
    RT.GROUP, Op.DESCRIBE, "group_ids", "groups", "group_id", GROUP_DENIED,
    request_key=None, extra={"error_message": None, "group_state": "", "group_epoch": 0,
                             "assignment_epoch": 0, "assignor_name": "", "members": [],
                             "authorized_operations": UNSET_OPERATIONS}))

CHECKS: dict[int, Check] = {
    0: on_partition_topics(Op.WRITE, _transactional_produce),           # Produce
    1: on_partition_topics(Op.READ),                                    # Fetch
    2: on_partition_topics(Op.DESCRIBE),                                # ListOffsets
    3: metadata,                                                        # Metadata
    8: offset_commit,                                                   # OffsetCommit
    9: offset_fetch,                                                    # OffsetFetch
    10: find_coordinator,                                               # FindCoordinator
    11: on_group(Op.READ),                                              # JoinGroup
    12: on_group(Op.READ),                                              # Heartbeat
    13: on_group(Op.READ),                                              # LeaveGroup
    14: on_group(Op.READ),                                              # SyncGroup
    15: with_group_operations(named_items(                              # DescribeGroups
        RT.GROUP, Op.DESCRIBE, "groups", "groups", "group_id", GROUP_DENIED,
        request_key=None, extra={"group_state": "", "protocol_type": "", "protocol_data": "",
                                 "members": [], "authorized_operations": UNSET_OPERATIONS})),
    16: list_groups,                                                    # ListGroups
    17: no_check,                                                       # SaslHandshake
    18: no_check,                                                       # ApiVersions
    19: create_topics,                                                  # CreateTopics
    20: delete_topics,                                                  # DeleteTopics
    21: nested_topics(Op.DELETE, "partitions", "partition_index",  # DeleteRecords
                      {"low_watermark": -1}),
    22: init_producer_id,                                               # InitProducerId
    23: on_partition_topics(Op.DESCRIBE),                               # OffsetForLeaderEpoch
    24: add_partitions_to_txn,                                          # AddPartitionsToTxn
    25: add_offsets_to_txn,                                             # AddOffsetsToTxn
    26: on_transactional_id(Op.WRITE),                                  # EndTxn
    27: write_txn_markers,                                              # WriteTxnMarkers
    28: txn_offset_commit,                                              # TxnOffsetCommit
    29: on_cluster(Op.DESCRIBE),                                        # DescribeAcls
    30: on_cluster(Op.ALTER),                                           # CreateAcls
    31: on_cluster(Op.ALTER),                                           # DeleteAcls
    32: config_resources(Op.DESCRIBE_CONFIGS, "results"),               # DescribeConfigs
    33: config_resources(Op.ALTER_CONFIGS, "responses"),                # AlterConfigs
    34: alter_replica_log_dirs,                                         # AlterReplicaLogDirs
    35: on_cluster(Op.DESCRIBE),                                        # DescribeLogDirs
    36: no_check,                                                       # SaslAuthenticate
    37: named_items(RT.TOPIC, Op.ALTER, "topics", "results", "name",    # CreatePartitions
                    TOPIC_DENIED, extra={"error_message": None}),
    42: delete_groups,                                                  # DeleteGroups
    43: on_cluster(Op.ALTER),                                           # ElectLeaders
    44: config_resources(Op.ALTER_CONFIGS, "responses"),                # IncrementalAlterConfigs
    45: on_cluster(Op.ALTER),                                           # AlterPartitionReassignments
    46: on_cluster(Op.DESCRIBE),                                        # ListPartitionReassignments
    47: on_group(Op.DELETE),                                            # OffsetDelete
    48: on_cluster(Op.DESCRIBE_CONFIGS),                                # DescribeClientQuotas
    49: on_cluster(Op.ALTER_CONFIGS),                                   # AlterClientQuotas
    50: on_cluster(Op.DESCRIBE),                                        # DescribeUserScramCredentials
    51: on_cluster(Op.ALTER),                                           # AlterUserScramCredentials
    55: on_cluster(Op.DESCRIBE),                                        # DescribeQuorum
    57: on_cluster(Op.ALTER),                                           # UpdateFeatures
    60: describe_cluster,                                               # DescribeCluster
    61: nested_topics(Op.READ, "partition_indexes", None,          # DescribeProducers
                      {"error_message": TOPIC_DENIED_MESSAGE, "active_producers": []}),
    64: on_cluster(Op.ALTER),                                           # UnregisterBroker
    65: named_items(RT.TRANSACTIONAL_ID, Op.DESCRIBE, "transactional_ids",  # DescribeTransactions
                    "transaction_states", "transactional_id", TXN_DENIED, request_key=None,
                    extra={"transaction_state": "", "transaction_timeout_ms": 0,
                           "transaction_start_time_ms": 0, "producer_id": 0,
                           "producer_epoch": 0, "topics": []}),
    66: list_transactions,                                              # ListTransactions
    68: consumer_group_heartbeat,                                       # ConsumerGroupHeartbeat
    69: _group_describe,                                                  # ConsumerGroupDescribe
    71: no_check,                                                       # GetTelemetrySubscriptions
    72: no_check,                                                       # PushTelemetry
    74: on_cluster(Op.DESCRIBE_CONFIGS),                                # ListClientMetricsResources
    75: describe_topic_partitions,                                      # DescribeTopicPartitions
    76: consumer_group_heartbeat,                                       # ShareGroupHeartbeat
    77: _group_describe,                                                  # ShareGroupDescribe
    78: on_group(Op.READ),                                              # ShareFetch
    79: on_group(Op.READ),                                              # ShareAcknowledge
    80: on_cluster(Op.ALTER),                                           # AddRaftVoter
    81: on_cluster(Op.ALTER),                                           # RemoveRaftVoter
}
