"""ElectLeaders (key 43), v0-2: preferred and unclean leader elections.

Where admin requests are handled: any broker accepts admin requests and applies them through
the controller, as KRaft brokers forward ElectLeaders to the active controller; decisions use
the controller's image and Cluster.elect_leader, which writes a PartitionChangeRecord (the
leader epoch rises by one), notes the new epoch in the partition's leader-epoch cache and
propagates.

Per partition, as Kafka's ReplicationControlManager.electLeader decides:
- PREFERRED (0; the only type in v0): the first replica must become leader. Already leader:
  ELECTION_NOT_NEEDED; not live or not in the ISR: PREFERRED_LEADER_NOT_AVAILABLE.
- UNCLEAN (1): when a live in-sync replica leads, ELECTION_NOT_NEEDED. Otherwise the first
  live in-sync replica is elected, else the first live replica, whose election is unclean:
  the ISR shrinks to the new leader alone. No live replica: ELIGIBLE_LEADERS_NOT_AVAILABLE.
  Replication is perfect in mockbroker, so an unclean leader has every record and nothing is
  truncated here (tests that want a lost tail ask the cluster for it explicitly).
topic_partitions None means every partition; then, as in Kafka, partitions that need no
election are left out of the answer. An unknown election type fails the whole request with
INVALID_REQUEST at the top level (v1+).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.elect_leaders import ElectLeadersRequest

PREFERRED = 0
UNCLEAN = 1
MESSAGES = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not "
                                              "available.",
}


@handler(43, 0, 2)
def handle_elect_leaders(req: ElectLeadersRequest, ctx: RequestContext) -> dict[str, Any]:
    election = req.election_type if ctx.api_version >= 1 else PREFERRED
    cluster = ctx.cluster
    if election not in (PREFERRED, UNCLEAN):
        message = f"Unknown election type {election}"
        results = [{"topic": t.topic, "partition_result": [
            {"partition_id": p, "error_code": ErrorCode.INVALID_REQUEST, "error_message": message}
            for p in t.partitions]} for t in req.topic_partitions or []]
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST,
                "replica_election_results": results}
    results = []
    if req.topic_partitions is None:
        for name in sorted(cluster.image.topics):
            outcomes = [_result(p, *_elect(cluster, name, p, election))
                        for p in sorted(cluster.image.topics[name].partitions)]
            results.append({"topic": name, "partition_result": [
                o for o in outcomes if o["error_code"] != ErrorCode.ELECTION_NOT_NEEDED]})
    else:
        for wanted in req.topic_partitions:
            results.append({"topic": wanted.topic, "partition_result": [
                _result(p, *_elect(cluster, wanted.topic, p, election))
                for p in wanted.partitions]})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "replica_election_results": results}


def _result(partition: int, error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"partition_id": partition, "error_code": error, "error_message": message}


def _fail(error: ErrorCode) -> tuple[ErrorCode, str | None]:
    return error, MESSAGES[error]


def _elect(cluster: Cluster, topic: str, index: int,
           election: int) -> tuple[ErrorCode, str | None]:
    image = cluster.image
    if topic not in image.topics:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    part = image.partition(topic, index)
    if part is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}"
    live = {b.broker_id for b in image.live_brokers()}
    if election == PREFERRED:
        preferred = part.replicas[0]
        if part.leader == preferred:
            return _fail(ErrorCode.ELECTION_NOT_NEEDED)
        if preferred not in live or preferred not in part.isr:
            return _fail(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)
        cluster.elect_leader(topic, index, preferred)
        return ErrorCode.NONE, None
    if part.leader in live and part.leader in part.isr:
        return _fail(ErrorCode.ELECTION_NOT_NEEDED)
    clean = [r for r in part.replicas if r in live and r in part.isr]
    if clean:
        cluster.elect_leader(topic, index, clean[0])
        return ErrorCode.NONE, None
    unclean = [r for r in part.replicas if r in live]
    if not unclean:
        return _fail(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
    cluster.elect_leader(topic, index, unclean[0])
    cluster.set_isr(topic, index, [unclean[0]])
    return ErrorCode.NONE, None
