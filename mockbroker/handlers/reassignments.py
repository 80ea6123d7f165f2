"""AlterPartitionReassignments (key 45) and ListPartitionReassignments (key 46), v0.

Any broker accepts them and the controller carries them out (cluster/kraft/reassignment.py has
the steps, the records and the errors), as KRaft brokers forward them. Each partition of an
alter request gets its own error (NONE, UNKNOWN_TOPIC_OR_PARTITION,
INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS); the top-level error is NONE.
The list answers from the controller's state: every partition with a reassignment in
progress, or those of the named partitions that have one (others, unknown ones included,
are left out, as Kafka's controller does), with replicas, adding and removing replicas.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import ClusterError
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.alter_partition_reassignments import (
        AlterPartitionReassignmentsRequest,
    )
    from kafka_protocol_codec.generated.list_partition_reassignments import (
        ListPartitionReassignmentsRequest,
    )


@handler(45, 0, 0)
def handle_alter_partition_reassignments(req: AlterPartitionReassignmentsRequest, ctx: RequestContext) -> dict[str, Any]:
    reassignments = ctx.cluster.reassignments
    responses = []
    for topic in req.topics:
        partitions = []
        for part in topic.partitions:
            error, message = ErrorCode.NONE, None
            try:
                reassignments.alter(topic.name, part.partition_index, part.replicas)
            except ClusterError as exc:
                error, message = exc.code, exc.message or None
            partitions.append({"partition_index": part.partition_index, "error_code": error,
                               "error_message": message})
        responses.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "responses": responses}


@handler(46, 0, 0)
def handle_list_partition_reassignments(req: ListPartitionReassignmentsRequest, ctx: RequestContext) -> dict[str, Any]:
    ongoing = ctx.cluster.reassignments.ongoing()
    if req.topics is not None:
        wanted = {(t.name, index) for t in req.topics for index in t.partition_indexes}
        ongoing = {key: part for key, part in ongoing.items() if key in wanted}
    by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (name, index), part in sorted(ongoing.items()):
        by_topic[name].append({"partition_index": index, "replicas": list(part.replicas),
                               "adding_replicas": list(part.adding_replicas),
                               "removing_replicas": list(part.removing_replicas)})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]}
