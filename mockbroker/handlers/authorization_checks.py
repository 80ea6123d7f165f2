"""The building blocks of the authorization table (mockbroker.handlers.authorization): the
verdicts a check returns and the checks most APIs share.

A check is a function of (request body, RequestContext) returning None (allowed), `Denied`
(the answer, the handler does not run) or `Partial` (the handler runs on what was allowed;
`finish` adds the refused parts to its response). The builders here cover the usual shapes:
one operation on the cluster, a group or a transactional id named by a field; the topics of
a partition-level request (through the registry's PartitionShape); lists of named resources;
topics -> partitions requests; config resources; authorized operations of described groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from kafka_protocol_codec import api, default_struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import REGISTRY, TopicPartition

RT = ResourceType
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
# the messages of Kafka's authorization exceptions, where its answers carry them
DENIED_MESSAGES = {TOPIC_DENIED: "Topic authorization failed.",
                   CLUSTER_DENIED: "Cluster authorization failed.",
                   GROUP_DENIED: "Group authorization failed.",
                   TXN_DENIED: "Transactional Id authorization failed."}


@dataclass
class Denied:
    """A check's verdict that the request is refused as a whole: the response sent instead
    of running the handler."""

    response: dict[str, Any]


@dataclass
class Partial:
    """A check's verdict that the handler runs, then `finish` marks the denied resources in
    its response."""

    finish: Callable[[Mapping[str, Any]], Mapping[str, Any]]


Verdict: TypeAlias = Denied | Partial | None
# a check's body is the request of the API it is registered for (a generated class)
Check: TypeAlias = Callable[[Any, RequestContext], Verdict]


def allowed(ctx: RequestContext, op: AclOperation, rtype: ResourceType, name: str) -> bool:
    """The authorizer's decision for this request's principal and client host, by the
    receiving broker's own image (a lagging broker decides by the ACLs it has)."""
    host = ctx.client_address.rsplit(":", 1)[0]
    return ctx.cluster.acls.authorize(ctx.image.acls, ctx.principal, host, op, rtype, name)


def authorized_operations(ctx: RequestContext, rtype: ResourceType, name: str) -> int:
    """The authorized-operations bitfield of one resource for this request's principal."""
    host = ctx.client_address.rsplit(":", 1)[0]
    return ctx.cluster.acls.authorized_operations(ctx.image.acls, ctx.principal, host, rtype,
                                                  name)


def whole_error(api_key: int, code: int) -> dict[str, Any]:
    """A response carrying `code` at the top level, defaults elsewhere."""
    response: dict[str, Any] = default_struct(api(api_key).response.fields)
    response["error_code"] = code
    if "error_message" in response:
        response["error_message"] = None
    return response


def no_check(body: Any, ctx: RequestContext) -> Verdict:
    """No authorization: handshakes, version discovery, telemetry, per-user SCRAM reads of
    one's own credentials are answered to anyone, as in Kafka."""
    del body, ctx
    return None


# The cluster-level APIs whose denials Kafka explains ("Request ... needs ALTER permission."):
# the ones its controller answers with the request's own error response, and DescribeAcls.
EXPLAINED_DENIALS = frozenset({29, 30, 31, 43, 45, 46, 49, 51, 57, 64, 80, 81})
# ... and those answering with the exception's own message
PLAIN_DENIALS = frozenset({55})


def denial_message(ctx: RequestContext, op: AclOperation) -> str:
    return f"Request from {ctx.principal} needs {op.name} permission."


def _per_item_errors(api_key: int, version: int, body: Any, code: int,
                     message: str | None = None) -> dict[str, Any] | None:
    """For the cluster-level APIs whose answers list the request's items: every item
    refused (and the top-level error where the response has one), as Kafka's
    AbstractRequest.getErrorResponse builds them."""
    error = {"error_code": code, "error_message": message}
    if api_key == 43 and version >= 1:  # ElectLeaders v1+: top-level and per partition
        return {"throttle_time_ms": 0, "error_code": code, "replica_election_results": [
            {"topic": t.topic, "partition_result": [dict(error, partition_id=p)
                                                    for p in t.partitions]}
            for t in body.topic_partitions or []]}
    if api_key == 45:  # AlterPartitionReassignments
        return {"throttle_time_ms": 0, **error, "responses": [
            {"name": t.name, "partitions": [dict(error, partition_index=p.partition_index)
                                            for p in t.partitions]} for t in body.topics]}
    if api_key == 46:  # ListPartitionReassignments: the asked partitions, without replicas
        return {"throttle_time_ms": 0, **error, "topics": [
            {"name": t.name, "partitions": [
                {"partition_index": p, "replicas": [], "adding_replicas": [],
                 "removing_replicas": []} for p in t.partition_indexes]}
            for t in body.topics or []]}
    if api_key == 48:  # DescribeClientQuotas: no entries (null)
        return {"throttle_time_ms": 0, **error, "entries": None}
    if api_key == 50:  # DescribeUserScramCredentials: one nameless result per user asked
        return {"throttle_time_ms": 0, **error, "results": [
            {"user": "", **error, "credential_infos": []} for _ in body.users or []]}
    if api_key == 29:  # DescribeAcls
        return {"throttle_time_ms": 0, **error, "resources": []}
    if api_key == 30:  # CreateAcls
        return {"throttle_time_ms": 0, "results": [dict(error) for _ in body.creations]}
    if api_key == 31:  # DeleteAcls
        return {"throttle_time_ms": 0, "filter_results": [
            dict(error, matching_acls=[]) for _ in body.filters]}
    if api_key == 51:  # AlterUserScramCredentials
        users = dict.fromkeys(u.name for u in [*body.deletions, *body.upsertions])
        return {"throttle_time_ms": 0, "results": [dict(error, user=u) for u in users]}
    if api_key == 49:  # AlterClientQuotas
        return {"throttle_time_ms": 0, "entries": [
            dict(error, entity=[{"entity_type": e.entity_type, "entity_name": e.entity_name}
                                for e in entry.entity]) for entry in body.entries]}
    if api_key == 43 and version == 0:  # ElectLeaders v0
        return {"throttle_time_ms": 0, "replica_election_results": [
            {"topic": t.topic, "partition_result": [dict(error, partition_id=p)
                                                    for p in t.partitions]}
            for t in body.topic_partitions or []]}
    return None


def on_cluster(op: AclOperation) -> Check:
    """The API needs `op` on the CLUSTER resource; otherwise CLUSTER_AUTHORIZATION_FAILED
    (at the top level, or on every item where the response has no top-level error)."""
    def check(body: Any, ctx: RequestContext) -> Verdict:
        if allowed(ctx, op, RT.CLUSTER, CLUSTER_NAME):
            return None
        message = denial_message(ctx, op) if ctx.api_key in EXPLAINED_DENIALS else \
            DENIED_MESSAGES[CLUSTER_DENIED] if ctx.api_key in PLAIN_DENIALS else None
        items = _per_item_errors(ctx.api_key, ctx.api_version, body, CLUSTER_DENIED, message)
        if items is None:
            items = whole_error(ctx.api_key, CLUSTER_DENIED)
            if "error_message" in items:
                items["error_message"] = message
        return Denied(items)
    return check


def on_group(op: AclOperation, field: str = "group_id") -> Check:
    """The API needs `op` on the group the request names; otherwise the top-level
    GROUP_AUTHORIZATION_FAILED."""
    def check(body: Any, ctx: RequestContext) -> Verdict:
        if allowed(ctx, op, RT.GROUP, getattr(body, field) or ""):
            return None
        response = whole_error(ctx.api_key, GROUP_DENIED)
        if ctx.api_key == 11 and ctx.api_version >= 7:  # JoinGroup: null protocol name
            response["protocol_name"] = None
        return Denied(response)
    return check


def on_partition_topics(op: AclOperation, extra: Check | None = None) -> Check:
    """The topics of the partitions the request names (the registry's PartitionShape) need
    `op`; denied ones are withheld and answered TOPIC_AUTHORIZATION_FAILED."""
    def check(body: Any, ctx: RequestContext) -> Verdict:
        if extra is not None and (verdict := extra(body, ctx)) is not None:
            return verdict
        shape = REGISTRY[ctx.api_key].partitions
        assert shape is not None
        requested = shape.requested(ctx.broker, ctx.api_version, body)
        decisions: dict[str, bool] = {}
        denied: dict[TopicPartition, int] = {}
        for topic, index in requested:
            if topic not in decisions:
                decisions[topic] = allowed(ctx, op, RT.TOPIC, topic)
            if not decisions[topic]:
                denied[(topic, index)] = TOPIC_DENIED
        if not denied:
            return None
        if shape.withhold is not None:
            shape.withhold(body, set(denied))
        return Partial(lambda response: shape.with_errors(response, denied, {}))
    return check


def on_transactional_id(op: AclOperation, field: str = "transactional_id") -> Check:
    def check(body: Any, ctx: RequestContext) -> Verdict:
        if allowed(ctx, op, RT.TRANSACTIONAL_ID, getattr(body, field) or ""):
            return None
        return Denied(whole_error(ctx.api_key, TXN_DENIED))
    return check


def named_items(rtype: ResourceType, op: AclOperation, request_list: str,
                response_list: str, response_key: str, code: int,
                request_key: str | None = "name",
                extra: Mapping[str, Any] | None = None) -> Check:
    """An API naming resources in a list (CreateTopics, DeleteTopics, DescribeGroups, ...):
    the denied ones are taken out of the request and answered `code` in the response list
    as {response_key: name, error_code: code, **extra}."""
    def check(body: Any, ctx: RequestContext) -> Verdict:
        items = getattr(body, request_list) or []
        names = [item if request_key is None else getattr(item, request_key) for item in items]
        denied = [n for n in names if n is not None and not allowed(ctx, op, rtype, n)]
        if not denied:
            return None
        setattr(body, request_list, [item for item, n in zip(items, names, strict=True)
                                     if n not in denied])

        def finish(response: Mapping[str, Any]) -> Mapping[str, Any]:
            entries = list(response.get(response_list) or [])
            entries += [{response_key: n, "error_code": code, **(extra or {})}
                        for n in denied]
            return dict(response, **{response_list: entries})
        return Partial(finish)
    return check


def config_resources(op: AclOperation, response_list: str) -> Check:
    """DESCRIBE_CONFIGS / ALTER_CONFIGS on each named topic (TOPIC_AUTHORIZATION_FAILED) or
    group (GROUP_AUTHORIZATION_FAILED) or, for broker and broker-logger resources, on the
    cluster (CLUSTER_AUTHORIZATION_FAILED)."""
    def check(body: Any, ctx: RequestContext) -> Verdict:
        denied = []
        for r in body.resources or []:
            if r.resource_type == TOPIC_CONFIG_RESOURCE:
                if not allowed(ctx, op, RT.TOPIC, r.resource_name):
                    denied.append((r, TOPIC_DENIED))
            elif r.resource_type == GROUP_CONFIG_RESOURCE:
                if not allowed(ctx, op, RT.GROUP, r.resource_name):
                    denied.append((r, GROUP_DENIED))
            elif not allowed(ctx, op, RT.CLUSTER, CLUSTER_NAME):
                denied.append((r, CLUSTER_DENIED))
        if not denied:
            return None
        gone = {id(r) for r, _ in denied}
        body.resources = [r for r in body.resources if id(r) not in gone]
        # Kafka's messages: on every DescribeConfigs denial and on topics' alter denials
        # (the controller's); a broker's alter denial carries none
        errors = [{"error_code": code, "error_message":
                   DENIED_MESSAGES[code] if op == AclOperation.DESCRIBE_CONFIGS
                   or code == TOPIC_DENIED else None,
                   "resource_type": r.resource_type, "resource_name": r.resource_name,
                   # only DescribeConfigs results have configs (alter answers: none)
                   **({"configs": []} if op == AclOperation.DESCRIBE_CONFIGS else {})}
                  for r, code in denied]
        return Partial(lambda response: dict(response, **{response_list: [
            *(response.get(response_list) or []), *errors]}))
    return check


def with_group_operations(check: Check | None, groups_key: str = "groups") -> Check:
    """Runs `check`, then fills each described group's authorized_operations from the ACLs
    when the request asked for them (DescribeGroups v3+, ConsumerGroupDescribe)."""
    def wrapped(body: Any, ctx: RequestContext) -> Verdict:
        verdict = check(body, ctx) if check is not None else None
        if isinstance(verdict, Denied) or not body.include_authorized_operations:
            return verdict
        before = verdict.finish if isinstance(verdict, Partial) else (lambda r: r)

        def finish(response: Mapping[str, Any]) -> Mapping[str, Any]:
            response = before(response)
            return dict(response, **{groups_key: [
                dict(g, authorized_operations=authorized_operations(ctx, RT.GROUP, g["group_id"]))
                if g.get("error_code") == ErrorCode.NONE else g
                for g in response.get(groups_key) or []]})
        return Partial(finish)
    return wrapped


def nested_topics(op: AclOperation, parts_key: str, index_key: str | None,
                  extra: Mapping[str, Any]) -> Check:
    """Topics -> partitions requests outside the registry's shapes (DeleteRecords,
    DescribeProducers): a denied topic's partitions answer TOPIC_AUTHORIZATION_FAILED."""
    def check(body: Any, ctx: RequestContext) -> Verdict:
        denied = [t for t in body.topics or [] if not allowed(ctx, op, RT.TOPIC, t.name)]
        if not denied:
            return None
        errors = [{"name": t.name, "partitions": [
            {"partition_index": p if index_key is None else getattr(p, index_key),
             "error_code": TOPIC_DENIED, **extra} for p in getattr(t, parts_key)]}
            for t in denied]
        body.topics = [t for t in body.topics if t not in denied]
        return Partial(lambda response: dict(response,
                                             topics=[*response.get("topics", []), *errors]))
    return check


TOPIC_CONFIG_RESOURCE = 2  # DescribeConfigs' resource type for topics
GROUP_CONFIG_RESOURCE = 32  # ... and for groups
