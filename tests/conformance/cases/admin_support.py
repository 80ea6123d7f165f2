"""Helpers shared by the admin case modules (no cases here): requests whose answers name the
broker by its id as a string, and granting alice ACLs (and revoking them again).

A BROKER or BROKER_LOGGER config resource is named by the broker id ("0" on mockbroker, "1"
on the real node); `call_named_node` records such an answer with that name replaced by the
node's stand-in (`node0`), as the normaliser does for id fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.conformance.harness import Session

CREATE_ACLS = 30
DESCRIBE_ACLS = 29
DELETE_ACLS = 31

# ACL resource types, pattern types, operations and permissions (Kafka's codes)
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
LITERAL, PREFIXED = 3, 4
ALLOW, DENY = 3, 2
OP_ALL, OP_READ, OP_WRITE, OP_CREATE, OP_DELETE, OP_ALTER, OP_DESCRIBE = 2, 3, 4, 5, 6, 7, 8
OP_CLUSTER_ACTION, OP_DESCRIBE_CONFIGS, OP_ALTER_CONFIGS = 9, 10, 11

# config resource types
CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER = 2, 4, 8
CONFIG_CLIENT_METRICS, CONFIG_GROUP = 16, 32


def node_name(s: Session) -> str:
    """The broker's id as a config resource names it."""
    return str(s.target.node_ids[0])


def plain(value: Any) -> Any:
    """A decoded response as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def rename_node(s: Session, value: Any) -> Any:
    """`value` with every `resource_name` equal to the broker's id replaced by `node0`."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if key == "resource_name" and item == node_name(s):
                out[key] = "node0"
            else:
                out[key] = rename_node(s, item)
        return out
    if isinstance(value, list):
        return [rename_node(s, v) for v in value]
    return value


# Topic configs left out of whole-list comparisons: KIP-1030's bounds and defaults (another
# engineer is on them) and min.insync.replicas, whose source differs for a reason of its own
# (configs.py's configs/elr-cluster-min-isr case shows it).
UNCOMPARED_TOPIC_CONFIGS = frozenset({
    "segment.bytes", "message.timestamp.after.max.ms", "min.insync.replicas"})


def without_uncompared(entries: list[Any]) -> list[Any]:
    return [e for e in entries if e["name"] not in UNCOMPARED_TOPIC_CONFIGS]


def configs_by_name(result: Any) -> Any:
    """A DescribeConfigs answer with each resource's entries sorted by name: Kafka lists
    them in the order of its hash map of the resource's configs, an artefact no client
    relies on (Admin clients key them by name)."""
    for resource in result.get("results", []):
        resource["configs"] = sorted(resource["configs"], key=lambda c: c["name"])
    return result


async def call_named_node(s: Session, api_key: int, version: int, body: Mapping[str, Any],
                          *, user: str | None = None, label: str | None = None) -> Any:
    """`s.call` recorded with the broker's id in resource names replaced by `node0`."""
    answer = await s.call(api_key, version, body, user=user, record=False)
    s.observe(label or f"{api_key}v{version}",
              {"closed": True} if answer is None else
              configs_by_name(rename_node(s, plain(answer))))
    return answer


async def grant(s: Session, resource_type: int, name: str, operation: int, *,
                pattern: int = LITERAL, principal: str = "User:alice",
                permission: int = ALLOW) -> None:
    """An ACL for alice (unrecorded), then wait until DescribeAcls lists it. A case that
    grants alice something revokes it before it ends (`revoke`): later cases (and other
    modules' cases, such as Metadata's topic listing as alice) must see her without it."""
    created = await s.call(CREATE_ACLS, 3, {"creations": [{
        "resource_type": resource_type, "resource_name": name,
        "resource_pattern_type": pattern, "principal": principal, "host": "*",
        "operation": operation, "permission_type": permission}]}, record=False)
    assert created is not None and created.results[0].error_code == 0, created
    await _until_listed(s, _binding_filter(resource_type, name, pattern, principal,
                                           operation, permission), True)


async def revoke(s: Session, resource_type: int, name: str, operation: int, *,
                 pattern: int = LITERAL, principal: str = "User:alice",
                 permission: int = ALLOW) -> None:
    """Delete an ACL `grant` created (unrecorded), then wait until it is gone."""
    binding = _binding_filter(resource_type, name, pattern, principal, operation, permission)
    deleted = await s.call(DELETE_ACLS, 3, {"filters": [binding]}, record=False)
    assert deleted is not None and deleted.filter_results[0].error_code == 0, deleted
    await _until_listed(s, binding, False)


def _binding_filter(resource_type: int, name: str, pattern: int, principal: str,
                    operation: int, permission: int) -> dict[str, Any]:
    return {"resource_type_filter": resource_type, "resource_name_filter": name,
            "pattern_type_filter": pattern, "principal_filter": principal,
            "host_filter": None, "operation": operation, "permission_type": permission}


async def _until_listed(s: Session, binding: dict[str, Any], present: bool) -> None:
    async def settled() -> bool:
        found = await s.call(DESCRIBE_ACLS, 3, binding, record=False)
        return found is not None and bool(found.resources) == present

    await s.until(settled, what="the ACL " + ("listed" if present else "gone"))
