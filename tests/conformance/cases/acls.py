"""CreateAcls, DescribeAcls and DeleteAcls: bindings created, found by filters and deleted;
invalid bindings and filters; alice's denials. Each case's bindings name a principal of its
own (`User:<case name>`), so no case sees or grants another's."""

from __future__ import annotations

from typing import Any

from tests.conformance.cases.admin_support import (
    ALLOW,
    CLUSTER,
    DENY,
    GROUP,
    LITERAL,
    OP_ALL,
    OP_DESCRIBE,
    OP_READ,
    OP_WRITE,
    PREFIXED,
    TOPIC,
    grant,
    plain,
)
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases

DESCRIBE_ACLS = 29
CREATE_ACLS = 30
DELETE_ACLS = 31
ANY = 1
MATCH = 2


async def acl_call(s: Session, api_key: int, body: dict[str, Any], *, version: int = 3,
                   user: str | None = None, label: str | None = None) -> None:
    """A DescribeAcls / DeleteAcls call recorded with its bindings in a canonical order:
    Kafka lists them in its authorizer's internal order, which varies from run to run."""
    answer = await s.call(api_key, version, body, user=user, record=False)
    if answer is None:
        s.observe(label or f"{api_key}v{version}", {"closed": True})
        return
    result = plain(answer)
    for resource in result.get("resources") or []:
        resource["acls"].sort(key=_acl_key)
    if "resources" in result:
        result["resources"].sort(key=lambda r: (r["resource_type"], r["resource_name"],
                                                r["pattern_type"]))
    for filtered in result.get("filter_results") or []:
        filtered["matching_acls"].sort(key=lambda a: (a["resource_type"], a["resource_name"],
                                                      a["pattern_type"], *_acl_key(a)))
    s.observe(label or f"{api_key}v{version}", result)


def _acl_key(acl: dict[str, Any]) -> tuple[Any, ...]:
    return (acl["principal"], acl["host"], acl["operation"], acl["permission_type"])


def binding(resource_type: int, name: str, principal: str, operation: int = OP_READ, *,
            pattern: int = LITERAL, permission: int = ALLOW, host: str = "*") -> dict[str, Any]:
    return {"resource_type": resource_type, "resource_name": name,
            "resource_pattern_type": pattern, "principal": principal, "host": host,
            "operation": operation, "permission_type": permission}


def acl_filter(principal: str | None, *, resource_type: int = ANY, name: str | None = None,
               pattern: int = ANY, operation: int = ANY, permission: int = ANY,
               host: str | None = None) -> dict[str, Any]:
    return {"resource_type_filter": resource_type, "resource_name_filter": name,
            "pattern_type_filter": pattern, "principal_filter": principal, "host_filter": host,
            "operation": operation, "permission_type": permission}


def delete_filter(principal: str | None, **kwargs: Any) -> dict[str, Any]:
    f = acl_filter(principal, **kwargs)
    return {"resource_type_filter": f["resource_type_filter"],
            "resource_name_filter": f["resource_name_filter"],
            "pattern_type_filter": f["pattern_type_filter"],
            "principal_filter": f["principal_filter"], "host_filter": f["host_filter"],
            "operation": f["operation"], "permission_type": f["permission_type"]}


def principal(s: Session) -> str:
    return f"User:{s.name()}"


@cases("acls/create-describe-delete", [1, 2, 3], api=CREATE_ACLS)
async def create_describe_delete(s: Session, version: int) -> None:
    who = principal(s)
    topic = s.name("t")
    await s.call(CREATE_ACLS, version, {"creations": [
        binding(TOPIC, topic, who, OP_READ), binding(GROUP, topic, who, OP_DESCRIBE,
                                                     permission=DENY)]})
    await grant(s, GROUP, topic, OP_DESCRIBE, principal=who, permission=DENY)
    await acl_call(s, DESCRIBE_ACLS, acl_filter(who), version=version, label="described")
    await acl_call(s, DELETE_ACLS, {"filters": [delete_filter(who, resource_type=TOPIC)]},
                   version=version)
    await acl_call(s, DESCRIBE_ACLS, acl_filter(who), version=version, label="after delete")


@cases("acls/create-invalid", ["any-type", "match-pattern", "any-operation",
                               "any-permission", "bad-principal", "cluster-name",
                               "unknown-operation", "empty-name"], api=CREATE_ACLS)
async def create_invalid(s: Session, kind: str) -> None:
    who = principal(s)
    topic = s.name()
    invalid = {
        "any-type": binding(ANY, topic, who),
        "match-pattern": binding(TOPIC, topic, who, pattern=MATCH),
        "any-operation": binding(TOPIC, topic, who, ANY),
        "any-permission": binding(TOPIC, topic, who, permission=ANY),
        "bad-principal": binding(TOPIC, topic, "alice"),
        "cluster-name": binding(CLUSTER, "not-kafka-cluster", who, OP_DESCRIBE),
        "unknown-operation": binding(TOPIC, topic, who, 77),
        "empty-name": binding(TOPIC, "", who),
    }[kind]
    await s.call(CREATE_ACLS, 3, {"creations": [invalid, binding(TOPIC, topic, who, OP_WRITE)]})


@case("acls/describe-pattern-filters", api=DESCRIBE_ACLS)
async def describe_pattern_filters(s: Session) -> None:
    """A literal and a prefixed binding; filters by LITERAL, PREFIXED, MATCH and ANY."""
    who = principal(s)
    topic = s.name("topic")
    await s.call(CREATE_ACLS, 3, {"creations": [
        binding(TOPIC, topic, who, OP_READ), binding(TOPIC, s.name(), who, OP_WRITE,
                                                     pattern=PREFIXED)]}, record=False)
    await grant(s, TOPIC, s.name(), OP_WRITE, pattern=PREFIXED, principal=who)
    await grant(s, TOPIC, topic, OP_READ, principal=who)
    for label, pattern in (("literal", LITERAL), ("prefixed", PREFIXED), ("match", MATCH),
                           ("any", ANY)):
        await acl_call(s, DESCRIBE_ACLS, acl_filter(who, resource_type=TOPIC, name=topic,
                                                    pattern=pattern), label=label)
    await acl_call(s, DESCRIBE_ACLS, acl_filter(who, operation=OP_WRITE), label="by operation")
    await acl_call(s, DESCRIBE_ACLS, acl_filter(who, host="10.0.0.1"), label="other host")


@cases("acls/describe-nothing", [1, 3], api=DESCRIBE_ACLS)
async def describe_nothing(s: Session, version: int) -> None:
    await s.call(DESCRIBE_ACLS, version, acl_filter(principal(s)))


@cases("acls/describe-invalid-filter", ["unknown-type", "unknown-pattern"],
       api=DESCRIBE_ACLS)
async def describe_invalid_filter(s: Session, kind: str) -> None:
    f = acl_filter(principal(s))
    if kind == "unknown-type":
        f["resource_type_filter"] = 0
    else:
        f["pattern_type_filter"] = 0
    await s.call(DESCRIBE_ACLS, 3, f)


@case("acls/delete-no-match", api=DELETE_ACLS)
async def delete_no_match(s: Session) -> None:
    await s.call(DELETE_ACLS, 3, {"filters": [delete_filter(principal(s)),
                                             delete_filter(principal(s), resource_type=TOPIC,
                                                           name="x", pattern=LITERAL)]})


@case("acls/delete-prefixed", api=DELETE_ACLS)
async def delete_prefixed(s: Session) -> None:
    """A MATCH filter deletes the literal and the prefixed binding that match a name."""
    who = principal(s)
    topic = s.name("topic")
    await s.call(CREATE_ACLS, 3, {"creations": [
        binding(TOPIC, topic, who, OP_ALL), binding(TOPIC, s.name(), who, OP_READ,
                                                    pattern=PREFIXED)]}, record=False)
    await grant(s, TOPIC, s.name(), OP_READ, pattern=PREFIXED, principal=who)
    await grant(s, TOPIC, topic, OP_ALL, principal=who)
    await acl_call(s, DELETE_ACLS, {"filters": [delete_filter(
        who, resource_type=TOPIC, name=topic, pattern=MATCH)]})


@case("acls/denied", api=CREATE_ACLS)
async def denied(s: Session) -> None:
    """alice may not create, describe or delete ACLs: CLUSTER_AUTHORIZATION_FAILED."""
    who = principal(s)
    await s.call(CREATE_ACLS, 3, {"creations": [binding(TOPIC, s.name(), who)]}, user="alice")
    await s.call(DESCRIBE_ACLS, 3, acl_filter(who), user="alice", label="describe")
    await s.call(DELETE_ACLS, 3, {"filters": [delete_filter(who)]}, user="alice",
                 label="delete")
