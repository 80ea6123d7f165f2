"""Client metrics resources (KIP-714) as configs: ListClientMetricsResources (key 74) v0, and
the CLIENT_METRICS config resource (type 16) that DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs read and change (kafka-client-metrics uses all of them).

Theory of operation. A client metrics resource is a named set of three configs (Kafka's
ClientMetricsConfigs): `metrics` (metric name prefixes), `interval.ms` (the push interval)
and `match` (client selectors, "key=regex" items). They are dynamic configs like a topic's,
written as config records through the controller (resource type 16) and read back from
the image; a resource exists while it has at least one config set. After every change the
cluster's telemetry subscription of that name follows the resource
(cluster/client_telemetry/telemetry_receiver.py: set, or removed with the resource's last config),
so clients get what the configs say. Subscriptions made through the control API are not configs
(kafka-client-metrics does not see them), and after a restart from a data directory the configs are
back but their subscription follows only from the resource's next change.

As Kafka 4 answers:
- DescribeConfigs of any name (existing or not) lists the three keys, sorted: a set one
  with source CLIENT_METRICS_CONFIG (7) and itself as synonym, an unset one with its
  default, source DEFAULT_CONFIG and no synonym; an empty name is INVALID_REQUEST.
- Changes are validated as ClientMetricsConfigs.validate does: an empty name or unknown key
  INVALID_REQUEST, an interval that is not an int INVALID_CONFIG, out of 100..3600000
  INVALID_REQUEST, a match item that is not "known_key=valid regex" INVALID_CONFIG.
- ListClientMetricsResources names the resources that have configs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster, ClusterError
from mockbroker.cluster.client_telemetry.telemetry_receiver import (
    DEFAULT_PUSH_INTERVAL_MS,
    MATCH_KEYS,
    MAX_PUSH_INTERVAL_MS,
    MIN_PUSH_INTERVAL_MS,
)
from mockbroker.cluster.configs.config_defs import INT, LIST, ConfigDef, validate_value
from mockbroker.cluster.kraft.metadata_log import MetadataImage
from mockbroker.handlers.config_entries import DEFAULT_CONFIG, ConfigView, Synonym
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.list_client_metrics_resources import (
        ListClientMetricsResourcesRequest,
    )

RESOURCE_CLIENT_METRICS = 16
CLIENT_METRICS_CONFIG = 7  # DescribeConfigs config source
INTERVAL, MATCH, METRICS = "interval.ms", "match", "metrics"
CLIENT_METRICS_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in (
    ConfigDef(INTERVAL, str(DEFAULT_PUSH_INTERVAL_MS), INT),
    ConfigDef(MATCH, "", LIST),
    ConfigDef(METRICS, "", LIST))}


@handler(74, 0, 0)
def handle_list_client_metrics_resources(req: ListClientMetricsResourcesRequest, ctx: RequestContext) -> dict[str, Any]:
    del req  # v0 has no fields
    # the client metrics config resources, and the subscriptions the control API set
    names = sorted({name for (rtype, name), values in ctx.read_image.configs.items()
                    if rtype == RESOURCE_CLIENT_METRICS and values}
                   | set(ctx.cluster.telemetry.subscriptions))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "client_metrics_resources": [{"name": name} for name in names]}


def client_metrics_views(image: MetadataImage, name: str) -> list[ConfigView]:
    """The three configs of resource `name` as DescribeConfigs lists them."""
    if not name:
        raise ClusterError(ErrorCode.INVALID_REQUEST,
                           "Client metrics subscription name must not be empty")
    values = image.configs.get((RESOURCE_CLIENT_METRICS, name), {})
    views = []
    for key, definition in sorted(CLIENT_METRICS_CONFIGS.items()):
        if key in values:
            views.append(ConfigView(key, values[key], CLIENT_METRICS_CONFIG, False, False,
                                    definition.type,
                                    [Synonym(key, values[key], CLIENT_METRICS_CONFIG)]))
        else:
            views.append(ConfigView(key, definition.default, DEFAULT_CONFIG, False, False,
                                    definition.type))
    return views


def validate_client_metrics(name: str, new: Mapping[str, str | None]) -> None:
    """Raise what Kafka's ClientMetricsConfigs.validate raises for the proposed values
    (None: a key being removed)."""
    if not name:
        raise ClusterError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key, value in new.items():
        definition = CLIENT_METRICS_CONFIGS.get(key)
        if definition is None:
            raise ClusterError(ErrorCode.INVALID_REQUEST,
                               f"Unknown client metrics configuration: {key}")
        if value is None:
            continue
        problem = validate_value(definition, value)
        if problem is not None:
            raise ClusterError(ErrorCode.INVALID_CONFIG, problem)
        if key == INTERVAL and not MIN_PUSH_INTERVAL_MS <= int(value) <= MAX_PUSH_INTERVAL_MS:
            raise ClusterError(ErrorCode.INVALID_REQUEST,
                               f"Invalid value {value} for {INTERVAL}, interval must be "
                               f"between {MIN_PUSH_INTERVAL_MS} and {MAX_PUSH_INTERVAL_MS} "
                               "(1 hour)")
        if key == MATCH:
            for item in _items(value):
                if _match_item(item) is None:
                    raise ClusterError(ErrorCode.INVALID_CONFIG,
                                       f"Illegal client matching pattern: {item}")


def sync_subscription(cluster: Cluster, name: str) -> None:
    """Make the telemetry subscription `name` what the resource's configs say (removed when
    the resource has none left)."""
    values = cluster.image.configs.get((RESOURCE_CLIENT_METRICS, name), {})
    if not values:
        cluster.telemetry.delete_subscription(name)
        return
    match = dict(item for item in map(_match_item, _items(values.get(MATCH, "")))
                 if item is not None)
    cluster.telemetry.set_subscription(
        name, _items(values.get(METRICS, "")),
        int(values.get(INTERVAL, DEFAULT_PUSH_INTERVAL_MS)), match)


def _items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _match_item(item: str) -> tuple[str, str] | None:
    """("key", "regex") of one match item, or None when it is not a valid one."""
    key, sep, pattern = item.partition("=")
    if not sep or key.strip() not in MATCH_KEYS or not pattern.strip():
        return None
    try:
        re.compile(pattern.strip())
    except re.error:
        return None
    return key.strip(), pattern.strip()
