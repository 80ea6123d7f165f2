"""Configuration entries as the admin APIs report them: value, source, synonyms, validation.

Why this module exists: DescribeConfigs and CreateTopics (v5+) both report effective
configurations with their source, and AlterConfigs/IncrementalAlterConfigs/CreateTopics all
validate proposed values; doing both in one place keeps what a client reads identical to what
the broker enforces.

Values are taken from the cluster (Cluster.topic_config / Cluster.broker_config, which the
Produce path also reads); the source of a value is found the way Kafka's ConfigHelper does it,
by walking the layers in precedence order and listing each layer that sets the key as a
synonym: topic override (DYNAMIC_TOPIC_CONFIG), per-broker dynamic config
(DYNAMIC_BROKER_CONFIG), cluster-wide dynamic config (DYNAMIC_DEFAULT_BROKER_CONFIG), the
broker's static settings (STATIC_BROKER_CONFIG: ClusterConfig values that differ from Kafka's
defaults) and Kafka's defaults (DEFAULT_CONFIG). The first synonym is the source. A topic's
values are those the answering broker applies: its own per-broker dynamic settings count
(Cluster.topic_config with its broker id), as a Kafka broker's log defaults include them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster, ClusterError, MetadataImage
from mockbroker.cluster.configs.config_defs import (
    BROKER_CONFIGS,
    DOCS,
    HIDDEN_UNLESS_SET,
    LIST,
    NOT_DYNAMIC_HERE,
    PASSWORD,
    TOPIC_CONFIGS,
    ConfigDef,
    broker_config_definition,
    validate_value,
)
from mockbroker.cluster.kraft.metadata_log import RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC

RESOURCE_BROKER_LOGGER = 8

# DescribeConfigs / CreateTopics config_source values
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
DYNAMIC_BROKER_LOGGER_CONFIG = 6
GROUP_CONFIG = 8
STRING_TYPE = 2  # DescribeConfigs config_type


@dataclass(frozen=True)
class Synonym:
    """A value the config would fall back to from another source (DescribeConfigs with
    include_synonyms)."""

    name: str
    value: str | None
    source: int


@dataclass(frozen=True)
class ConfigView:
    """One config as DescribeConfigs answers it: value, source, flags and synonyms."""

    name: str
    value: str | None
    source: int
    read_only: bool
    sensitive: bool
    config_type: int
    synonyms: list[Synonym] = field(default_factory=list)

    @property
    def documentation(self) -> str | None:
        return DOCS.get(self.name)


def _is_sensitive(definition: ConfigDef) -> bool:
    return definition.sensitive or definition.type == PASSWORD


def _explicit_static(cluster: Cluster, broker_id: int) -> dict[str, str]:
    """Static broker settings as if in server.properties: every key given as a broker
    property, and the values that differ from Kafka's defaults."""
    static = cluster.static_broker_config(broker_id)
    given = cluster.config.broker_properties
    return {k: v for k, v in static.items()
            if k in given or k not in BROKER_CONFIGS or BROKER_CONFIGS[k].default != v}


def _broker_default(name: str) -> str | None:
    """The default of a topic config's broker synonym: None (no DEFAULT_CONFIG synonym) for
    a setting without a default in Kafka's broker config and for topic-only ones."""
    definition = BROKER_CONFIGS.get(name)
    return definition.default if definition is not None else None


# Broker settings a topic config also defaults from, after its primary synonym (Kafka's
# ServerTopicConfigSynonyms: the coarser retention and roll units)
_MORE_SYNONYMS = {"log.retention.ms": ("log.retention.minutes", "log.retention.hours"),
                  "log.roll.ms": ("log.roll.hours",)}


def topic_views(cluster: Cluster, image: MetadataImage, broker_id: int,
                effective: Mapping[str, str], overrides: Mapping[str, str]) -> list[ConfigView]:
    """Every topic config, sorted by name, given its effective values (as `broker_id`
    applies them) and its overrides."""
    layers = ((image.configs.get((RESOURCE_BROKER, str(broker_id)), {}), DYNAMIC_BROKER_CONFIG),
              (image.configs.get((RESOURCE_BROKER, ""), {}), DYNAMIC_DEFAULT_BROKER_CONFIG),
              (_explicit_static(cluster, broker_id), STATIC_BROKER_CONFIG))
    views = []
    for name in sorted(TOPIC_CONFIGS):
        if name in HIDDEN_UNLESS_SET and name not in overrides:
            continue
        definition = TOPIC_CONFIGS[name]
        sensitive = _is_sensitive(definition)
        synonyms: list[Synonym] = []
        if name in overrides:
            synonyms.append(Synonym(name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        broker_name = definition.broker_synonym
        if broker_name is not None:
            names = (broker_name, *_MORE_SYNONYMS.get(broker_name, ()))
            for layer, source in layers:  # layer by layer, each synonym in precedence order
                synonyms += [Synonym(n, layer[n], source) for n in names if n in layer]
            default = _broker_default(broker_name)
            if default is not None:
                synonyms.append(Synonym(broker_name, default, DEFAULT_CONFIG))
        if sensitive:
            synonyms = [Synonym(s.name, None, s.source) for s in synonyms]
        views.append(ConfigView(
            name, None if sensitive else effective.get(name, definition.default),
            synonyms[0].source if synonyms else DEFAULT_CONFIG, False, sensitive,
            definition.type, synonyms))
    return views


def broker_views(cluster: Cluster, broker_id: int | None,
                 image: MetadataImage | None = None) -> list[ConfigView]:
    """Broker configs of one broker, or (broker_id None) the cluster-wide dynamic defaults,
    from `image` (default: the controller's). Listener-prefixed keys
    (listener.name.<l>.max.connections, ...) set statically or dynamically are listed too,
    as Kafka lists every key of its config: their synonyms are the key and its base key,
    layer by layer, from the key's own first layer (ConfigHelper.configSynonyms), and they
    are read-only, since Kafka's dynamic-config set names only base keys."""
    image = image or cluster.image
    dynamic_default = image.configs.get((RESOURCE_BROKER, ""), {})
    if broker_id is None:
        per_broker: dict[str, str] = {}
        static: dict[str, str] = {}
        names = sorted(k for k in dynamic_default if broker_config_definition(k) is not None)
        effective = dict(dynamic_default)
    else:
        per_broker = image.configs.get((RESOURCE_BROKER, str(broker_id)), {})
        static = _explicit_static(cluster, broker_id)
        prefixed = {k for layer in (per_broker, dynamic_default, static) for k in layer
                    if k not in BROKER_CONFIGS and broker_config_definition(k) is not None}
        names = sorted({*BROKER_CONFIGS, *prefixed})
        effective = cluster.broker_config(broker_id, image)
    views = []
    for name in names:
        definition = broker_config_definition(name)
        assert definition is not None
        base = definition.name
        sensitive = _is_sensitive(definition)
        synonyms: list[Synonym] = []
        for layer, source in ((per_broker, DYNAMIC_BROKER_CONFIG),
                              (dynamic_default, DYNAMIC_DEFAULT_BROKER_CONFIG),
                              (static, STATIC_BROKER_CONFIG)):
            synonyms += [Synonym(n, layer[n], source) for n in dict.fromkeys((name, base))
                         if n in layer]
        if definition.default is not None:
            synonyms.append(Synonym(base, definition.default, DEFAULT_CONFIG))
        while synonyms and synonyms[0].name != name:  # a base key's layers above the key's
            synonyms.pop(0)
        if broker_id is None:  # the default resource shows only its own layer
            synonyms = [s for s in synonyms if s.source == DYNAMIC_DEFAULT_BROKER_CONFIG]
        if sensitive:
            synonyms = [Synonym(s.name, None, s.source) for s in synonyms]
        views.append(ConfigView(
            name, None if sensitive else effective.get(name),
            synonyms[0].source if synonyms else DEFAULT_CONFIG,
            definition.read_only or name != base, sensitive, definition.type, synonyms))
    return views


def create_topics_entry(view: ConfigView) -> dict[str, Any]:
    """A CreateTopics v5+ response config entry."""
    return {"name": view.name, "value": view.value, "read_only": view.read_only,
            "config_source": view.source, "is_sensitive": view.sensitive}


# -- validation ------------------------------------------------------------------------------

def table_for(resource_type: int) -> Mapping[str, ConfigDef]:
    return TOPIC_CONFIGS if resource_type == RESOURCE_TOPIC else BROKER_CONFIGS


# Kafka's group configs (GroupConfig): the ones mockbroker's share groups apply, with the
# values they take, and the others, which Kafka knows and mockbroker does not model.
GROUP_CONFIG_CHOICES: dict[str, tuple[str, ...]] = {
    "share.auto.offset.reset": ("earliest", "latest"),
    "share.isolation.level": ("read_committed", "read_uncommitted"),
}
UNMODELLED_GROUP_CONFIGS = frozenset({
    "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms",
    "consumer.assignment.interval.ms", "consumer.assignor.offload.enable",
    "share.session.timeout.ms", "share.heartbeat.interval.ms",
    "share.record.lock.duration.ms", "share.delivery.count.limit",
    "share.partition.max.record.locks", "share.renew.acknowledge.enable",
    "share.assignment.interval.ms", "share.assignor.offload.enable",
    "streams.session.timeout.ms", "streams.heartbeat.interval.ms",
    "streams.num.standby.replicas", "streams.initial.rebalance.delay.ms",
    "streams.assignment.interval.ms", "streams.rack.aware.assignment.tags",
    "streams.assignor.offload.enable", "streams.task.offset.interval.ms",
    "streams.num.warmup.replicas", "streams.acceptable.recovery.lag", "streams.assignor.name",
    "errors.deadletterqueue.topic.name", "errors.deadletterqueue.copy.record.enable",
})


def group_views(image: MetadataImage, group_id: str) -> list[ConfigView]:
    """The group configs mockbroker models, as DescribeConfigs on a GROUP resource shows
    them: set ones with source GROUP_CONFIG and the default as a synonym, others the
    default (Kafka lists its other group configs too, which mockbroker does not model)."""
    from mockbroker.cluster.groups.share_group_coordinator import (
        GROUP_CONFIG_DEFAULTS,  # loaded on first use
    )

    overrides = image.configs.get((RESOURCE_GROUP, group_id), {})
    views = []
    for name in GROUP_CONFIG_CHOICES:
        default = Synonym(name, GROUP_CONFIG_DEFAULTS[name], DEFAULT_CONFIG)
        if name in overrides:
            views.append(ConfigView(name, overrides[name], GROUP_CONFIG, False, False,
                                    STRING_TYPE,
                                    [Synonym(name, overrides[name], GROUP_CONFIG), default]))
        else:
            views.append(ConfigView(name, default.value, DEFAULT_CONFIG, False, False,
                                    STRING_TYPE, [default]))
    return views


def validate_group_configs(configs: Mapping[str, str | None]) -> None:
    """INVALID_CONFIG for a name Kafka's GroupConfig does not know or a bad value, with
    Kafka's messages (None: a key being removed, only its name is checked). The group configs
    mockbroker does not model are refused too, saying so."""
    for name, value in configs.items():
        choices = GROUP_CONFIG_CHOICES.get(name)
        if choices is None:
            if name in UNMODELLED_GROUP_CONFIGS:
                raise ClusterError(ErrorCode.INVALID_CONFIG,
                                   f"Group config {name} is not supported by mockbroker")
            raise ClusterError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
        if value is None or value in choices:
            continue
        if name == "share.auto.offset.reset":
            if value.startswith("by_duration:"):
                raise ClusterError(ErrorCode.INVALID_CONFIG,
                                   f"share.auto.offset.reset {value} is not supported by "
                                   "mockbroker (earliest and latest are)")
            detail = (f"Invalid value `{value}` for configuration {name}. The value must be "
                      "either 'earliest', 'latest' or of the format "
                      "'by_duration:<PnDTnHnMn.nS>'.")
        else:
            detail = f"String must be one of: {', '.join(choices)}"
        raise ClusterError(ErrorCode.INVALID_CONFIG,
                           f"Invalid value {value} for configuration {name}: {detail}")


def validate_topic_configs(configs: Mapping[str, str | None]) -> None:
    """Raise INVALID_CONFIG for an unknown topic config name or a bad value (None: a key
    being removed, not checked: Kafka validates the configs that remain, so deleting an
    unknown key succeeds)."""
    for name, value in configs.items():
        if value is None:
            continue
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise ClusterError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
        problem = validate_value(definition, value)
        if problem is not None:
            raise ClusterError(ErrorCode.INVALID_CONFIG, problem)


def validate_broker_configs(configs: Mapping[str, str | None]) -> None:
    """Unknown names: INVALID_CONFIG (Kafka would accept them as custom configs); keys Kafka
    cannot change at runtime and bad values: INVALID_REQUEST, as a Kafka broker answers them
    (its dynamic broker config validation wraps the ConfigException)."""
    definitions = {name: broker_config_definition(name) for name in configs}
    for name, known in definitions.items():
        if known is None:
            raise ClusterError(ErrorCode.INVALID_CONFIG, f"Unknown broker config name: {name}")
    fixed = sorted(name for name, known in definitions.items()
                   if (known is None or known.read_only) or name in NOT_DYNAMIC_HERE)
    if fixed:
        raise ClusterError(ErrorCode.INVALID_REQUEST,
                           f"Cannot update these configs dynamically: {', '.join(fixed)}")
    for name, value in configs.items():
        if value is not None:
            known = definitions[name]
            problem = None if known is None else validate_value(known, value)
            if problem is not None:
                raise ClusterError(ErrorCode.INVALID_REQUEST, problem)


def is_list_type(resource_type: int, name: str) -> bool:
    definition = table_for(resource_type).get(name)
    return definition is not None and definition.type == LIST


def schema_default(resource_type: int, name: str) -> str | None:
    definition = table_for(resource_type).get(name)
    return definition.default if definition is not None else None
