"""DescribeConfigs (key 32), v0-4: TOPIC, BROKER, BROKER_LOGGER, GROUP and CLIENT_METRICS
resources.

Where admin requests are handled: any broker accepts admin requests. Reads like this one are
answered by the receiving broker from its own state, as Kafka brokers do (topic existence
and dynamic configs from its own metadata image, so a broker with paused metadata does not
know a new topic yet; in consistent-read mode from the image at the lowest acknowledged
offset, RequestContext.read_image);
changes (AlterConfigs, CreateTopics, ...) are applied through the controller, as KRaft
brokers forward them.

Kafka's behaviour per resource type (kafka.server.ConfigHelper):
- TOPIC: every topic config with value, source and synonyms; an illegal name gets
  INVALID_TOPIC_EXCEPTION and an unknown topic UNKNOWN_TOPIC_OR_PARTITION.
- BROKER: an empty name describes the cluster-wide dynamic defaults only; a broker id
  describes that broker's full configuration. Kafka requires the id to be the receiving
  broker's; mockbroker answers for any existing broker (clients route the request to the
  named broker anyway) and returns INVALID_REQUEST for ids that do not exist.
- BROKER_LOGGER: the broker's loggers and their levels (source DYNAMIC_BROKER_LOGGER_CONFIG);
  an empty or unknown broker id gets INVALID_REQUEST. Levels are kept per broker in memory
  and not written to the metadata log, as Kafka's KIP-412 levels are not persisted.
- GROUP: the group configs mockbroker models (share.auto.offset.reset,
  share.isolation.level), set ones with source GROUP_CONFIG; any group name but "" (Kafka
  does not require the group to exist). Kafka also lists its other group configs.
- CLIENT_METRICS: the three configs of a client metrics resource (handlers/client_metrics.py).
- Any other type: INVALID_REQUEST ("Unsupported resource type").
configuration_keys filters the entries (None or empty: all). v0 reports is_default instead of
config_source; synonyms are returned (v1+) only when asked for; documentation (v3+) only with
include_documentation.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import BrokerNode, ClusterError
from mockbroker.cluster.kraft.metadata_log import RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC
from mockbroker.handlers.client_metrics import RESOURCE_CLIENT_METRICS, client_metrics_views
from mockbroker.handlers.config_entries import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_LOGGER_CONFIG,
    RESOURCE_BROKER_LOGGER,
    ConfigView,
    broker_views,
    group_views,
    topic_views,
)
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.describe_configs import DescribeConfigsRequest

ROOT_LOGGER = "root"
LOGGERS = ("kafka", "kafka.controller", "kafka.coordinator", "kafka.log", "kafka.network",
           "kafka.request.logger", "kafka.server", "state.change.logger")
LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")
DEFAULT_ROOT_LEVEL = "INFO"
UNKNOWN_TYPE = 0  # Kafka sets no config_type on logger entries

# Explicitly set logger levels per broker (KIP-412 levels live in memory only).
_logger_levels: weakref.WeakKeyDictionary[BrokerNode, dict[str, str]] = \
    weakref.WeakKeyDictionary()


def logger_levels(node: BrokerNode) -> dict[str, str]:
    """The mutable map of explicitly set levels of one broker's loggers."""
    levels = _logger_levels.get(node)
    if levels is None:
        levels = {ROOT_LOGGER: DEFAULT_ROOT_LEVEL}
        _logger_levels[node] = levels
    return levels


def effective_logger_levels(node: BrokerNode) -> dict[str, str]:
    """Every logger with its effective level (unset loggers inherit the root level)."""
    levels = logger_levels(node)
    root = levels[ROOT_LOGGER]
    return {ROOT_LOGGER: root, **{name: levels.get(name, root) for name in LOGGERS}}


def parse_broker_id(ctx: RequestContext, name: str) -> BrokerNode:
    """The broker a BROKER or BROKER_LOGGER resource names (INVALID_REQUEST if none)."""
    try:
        broker_id = int(name)
    except ValueError:
        raise ClusterError(ErrorCode.INVALID_REQUEST,
                           f"Broker id must be an integer, but it is: {name}") from None
    node = ctx.cluster.brokers.get(broker_id)
    if node is None:
        raise ClusterError(ErrorCode.INVALID_REQUEST,
                           f"Unexpected broker id, expected one of "
                           f"{sorted(ctx.cluster.brokers)} or empty string, but received "
                           f"{name}")
    return node


@handler(32, 0, 4)
def handle_describe_configs(req: DescribeConfigsRequest, ctx: RequestContext) -> dict[str, Any]:
    results = []
    for resource in req.resources:
        keys = resource.configuration_keys
        wanted = set(keys) if keys else None
        try:
            entries = _describe(ctx, resource.resource_type, resource.resource_name, req)
            error, message = ErrorCode.NONE, ""  # Kafka: Errors.NONE's message, empty
        except ClusterError as exc:
            entries, error, message = [], exc.code, exc.message
        if wanted is not None:
            entries = [e for e in entries if e["name"] in wanted]
        results.append({"error_code": error, "error_message": message,
                        "resource_type": resource.resource_type,
                        "resource_name": resource.resource_name, "configs": entries})
    return {"throttle_time_ms": 0, "results": results}


def _describe(ctx: RequestContext, resource_type: int, name: str,
              req: DescribeConfigsRequest) -> list[dict[str, Any]]:
    synonyms = ctx.api_version >= 1 and bool(req.include_synonyms)
    docs = ctx.api_version >= 3 and bool(req.include_documentation)
    image = ctx.read_image
    if resource_type == RESOURCE_TOPIC:
        ctx.cluster.validate_topic_name(name)
        if name not in image.topics:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"The topic '{name}' does not exist.")
        views = topic_views(ctx.cluster, image, ctx.broker_id,
                            ctx.cluster.topic_config(name, image, ctx.broker_id),
                            image.topic_config(name))
    elif resource_type == RESOURCE_BROKER:
        broker_id = None if name == "" else parse_broker_id(ctx, name).broker_id
        views = broker_views(ctx.cluster, broker_id, image)
    elif resource_type == RESOURCE_BROKER_LOGGER:
        if name == "":
            raise ClusterError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        node = parse_broker_id(ctx, name)
        levels = effective_logger_levels(node)
        views = [ConfigView(logger, level, DYNAMIC_BROKER_LOGGER_CONFIG, False, False,
                            UNKNOWN_TYPE) for logger, level in levels.items()]
    elif resource_type == RESOURCE_GROUP:
        if name == "":
            raise ClusterError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        views = group_views(image, name)
    elif resource_type == RESOURCE_CLIENT_METRICS:
        views = client_metrics_views(image, name)
    else:
        raise ClusterError(ErrorCode.INVALID_REQUEST,
                           f"Unsupported resource type: {resource_type}")
    is_logger = resource_type == RESOURCE_BROKER_LOGGER
    return [_entry(view, synonyms, docs and not is_logger) for view in views]


def _entry(view: ConfigView, synonyms: bool, docs: bool) -> dict[str, Any]:
    return {
        "name": view.name, "value": view.value, "read_only": view.read_only,
        "is_default": view.source == DEFAULT_CONFIG, "config_source": view.source,
        "is_sensitive": view.sensitive,
        "synonyms": [{"name": s.name, "value": s.value, "source": s.source}
                     for s in view.synonyms] if synonyms else [],
        "config_type": view.config_type,
        "documentation": view.documentation if docs else None,
    }
