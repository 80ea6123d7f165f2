"""Options and offsets of the Spark Kafka source (mockbroker.spark), and its Java check: the
parts that need no pyspark.

Theory of operation: Spark passes a data source its options as strings, with lower-cased keys
(a case-insensitive map), so `KafkaOptions.parse` lower-cases every key once and reads the JVM
connector's option names through that. Parsing checks everything that can be checked without a
network round trip and raises `KafkaSourceError` with the option's name: the bootstrap servers,
one of subscribe / subscribePattern / assign, the offsets specs ("earliest", "latest" or the
JVM connector's JSON `{"topic":{"0":23,"1":-2}}`, -2 meaning earliest and -1 latest), numbers
and booleans. Checks that need the cluster (does the topic exist, does the JSON name exactly
the subscribed partitions) take the topic list as an argument (`resolve_partitions`,
`offsets_for`) so the caller decides where the Metadata request happens.

Offsets in memory are `{(topic, partition): offset}`; `to_json_offsets` / `from_json_offsets`
convert to and from the JSON shape, which is also what the streaming reader hands Spark for
its checkpoint. `rate_limit` is the JVM connector's maxOffsetsPerTrigger rule: the limit is
split over partitions in proportion to their backlog.

`check_java` runs `$JAVA_HOME/bin/java -version` (else `java` on PATH), the binary Spark's
launcher would use, and raises `JavaMissingError` naming the Debian package when it is absent
or older than 17.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

EARLIEST = -2
LATEST = -1
TopicPartition = tuple[str, int]
Offsets = dict[TopicPartition, int]
OffsetsSpec = str | Offsets  # "earliest", "latest" or explicit offsets (may hold -2 / -1)

HEADERS_TYPE = "array<struct<key:string,value:binary>>"
_JSON_HINT = ('expected "earliest", "latest" or JSON such as {"topic":{"0":23,"1":-2}} '
              "(-2 = earliest, -1 = latest)")
# Kafka client settings the JVM connector refuses, and why.
_FORBIDDEN_KAFKA = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "key.deserializer": "keys are always read as bytes (cast the key column)",
    "value.deserializer": "values are always read as bytes (cast the value column)",
    "key.serializer": "write the key column as a string or binary",
    "value.serializer": "write the value column as a string or binary",
    "enable.auto.commit": "the source does not commit offsets to Kafka; Spark checkpoints them",
    "interceptor.classes": "interceptors are not supported",
}
# JVM connector options this implementation does not provide: refuse them rather than differ.
_UNSUPPORTED = ("startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp",
                "endingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
                "minPartitions", "maxRecordsPerPartition", "minOffsetsPerTrigger",
                "maxTriggerDelay", "kafka.group.id")


class KafkaSourceError(ValueError):
    """A bad option or an impossible read, reported on the driver before any task runs."""


def parse_offsets_json(option: str, text: str) -> Offsets:
    """`{"topic":{"0":23,"1":-2}}` -> {("topic", 0): 23, ("topic", 1): -2}."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KafkaSourceError(f"{option}: malformed offsets JSON {text!r} ({exc.msg} at "
                               f"char {exc.pos}); {_JSON_HINT}") from exc
    return from_json_offsets(obj, option)


def from_json_offsets(obj: Any, option: str = "offsets") -> Offsets:
    """The parsed JSON shape -> offsets, validating every level."""
    if not isinstance(obj, dict):
        raise KafkaSourceError(f"{option}: offsets JSON must be an object of topics, "
                               f"got {json.dumps(obj)}; {_JSON_HINT}")
    out: Offsets = {}
    for topic, parts in obj.items():
        if not isinstance(parts, dict):
            raise KafkaSourceError(f"{option}: topic {topic!r} must map partition numbers to "
                                   f"offsets, got {json.dumps(parts)}; {_JSON_HINT}")
        for partition, offset in parts.items():
            if not (isinstance(partition, str) and partition.isdigit()):
                raise KafkaSourceError(f"{option}: partition {partition!r} of topic {topic!r} "
                                       f"is not a partition number; {_JSON_HINT}")
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise KafkaSourceError(f"{option}: offset {json.dumps(offset)} of {topic}-"
                                       f"{partition} is not an offset, -2 or -1; {_JSON_HINT}")
            out[(topic, int(partition))] = offset
    return out


def to_json_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Offsets -> the JVM connector's JSON shape (topics and partitions in order)."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def rate_limit(begin: Offsets, end: Offsets, limit: int) -> Offsets:
    """At most about `limit` records past `begin`, split by backlog (the JVM connector's rule:
    a share below one record rounds up, others round down)."""
    sizes = {tp: end[tp] - begin.get(tp, end[tp]) for tp in end}
    total = sum(size for size in sizes.values() if size > 0)
    if total <= limit:
        return dict(end)
    out: Offsets = {}
    for tp, stop in end.items():
        start = begin.get(tp, stop)
        if sizes[tp] <= 0:
            out[tp] = stop
            continue
        share = limit * (sizes[tp] / total)
        step = int(share) if share >= 1 else (1 if share > 0 else 0)
        out[tp] = min(stop, start + step)
    return out


def _flag(opts: Mapping[str, str], key: str, default: bool) -> bool:
    raw = opts.get(key.lower())
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise KafkaSourceError(f"{key} must be true or false, got {raw!r}")
    return raw.strip().lower() == "true"


def _positive(opts: Mapping[str, str], key: str) -> int | None:
    raw = opts.get(key.lower())
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise KafkaSourceError(f"{key} must be a positive integer, got {raw!r}")
    return value


def _offsets_spec(opts: Mapping[str, str], key: str) -> OffsetsSpec | None:
    raw = opts.get(key.lower())
    if raw is None:
        return None
    text = raw.strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    return parse_offsets_json(key, text)


@dataclass(frozen=True)
class KafkaOptions:
    """The source and sink options, parsed; see the module docstring."""

    bootstrap: str
    kafka: dict[str, str] = field(default_factory=dict)  # client config, prefix stripped
    subscribe: tuple[str, ...] | None = None
    subscribe_pattern: str | None = None
    assign: tuple[TopicPartition, ...] | None = None
    starting: OffsetsSpec | None = None
    ending: OffsetsSpec | None = None
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_s: float = 120.0
    topic: str | None = None
    group_id_prefix: str = "spark-kafka-source"
    timeout_s: float = 30.0

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> KafkaOptions:
        opts = {k.lower(): str(v) for k, v in options.items()}
        for name in _UNSUPPORTED:
            if name.lower() in opts:
                raise KafkaSourceError(f"option {name} is not supported by mockbroker.spark")
        bootstrap = opts.get("kafka.bootstrap.servers", "").strip()
        if not bootstrap:
            raise KafkaSourceError("option kafka.bootstrap.servers is required (for example "
                                   ".option('kafka.bootstrap.servers', mock.bootstrap_servers))")
        kafka = {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}
        for key, why in _FORBIDDEN_KAFKA.items():
            if key in kafka:
                raise KafkaSourceError(f"Kafka option 'kafka.{key}' is not supported: {why}")
        subscribe = assign = pattern = None
        if "subscribe" in opts:
            subscribe = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
            if not subscribe:
                raise KafkaSourceError("option subscribe names no topic (comma-separated list)")
        if "subscribepattern" in opts:
            pattern = opts["subscribepattern"]
            try:
                re.compile(pattern)
            except re.error as exc:
                raise KafkaSourceError(f"subscribePattern {pattern!r} is not a regular "
                                       f"expression: {exc}") from exc
        if "assign" in opts:
            assign = cls._parse_assign(opts["assign"])
        if sum(x is not None for x in (subscribe, pattern, assign)) > 1:
            raise KafkaSourceError("only one of the options assign, subscribe, subscribePattern "
                                   "may be given")
        poll_ms = _positive(opts, "kafkaConsumer.pollTimeoutMs")
        return cls(
            bootstrap=bootstrap, kafka=kafka, subscribe=subscribe, subscribe_pattern=pattern,
            assign=assign, starting=_offsets_spec(opts, "startingOffsets"),
            ending=_offsets_spec(opts, "endingOffsets"),
            max_offsets_per_trigger=_positive(opts, "maxOffsetsPerTrigger"),
            fail_on_data_loss=_flag(opts, "failOnDataLoss", True),
            include_headers=_flag(opts, "includeHeaders", False),
            poll_timeout_s=poll_ms / 1000 if poll_ms else 120.0,
            topic=opts.get("topic") or None,
            group_id_prefix=opts.get("groupidprefix") or "spark-kafka-source")

    @staticmethod
    def _parse_assign(text: str) -> tuple[TopicPartition, ...]:
        hint = 'expected JSON such as {"topicA":[0,1],"topicB":[2,4]}'
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise KafkaSourceError(f"assign: malformed JSON {text!r} ({exc.msg}); {hint}") from exc
        if not isinstance(obj, dict) or not all(
                isinstance(ps, list) and all(isinstance(p, int) and not isinstance(p, bool)
                                             and p >= 0 for p in ps) for ps in obj.values()):
            raise KafkaSourceError(f"assign: {text!r} is not a map of topics to partition "
                                   f"lists; {hint}")
        return tuple(sorted((t, p) for t, ps in obj.items() for p in ps))

    # -- checks by mode -----------------------------------------------------------------------

    def require_subscription(self) -> None:
        if self.subscribe is None and self.subscribe_pattern is None and self.assign is None:
            raise KafkaSourceError("one of the options subscribe, subscribePattern or assign "
                                   "is required to read (for example .option('subscribe', "
                                   "'events'))")

    def check_batch_offsets(self) -> None:
        """The JVM connector's batch rules: no latest start, no earliest end."""
        start, end = self.starting, self.ending
        if start == "latest" or (isinstance(start, dict) and LATEST in start.values()):
            raise KafkaSourceError("startingOffsets: latest (or -1) is not allowed for batch "
                                   "queries")
        if end == "earliest" or (isinstance(end, dict) and EARLIEST in end.values()):
            raise KafkaSourceError("endingOffsets: earliest (or -2) is not allowed for batch "
                                   "queries")

    def check_stream_offsets(self) -> None:
        if self.ending is not None:
            raise KafkaSourceError("endingOffsets is not valid in streaming queries")

    def check_write_columns(self, types: Mapping[str, str]) -> None:
        """The JVM connector's rules for a Kafka sink's columns, given {name: type string}
        (Spark's simpleString: "string", "binary", "int", ...)."""
        types = {name.lower(): kind for name, kind in types.items()}
        if "value" not in types:
            raise KafkaSourceError("Required attribute 'value' not found")
        rules = {"value": ("string", "binary"), "key": ("string", "binary"),
                 "topic": ("string",), "partition": ("int",), "headers": (HEADERS_TYPE,)}
        for column, allowed in rules.items():
            if column in types and types[column] not in allowed:
                raise KafkaSourceError(f"{column} attribute type must be "
                                       f"{' or '.join(allowed)}, not {types[column]}")
        if self.topic is None and "topic" not in types:
            raise KafkaSourceError("topic option required when no 'topic' attribute is present. "
                                   "Use the topic option for setting a topic.")

    # -- what needs the cluster's topic list --------------------------------------------------

    def resolve_partitions(self, topics: Mapping[str, int]) -> list[TopicPartition]:
        """The subscribed partitions, given the cluster's {topic: partition count}."""
        if self.assign is not None:
            for topic, partition in self.assign:
                if partition >= topics.get(topic, 0):
                    raise KafkaSourceError(
                        f"assign: unknown topic or partition {topic}-{partition} at "
                        f"kafka.bootstrap.servers={self.bootstrap}")
            return list(self.assign)
        if self.subscribe is not None:
            missing = [t for t in self.subscribe if t not in topics]
            if missing:
                raise KafkaSourceError(
                    f"subscribe: unknown topic(s) {', '.join(missing)} at kafka.bootstrap."
                    f"servers={self.bootstrap} (existing: {', '.join(sorted(topics)) or 'none'})")
            names: Sequence[str] = self.subscribe
        else:
            assert self.subscribe_pattern is not None, "require_subscription() first"
            names = sorted(t for t in topics if re.fullmatch(self.subscribe_pattern, t))
        return [(t, p) for t in names for p in range(topics[t])]

    def offsets_for(self, option: str, tps: Sequence[TopicPartition], default: int) -> Offsets:
        """startingOffsets / endingOffsets for exactly `tps` (-2 / -1 still unresolved); a JSON
        spec must name every subscribed partition and nothing else, as in the JVM connector."""
        spec = self.starting if option == "startingOffsets" else self.ending
        if spec is None:
            return dict.fromkeys(tps, default)
        if isinstance(spec, str):
            return dict.fromkeys(tps, EARLIEST if spec == "earliest" else LATEST)
        unknown = sorted(set(spec) - set(tps))
        missing = sorted(set(tps) - set(spec))
        if unknown or missing:
            parts = []
            if unknown:
                parts.append("names partitions not subscribed or not existing: " +
                             ", ".join(f"{t}-{p}" for t, p in unknown))
            if missing:
                parts.append("does not specify " + ", ".join(f"{t}-{p}" for t, p in missing))
            raise KafkaSourceError(f"{option} {json.dumps(to_json_offsets(spec))} "
                                   f"{'; '.join(parts)} (specify all TopicPartitions)")
        return {tp: spec[tp] for tp in tps}

    # -- clients ------------------------------------------------------------------------------

    @property
    def read_committed(self) -> bool:
        return self.kafka.get("isolation.level", "").lower() == "read_committed"

    def client_config(self, role: str) -> dict[str, Any]:
        """confluent-kafka settings for a "consumer", "producer" or "admin" client: the kafka.*
        options, less those librdkafka would warn about for that role."""
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap,
                                "client.id": f"mockbroker-spark-{role}",
                                "log_level": 4}  # warnings and errors only, in Spark's logs
        for key, value in self.kafka.items():
            if role != "consumer" and (key in _CONSUMER_ONLY or key.startswith("fetch.")):
                continue
            if role != "producer" and key in _PRODUCER_ONLY:
                continue
            conf[key] = value
        return conf


_CONSUMER_ONLY = {"isolation.level", "group.instance.id", "session.timeout.ms",
                  "heartbeat.interval.ms", "max.poll.interval.ms", "check.crcs",
                  "max.partition.fetch.bytes", "partition.assignment.strategy"}
_PRODUCER_ONLY = {"acks", "request.required.acks", "enable.idempotence", "linger.ms",
                  "batch.size", "batch.num.messages", "compression.type", "compression.codec",
                  "retries", "message.send.max.retries", "partitioner", "transactional.id",
                  "queue.buffering.max.messages", "queue.buffering.max.kbytes",
                  "delivery.timeout.ms", "message.timeout.ms", "max.in.flight.requests.per.connection"}


# -- Java ----------------------------------------------------------------------------------------

class JavaMissingError(RuntimeError):
    """No Java 17+ runtime: Spark's driver is a JVM."""


def check_java(minimum: int = 17) -> int:
    """The major version of the Java that Spark will use; JavaMissingError if absent or old."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    hint = ("PySpark 4 needs a Java 17+ runtime: on Debian/Ubuntu `apt-get install -y "
            "openjdk-17-jre-headless` (or default-jre-headless); `make test` installs it")
    if not java or not os.path.exists(java):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no `java` on PATH"
        raise JavaMissingError(f"{where}. {hint}")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaMissingError(f"cannot run {java} -version: {exc}. {hint}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        raise JavaMissingError(f"cannot parse `{java} -version`: {out.stderr.strip()!r}. {hint}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_392" is Java 8
        major = int(match.group(2))
    if major < minimum:
        raise JavaMissingError(f"{java} is Java {major}, below {minimum}. {hint}")
    return major
