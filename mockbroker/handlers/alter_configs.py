"""AlterConfigs (key 33) v0-2 and IncrementalAlterConfigs (key 44) v0-1.

Where admin requests are handled: any broker accepts them and applies the change through the
controller (Cluster.set_configs writes ConfigRecords to the metadata log and lets every
broker apply them), as KRaft brokers forward these requests to
the active controller. Produce and DescribeConfigs read the same values afterwards
(Cluster.topic_config), so a change takes effect at once.

Semantics follow Kafka (ConfigAdminManager on the broker, ConfigurationControlManager on the
controller):
- AlterConfigs replaces the whole override set of a resource: keys not named are deleted.
- IncrementalAlterConfigs applies SET, DELETE, APPEND and SUBTRACT per key; APPEND/SUBTRACT
  work on LIST configs only and start from the current override or else the default.
- A resource named twice in one request: INVALID_REQUEST for every occurrence; a key named
  twice in one resource, or a null value (except DELETE): INVALID_REQUEST.
- TOPIC: unknown names and bad values INVALID_CONFIG, checked before the topic's existence
  (UNKNOWN_TOPIC_OR_PARTITION). BROKER: the name is "" (cluster-wide default) or an existing
  broker id; keys Kafka cannot change at runtime get INVALID_REQUEST.
- BROKER_LOGGER (incremental only): logger levels of one broker, kept in memory.
- GROUP (KIP-848/KIP-932 group configs, no default resource ""): the share group configs
  mockbroker applies (share.auto.offset.reset, share.isolation.level; the share groups read
  them from the metadata image); Kafka's other group config names are refused with
  INVALID_CONFIG saying mockbroker does not model them, unknown names as Kafka refuses them.
- CLIENT_METRICS: a client metrics resource's configs (handlers/client_metrics.py validates
  them, and the telemetry subscription of that name follows each change). APPEND and
  SUBTRACT are refused on its keys, as Kafka refuses them (its check does not see them as
  LIST).
- Every resource is validated as a whole before anything is written; validate_only writes
  nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import ClusterError
from mockbroker.cluster.configs.config_defs import (
    LISTENER_CONFIGS,
    broker_config_definition,
    connection_limit_problem,
)
from mockbroker.cluster.kraft.metadata_log import RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC
from mockbroker.handlers.client_metrics import (
    RESOURCE_CLIENT_METRICS,
    sync_subscription,
    validate_client_metrics,
)
from mockbroker.handlers.config_entries import (
    RESOURCE_BROKER_LOGGER,
    is_list_type,
    schema_default,
    validate_broker_configs,
    validate_group_configs,
    validate_topic_configs,
)
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.describe_configs import (
    LOG_LEVELS,
    LOGGERS,
    ROOT_LOGGER,
    logger_levels,
    parse_broker_id,
)
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.alter_configs import AlterConfigsRequest
    from kafka_protocol_codec.generated.incremental_alter_configs import (
        IncrementalAlterConfigsRequest,
    )

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
ALTERABLE = (RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_CLIENT_METRICS)  # as config records
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

Change = tuple[int, str, str, str | None]  # resource type, resource name, key, value
# the resource: AlterConfigsRequest's or IncrementalAlterConfigsRequest's, as the function says
Alter = Callable[[RequestContext, Any, bool], list[Change]]


@handler(33, 0, 2)
def handle_alter_configs(req: AlterConfigsRequest, ctx: RequestContext) -> dict[str, Any]:
    return _respond(ctx, req, _alter_legacy)


@handler(44, 0, 1)
def handle_incremental_alter_configs(req: IncrementalAlterConfigsRequest, ctx: RequestContext) -> dict[str, Any]:
    return _respond(ctx, req, _alter_incremental)


def _respond(ctx: RequestContext, req: AlterConfigsRequest | IncrementalAlterConfigsRequest,
             alter: Alter) -> dict[str, Any]:
    seen = Counter((r.resource_type, r.resource_name) for r in req.resources)
    responses = []
    for resource in req.resources:
        error, message = ErrorCode.NONE, None
        if seen[(resource.resource_type, resource.resource_name)] > 1:
            error, message = ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
        else:
            try:
                changes = alter(ctx, resource, bool(req.validate_only))
            except ClusterError as exc:
                error, message = exc.code, exc.message or None  # "": Kafka sends none
            else:
                if not req.validate_only:
                    ctx.cluster.set_configs(changes)
                    if resource.resource_type == RESOURCE_CLIENT_METRICS:
                        sync_subscription(ctx.cluster, resource.resource_name)
        responses.append({"error_code": error, "error_message": message,
                          "resource_type": resource.resource_type,
                          "resource_name": resource.resource_name})
    return {"throttle_time_ms": 0, "responses": responses}


def _check_keys(names: Iterable[str], null_names: list[str]) -> None:
    counts = Counter(names)
    if any(n > 1 for n in counts.values()):
        raise ClusterError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    if null_names:
        raise ClusterError(ErrorCode.INVALID_REQUEST,
                           f"Null value not supported for : {', '.join(null_names)}")


def _current(ctx: RequestContext, resource_type: int, name: str) -> dict[str, str]:
    """The resource's current overrides, on the controller (where changes are decided)."""
    return dict(ctx.cluster.image.configs.get((resource_type, name), {}))


def _validate(ctx: RequestContext, resource_type: int, name: str,
              new: dict[str, str | None]) -> None:
    """Check a resource's proposed key/values (None: removed) before anything is written."""
    if resource_type == RESOURCE_TOPIC:
        ctx.cluster.validate_topic_name(name)
        validate_topic_configs(new)
        if name not in ctx.cluster.image.topics:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"The topic '{name}' does not exist.")
    elif resource_type == RESOURCE_BROKER:
        if name != "":
            parse_broker_id(ctx, name)
        validate_broker_configs(new)
        _check_connection_limits(ctx, name, new)
        _check_log_cleaner(ctx, name, new)
    elif resource_type == RESOURCE_GROUP:
        if name == "":
            raise ClusterError(ErrorCode.INVALID_REQUEST,
                               "Default group resources are not allowed.")
        validate_group_configs(new)
    elif resource_type == RESOURCE_CLIENT_METRICS:
        validate_client_metrics(name, new)
    else:
        raise ClusterError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}")


def _check_connection_limits(ctx: RequestContext, name: str,
                             new: dict[str, str | None]) -> None:
    """Kafka builds the broker's whole config with the change and checks it (INVALID_REQUEST
    on failure): each listener's connection quota refuses a max.connections or
    max.connection.creation.rate of 0 or less (ListenerConnectionQuota
    .validateReconfiguration), validateValues the per-IP overrides and their zero rule."""
    for key, value in new.items():
        base = broker_config_definition(key)
        if value is not None and base is not None and base.name in LISTENER_CONFIGS \
                and value.strip().lstrip("-").isdigit() and int(value) <= 0:
            raise ClusterError(ErrorCode.INVALID_REQUEST, f"Invalid {base.name} {value.strip()}")
    if not any(key.startswith("max.connections.per.ip") for key in new):
        return
    merged: dict[str, str | None] = dict(ctx.cluster.broker_config(ctx.broker_id))
    if name != "":  # the broker's own layer beats the cluster default
        merged.update(ctx.cluster.image.configs.get((RESOURCE_BROKER, name), {}))
    for key, value in new.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    problem = connection_limit_problem(merged)
    if problem is not None:
        raise ClusterError(ErrorCode.INVALID_REQUEST, problem)


CLEANER_THREADS, DEDUPE_BUFFER = "log.cleaner.threads", "log.cleaner.dedupe.buffer.size"


def _check_log_cleaner(ctx: RequestContext, name: str, new: dict[str, str | None]) -> None:
    """Kafka's LogCleaner.validateReconfiguration on the broker's config with the change
    (INVALID_REQUEST, its ConfigException wrapped as DynamicBrokerConfig wraps it): at least
    one thread, at most double and at least half the current count; and the dedupe buffer
    at least 1 MiB per thread (CleanerConfig's requirement)."""
    if CLEANER_THREADS not in new and DEDUPE_BUFFER not in new:
        return
    current = ctx.cluster.broker_config(ctx.broker_id)
    merged = dict(current)
    if name != "":  # the broker's own layer beats the cluster default
        merged.update(ctx.cluster.image.configs.get((RESOURCE_BROKER, name), {}))
    for key, value in new.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    now = int(current.get(CLEANER_THREADS, "1"))
    threads = int(merged.get(CLEANER_THREADS, "1"))
    problem = None
    if threads < 1:
        problem = "Log cleaner threads should be at least 1"
    elif threads < now // 2:
        problem = f"Log cleaner threads cannot be reduced to less than half the current value {now}"
    elif threads > now * 2:
        problem = ("Log cleaner threads cannot be increased to more than double the current "
                   f"value {now}")
    if problem is not None:
        raise ClusterError(ErrorCode.INVALID_REQUEST,
                           f"Invalid value org.apache.kafka.common.config.ConfigException: "
                           f"{problem} for configuration Invalid dynamic configuration")
    if int(merged.get(DEDUPE_BUFFER, "134217728")) < threads * 1024 * 1024:
        raise ClusterError(ErrorCode.INVALID_REQUEST, "requirement failed: "
                           f"{DEDUPE_BUFFER} must be at least 1MB per cleaner thread.")


def _changes(resource_type: int, name: str, current: dict[str, str],
             new: dict[str, str | None]) -> list[Change]:
    # Kafka writes broker records even when unchanged (KAFKA-14136); topics only on change
    return [(resource_type, name, key, value) for key, value in new.items()
            if current.get(key) != value or resource_type == RESOURCE_BROKER]


# -- AlterConfigs ----------------------------------------------------------------------------

def _alter_legacy(ctx: RequestContext, resource: AlterConfigsRequest.AlterConfigsResource,
                  validate_only: bool) -> list[Change]:
    rtype, name = resource.resource_type, resource.resource_name
    _check_keys((c.name for c in resource.configs),
                [c.name for c in resource.configs if c.value is None])
    if rtype not in ALTERABLE:
        raise ClusterError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {rtype}")
    proposed: dict[str, str | None] = {c.name: c.value for c in resource.configs}
    _validate(ctx, rtype, name, proposed)
    current = _current(ctx, rtype, name)
    changes = _changes(rtype, name, current, proposed)
    # the whole set is replaced: overrides the request does not name are deleted
    changes += [(rtype, name, key, None) for key in current if key not in proposed]
    return changes


# -- IncrementalAlterConfigs -----------------------------------------------------------------

def _alter_incremental(ctx: RequestContext,
                       resource: IncrementalAlterConfigsRequest.AlterConfigsResource,
                       validate_only: bool) -> list[Change]:
    rtype, name = resource.resource_type, resource.resource_name
    ops = list(resource.configs)
    _check_keys((c.name for c in ops),
                [c.name for c in ops if c.config_operation != DELETE and c.value is None])
    if rtype == RESOURCE_BROKER_LOGGER:
        _alter_loggers(ctx, name, ops, validate_only)
        return []
    if rtype not in ALTERABLE:
        raise ClusterError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {rtype}")
    current = _current(ctx, rtype, name)
    new: dict[str, str | None] = {}
    for op in ops:
        key, kind = op.name, op.config_operation
        if kind == SET:
            new[key] = op.value
        elif kind == DELETE:
            new[key] = None
        elif kind in (APPEND, SUBTRACT):
            if not is_list_type(rtype, key):
                raise ClusterError(ErrorCode.INVALID_CONFIG,
                                   f"Can't {OP_NAMES[kind]} to key {key} because its type is "
                                   "not LIST.")
            # a null value was refused above (_check_keys)
            new[key] = _list_op(kind, current.get(key, schema_default(rtype, key)), op.value or "")
        else:
            # Kafka's controller fails on the unknown code (a NullPointerException):
            # UNKNOWN_SERVER_ERROR, whose message it does not reveal
            raise ClusterError(ErrorCode.UNKNOWN_SERVER_ERROR, "")
    _validate(ctx, rtype, name, new)
    return _changes(rtype, name, current, new)


def _list_op(kind: int, base: str | None, operand: str) -> str:
    parts = [p for p in (base or "").split(",") if p]
    for item in operand.split(","):
        if kind == APPEND and item not in parts:
            parts.append(item)
        elif kind == SUBTRACT and item in parts:
            parts.remove(item)
    return ",".join(parts)


def _alter_loggers(ctx: RequestContext, name: str, ops: list[IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig],
                   validate_only: bool) -> None:
    node = parse_broker_id(ctx, name)
    known = {ROOT_LOGGER, *LOGGERS}
    for op in ops:
        logger, kind = op.name, op.config_operation
        if kind in (APPEND, SUBTRACT):
            raise ClusterError(ErrorCode.INVALID_REQUEST,
                               f"{OP_NAMES[kind]} operation is not allowed for the "
                               "BROKER_LOGGER resource")
        if kind not in (SET, DELETE):
            raise ClusterError(ErrorCode.INVALID_REQUEST,
                               f"Unknown operation type {kind} is not allowed for the "
                               "BROKER_LOGGER resource")
        if logger not in known:
            raise ClusterError(ErrorCode.INVALID_CONFIG, f"Logger {logger} does not exist!")
        if kind == SET and op.value not in LOG_LEVELS:
            raise ClusterError(ErrorCode.INVALID_CONFIG,
                               f"Cannot set the log level of {logger} to {op.value} as it is "
                               f"not a supported log level. Valid log levels are "
                               f"{', '.join(LOG_LEVELS)}")
        if kind == DELETE and logger == ROOT_LOGGER:
            raise ClusterError(ErrorCode.INVALID_REQUEST,
                               f"Removing the log level of the {ROOT_LOGGER} logger is not "
                               "allowed")
    if validate_only:
        return
    levels = logger_levels(node)
    for op in ops:
        if op.config_operation == SET:
            levels[op.name] = op.value or ""  # one of LOG_LEVELS, checked above
        else:
            levels.pop(op.name, None)
