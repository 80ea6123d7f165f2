"""Responses made comparable: what differs between two correct clusters is replaced by a
stable stand-in, and two normalised transcripts are compared field by field.

What two correct clusters may legitimately disagree on, and what it becomes:
- node ids (mockbroker numbers brokers from 0, the real node is 1): `node0`, `node1`, ... by
  the target's own broker order; -1 stays -1.
- hosts and ports of brokers: `host`, `port` (the listeners differ by construction).
- the cluster id: `cluster`.
- UUIDs (topic ids, directory ids, ...): `uuid1`, `uuid2`, ... in order of first appearance
  in the case's transcript; the zero UUID stays zero.
- producer ids, member ids, fetch session ids, SCRAM salts: numbered in order of first
  appearance within their own kind (so "the same id again" still has to agree).
- timestamps and times: `time` (-1 stays -1); throttle times: whether the broker throttled
  (`throttled` / 0).
- the finalized features' epoch (ApiVersions v3+): the metadata offset of the last feature
  record, which depends on each cluster's history: `epoch` (-1, none, stays -1).
- fields the response's version does not carry (the decoder fills them with defaults, and
  a default 0 would read as a node id): dropped (`at_version`).
- member ids, also where a JoinGroup response names the `leader`: numbered like producer
  ids below.
- error messages: whether there is one (`message` / None); the texts are free prose.
- record batches (Fetch, ShareFetch): decoded to (offset, key, value, headers, control,
  transactional) per record; CRCs, timestamps and producer ids inside are what the rest of
  the response already covers.
Everything else is compared exactly.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import decode_batch
from kafka_protocol_codec.schema import F, in_range

ZERO_UUID = uuid.UUID(int=0)
NODE_FIELDS = frozenset({
    "node_id", "leader_id", "controller_id", "broker_id", "coordinator_id",
    "preferred_read_replica", "replica_id", "leader", "voter_id", "current_leader",
    "assigned_broker_id", "broker",
})
NODE_LIST_FIELDS = frozenset({
    "replica_nodes", "isr_nodes", "offline_replicas", "replicas", "isr", "brokers_ids",
    "eligible_leader_replicas", "last_known_elr", "adding_replicas", "removing_replicas",
    "target_replicas", "partition_index_replicas",
})
COUNTED_FIELDS = {
    "producer_id": "producer", "member_id": "member", "session_id": "session", "salt": "salt",
}
TIME_SUFFIXES = ("timestamp", "_time_ms", "_time", "time_ms", "_timestamp_ms",
                 "_expiry_timestamp_ms", "timestamp_ms")
THROTTLE = "throttle_time_ms"
FEATURES_EPOCH = "finalized_features_epoch"
RECORD_FIELDS = frozenset({"records"})


@dataclass
class Normalizer:
    """One target's transcript normaliser: remembers the stand-ins it handed out."""

    node_ids: Sequence[int]
    counters: dict[str, dict[Any, str]] = field(default_factory=dict)

    def _counted(self, kind: str, value: Any) -> str:
        table = self.counters.setdefault(kind, {})
        if value not in table:
            table[value] = f"{kind}{len(table) + 1}"
        return table[value]

    def node(self, value: Any) -> Any:
        if isinstance(value, int) and value in self.node_ids:
            return f"node{list(self.node_ids).index(value)}"
        return value

    def value(self, name: str, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {key: self.value(str(key), item) for key, item in value.items()}
        if isinstance(value, uuid.UUID):
            return value if value == ZERO_UUID else self._counted("uuid", value)
        if name in RECORD_FIELDS and isinstance(value, (bytes, bytearray, memoryview)):
            return records(bytes(value))
        if isinstance(value, (list, tuple)):
            if name in NODE_LIST_FIELDS:
                return [self.node(item) for item in value]
            return [self.value(name, item) for item in value]
        if name == THROTTLE:
            return "throttled" if value else 0
        if name == "leader" and isinstance(value, str) and value:
            return self._counted("member", value)
        if name in NODE_FIELDS:
            return self.node(value)
        if name == "host":
            return "host"
        if name == "port" and isinstance(value, int):
            return "port"
        if name == "cluster_id" and value is not None:
            return "cluster"
        if name.endswith("error_message") or name == "error_message":
            return None if value is None else "message"
        if name in COUNTED_FIELDS and value not in (-1, 0, None, "", b""):
            return self._counted(COUNTED_FIELDS[name], value)
        if name == FEATURES_EPOCH and isinstance(value, int):
            return value if value < 0 else "epoch"
        if isinstance(value, int) and name.endswith(TIME_SUFFIXES) and name != THROTTLE:
            return value if value < 0 else "time"
        return value


def at_version(fields: Sequence[F], version: int, value: Any) -> Any:
    """`value` (a decoded struct, or a list of them) without the fields `version` lacks."""
    if isinstance(value, (list, tuple)):
        return [at_version(fields, version, item) for item in value]
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    for spec in fields:
        if spec.name in value and in_range(version, spec.versions):
            item = value[spec.name]
            out[spec.name] = at_version(spec.fields, version, item) if spec.fields else item
    return out


def records(data: bytes) -> list[Any]:
    """The records of a fetched record set, one tuple per record (or a control marker)."""
    out: list[Any] = []
    for view in split_batches(data, allow_partial=True):
        batch = decode_batch(view, check_crc=True)
        for rec in batch.records:
            headers = [(h.key, h.value) for h in rec.headers]
            out.append({"offset": rec.offset, "key": rec.key,
                        "value": None if batch.is_control else rec.value,
                        "headers": headers, "control": batch.is_control,
                        "transactional": batch.is_transactional})
    return out


def differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Every path where two normalised values differ: "path: mockbroker=X kafka=Y"."""
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        out: list[str] = []
        for key in list(ours) + [k for k in theirs if k not in ours]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in ours:
                out.append(f"{sub}: mockbroker=<absent> kafka={_show(theirs[key])}")
            elif key not in theirs:
                out.append(f"{sub}: mockbroker={_show(ours[key])} kafka=<absent>")
            else:
                out += differences(ours[key], theirs[key], sub)
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{path}: mockbroker has {len(ours)} items, kafka {len(theirs)}: "
                    f"mockbroker={_show(ours)} kafka={_show(theirs)}"]
        out = []
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            out += differences(a, b, f"{path}[{index}]")
        return out
    if ours != theirs:
        return [f"{path}: mockbroker={_show(ours)} kafka={_show(theirs)}"]
    return []


def _show(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


__all__ = ["Normalizer", "at_version", "differences", "records"]
