"""CreateAcls, DescribeAcls and DeleteAcls (KIP-140, prefixed patterns KIP-290).

As in KRaft, CreateAcls and DeleteAcls go through the controller (cluster.acl_control: one
atomic batch of AccessControlEntryRecords / RemoveAccessControlEntryRecords per request);
DescribeAcls answers from the receiving broker's own image, so a broker with paused
metadata describes the bindings it authorizes by.

Without an authorizer (Kafka without `authorizer.class.name`) all three answer
SECURITY_DISABLED, as Kafka does. A creation with an ANY or MATCH value, from which Kafka's
broker cannot build a binding, fails the whole CreateAcls request (UNKNOWN_SERVER_ERROR for
every creation); other invalid ones are refused one by one (INVALID_REQUEST). A DescribeAcls
or DeleteAcls filter with an UNKNOWN element is a request Kafka cannot parse: the connection
closes without an answer. Who may call them (DESCRIBE, ALTER on the cluster) is
the authorization table's concern (mockbroker.handlers.authorization).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.security.authorizer import (
    AclBinding,
    AclError,
    AclFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
    make_binding,
)
from mockbroker.handlers.context import CloseAfterRequest, RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.create_acls import CreateAclsRequest
    from kafka_protocol_codec.generated.delete_acls import DeleteAclsRequest
    from kafka_protocol_codec.generated.describe_acls import DescribeAclsRequest

SECURITY_DISABLED_MESSAGE = "No Authorizer is configured."
NONE_MESSAGE = ""  # CreateAcls and DescribeAcls successes carry Errors.NONE's message


def _pattern(body: Any, field: str, version: int) -> int:
    """v0 knows only LITERAL patterns."""
    return int(getattr(body, field)) if version >= 1 else int(PatternType.LITERAL)


def _filter(f: DescribeAclsRequest | DeleteAclsRequest.DeleteAclsFilter, version: int) -> AclFilter:
    """A wire filter; unknown enum values are refused as INVALID_REQUEST."""
    try:
        acl_filter = AclFilter(ResourceType(f.resource_type_filter), f.resource_name_filter,
                               PatternType(_pattern(f, "pattern_type_filter", version)),
                               f.principal_filter, f.host_filter, AclOperation(f.operation),
                               PermissionType(f.permission_type))
    except ValueError as exc:
        raise AclError(str(exc)) from None
    acl_filter.validate()
    return acl_filter


def _has_unknown_elements(f: DescribeAclsRequest | DeleteAclsRequest.DeleteAclsFilter,
                          version: int) -> bool:
    """A filter with an UNKNOWN (or unrecognised) type, pattern, operation or permission:
    Kafka's DescribeAclsRequest / DeleteAclsRequest refuse to parse it and the broker closes
    the connection."""
    def unknown(enum: Any, code: int) -> bool:
        return code not in enum._value2member_map_ or code == 0

    return (unknown(ResourceType, f.resource_type_filter)
            or unknown(PatternType, _pattern(f, "pattern_type_filter", version))
            or unknown(AclOperation, f.operation)
            or unknown(PermissionType, f.permission_type))


def _described(acl: AclBinding) -> dict[str, Any]:
    return {"principal": acl.principal, "host": acl.host, "operation": int(acl.operation),
            "permission_type": int(acl.permission)}


def _unbindable(c: CreateAclsRequest.AclCreation, version: int) -> bool:
    """A creation Kafka's broker cannot even build a binding from (ResourcePattern and
    AccessControlEntry refuse ANY / MATCH): it fails the whole request."""
    return (c.resource_type == ResourceType.ANY
            or _pattern(c, "resource_pattern_type", version) in (PatternType.ANY,
                                                                 PatternType.MATCH)
            or c.operation == AclOperation.ANY or c.permission_type == PermissionType.ANY)


@handler(30, 0, 3)
def handle_create_acls(req: CreateAclsRequest, ctx: RequestContext) -> dict[str, Any]:
    authorizer = ctx.cluster.acls
    if authorizer.enabled and any(_unbindable(c, ctx.api_version) for c in req.creations):
        return {"throttle_time_ms": 0, "results": [
            {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": None}
            for _ in req.creations]}
    results: list[dict[str, Any]] = []
    valid: list[AclBinding] = []
    for c in req.creations:
        if not authorizer.enabled:
            results.append({"error_code": ErrorCode.SECURITY_DISABLED,
                            "error_message": SECURITY_DISABLED_MESSAGE})
            continue
        try:
            valid.append(make_binding(c.resource_type, c.resource_name,
                                      _pattern(c, "resource_pattern_type", ctx.api_version),
                                      c.principal, c.host, c.operation, c.permission_type))
        except AclError as exc:
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc)})
            continue
        results.append({"error_code": ErrorCode.NONE, "error_message": NONE_MESSAGE})
    ctx.cluster.acl_control.create(valid)
    return {"throttle_time_ms": 0, "results": results}


@handler(29, 0, 3)
def handle_describe_acls(req: DescribeAclsRequest, ctx: RequestContext) -> dict[str, Any]:
    authorizer = ctx.cluster.acls
    if not authorizer.enabled:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.SECURITY_DISABLED,
                "error_message": SECURITY_DISABLED_MESSAGE, "resources": []}
    if _has_unknown_elements(req, ctx.api_version):
        raise CloseAfterRequest("DescribeAclsRequest contains UNKNOWN elements")
    try:
        acl_filter = _filter(req, ctx.api_version)
    except AclError as exc:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST,
                "error_message": str(exc), "resources": []}
    resources: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in ctx.image.acls.describe(acl_filter):
        key = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
        resources.setdefault(key, []).append(_described(acl))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": NONE_MESSAGE,
            "resources": [{"resource_type": rtype, "resource_name": name,
                           "pattern_type": ptype, "acls": acls}
                          for (rtype, name, ptype), acls in resources.items()]}


@handler(31, 0, 3)
def handle_delete_acls(req: DeleteAclsRequest, ctx: RequestContext) -> dict[str, Any]:
    authorizer = ctx.cluster.acls
    if any(_has_unknown_elements(f, ctx.api_version) for f in req.filters):
        raise CloseAfterRequest("Filters contain UNKNOWN elements")
    results: list[dict[str, Any]] = []
    valid: list[tuple[int, AclFilter]] = []  # (place in results, filter)
    for f in req.filters:
        if not authorizer.enabled:
            results.append({"error_code": ErrorCode.SECURITY_DISABLED,
                            "error_message": SECURITY_DISABLED_MESSAGE, "matching_acls": []})
            continue
        try:
            valid.append((len(results), _filter(f, ctx.api_version)))
        except AclError as exc:
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc),
                            "matching_acls": []})
            continue
        results.append({"error_code": ErrorCode.NONE, "error_message": None,
                        "matching_acls": []})
    matched = ctx.cluster.acl_control.delete([acl_filter for _, acl_filter in valid])
    for (place, _), gone in zip(valid, matched, strict=True):
        results[place]["matching_acls"] = [
            {"error_code": ErrorCode.NONE, "error_message": None,
             "resource_type": int(a.resource_type), "resource_name": a.resource_name,
             "pattern_type": int(a.pattern_type), **_described(a)} for a in gone]
    return {"throttle_time_ms": 0, "filter_results": results}
