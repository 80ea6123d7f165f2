"""Kafka broker properties for the CLI: server.properties files, KAFKA_* variables, overrides.

Theory of operation: three sources give static broker properties (key = value as in Kafka's
server.properties), merged in the order a Kafka container applies them, later ones winning:
`--server-properties FILE` (Java properties syntax), then KAFKA_* environment variables (the
Apache and Confluent images' mapping), then `--override key=value` (kafka-server-start's
flag; also MOCKBROKER_OVERRIDE and the TOML file's `override` table). The result goes to
ClusterConfig.broker_properties; the cluster validates and applies it
(cluster/configs/broker_properties.py).

Environment mapping, as the images' start-up scripts do it: KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS
is group.min.session.timeout.ms: the prefix is dropped, the rest lower-cased, then `___`
becomes `-`, `__` becomes `_` and `_` becomes `.`. The variables the images use for the JVM
and logging (KAFKA_HEAP_OPTS, KAFKA_OPTS, KAFKA_LOG4J_OPTS, ...) are not properties.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

ENV_PREFIX = "KAFKA_"
# the images' own variables, never broker properties (nor are the codec's switches,
# KAFKA_PROTOCOL_CODEC_*: NOT_PROPERTY_PREFIXES)
NOT_PROPERTIES = frozenset({
    "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL",
    "KAFKA_LOG4J_LOGGERS", "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME",
    "KAFKA_JMX_PORT", "KAFKA_HOME", "KAFKA_DEBUG", "KAFKA_LOG_DIR", "KAFKA_CLUSTER_ID",
})
NOT_PROPERTY_PREFIXES = ("KAFKA_PROTOCOL_CODEC_",)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """A properties source that cannot be read; the message names where."""


def env_to_property(variable: str) -> str:
    """KAFKA_FOO_BAR___BAZ__QUX -> foo.bar-baz_qux (the images' mapping)."""
    dotted = variable[len(ENV_PREFIX):].lower().replace("_", ".")
    return dotted.replace("...", "-").replace("..", "_")


def env_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """Broker properties from KAFKA_* variables, in name order."""
    return {env_to_property(name): environ[name] for name in sorted(environ)
            if name.startswith(ENV_PREFIX) and name not in NOT_PROPERTIES
            and not name.startswith(NOT_PROPERTY_PREFIXES)
            and len(name) > len(ENV_PREFIX)}


def _logical_lines(text: str) -> Iterable[str]:
    """Java properties logical lines: comments and blanks dropped, continuations joined."""
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if pending else raw
        if not pending and (not line.strip() or line.lstrip(" \t\f")[:1] in ("#", "!")):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes: the line continues
            pending += line[:-1]
            continue
        yield (pending + line).lstrip(" \t\f")
        pending = ""
    if pending:
        yield pending.lstrip(" \t\f")


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Key/values of a Java properties text (java.util.Properties.load's rules: `=`, `:` or
    whitespace separate key and value; backslash escapes; `\\` line continuations)."""
    result = {}
    for line in _logical_lines(text):
        i = 0
        while i < len(line):
            if line[i] == "\\":
                i += 2
                continue
            if line[i] in "=: \t\f":
                break
            i += 1
        key, rest = line[:i], line[i:]
        rest = rest.lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        result[_unescape(key)] = _unescape(rest)
    return result


def read_properties_file(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="latin-1") as f:  # Properties.load(InputStream): ISO 8859-1
            return parse_properties(f.read())
    except OSError as exc:
        raise PropertiesError(f"server properties {path}: cannot read: "
                              f"{exc.strerror or exc}") from None


def parse_override(text: str) -> tuple[str, str]:
    """"key=value" of --override (kafka-server-start's form)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected key=value, got {text!r}")
    return key.strip(), value


def merge(file: Mapping[str, str], environ: Mapping[str, str],
          overrides: Iterable[tuple[str, str]]) -> dict[str, str]:
    """File, then environment, then overrides; later sources win."""
    merged = dict(file)
    merged.update(env_properties(environ))
    merged.update(dict(overrides))
    return merged
