"""The control API's ACL verbs: create-acl, delete-acls, acls.

Theory of operation: the bindings live in the metadata log; these verbs go through the
controller as CreateAcls/DeleteAcls do (mockbroker.cluster.security.acl_control), so a binding added
here applies to the next request on every broker whose metadata is not paused. `acls`
shows the bindings at the log end (the controller's image). Values are
Kafka's names (resource_type "TOPIC", pattern_type "PREFIXED", operation "READ",
permission_type "ALLOW"), case-insensitive. Unlike CreateAcls, these verbs work with the
authorizer off too (the bindings are kept and apply once it is on: `set-authorizer`).
`reset` drops every binding and brings back the switch and super users the cluster
started with.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any, TypeVar

from mockbroker.cluster.security.authorizer import (
    WILDCARD,
    AclError,
    AclFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
    make_binding,
    parse_super_users,
)
from mockbroker.control.errors import ControlError

if TYPE_CHECKING:
    from mockbroker.cluster import Cluster

E = TypeVar("E", bound=IntEnum)


def _enum(kind: type[E], value: Any, field: str) -> E:
    if isinstance(value, str) and value.upper() in kind.__members__:
        return kind[value.upper()]
    raise ControlError(400, f"{field} must be one of {', '.join(kind.__members__)}, "
                            f"got {value!r}")


class AclVerbs:
    cluster: Cluster

    async def create_acl(self, resource_type: str, resource_name: str, principal: str,
                         operation: str, permission_type: str = "ALLOW",
                         pattern_type: str = "LITERAL", host: str = WILDCARD) -> dict[str, Any]:
        """Add one ACL binding (Kafka's kafka-acls --add)."""
        try:
            binding = make_binding(
                _enum(ResourceType, resource_type, "resource_type"), resource_name,
                _enum(PatternType, pattern_type, "pattern_type"), principal, host,
                _enum(AclOperation, operation, "operation"),
                _enum(PermissionType, permission_type, "permission_type"))
        except AclError as exc:
            raise ControlError(400, str(exc)) from None
        added = self.cluster.acl_control.create([binding])[0]
        return {"acl": binding.to_json(), "added": added}

    async def delete_acls(self, resource_type: str = "ANY", resource_name: str | None = None,
                          pattern_type: str = "ANY", principal: str | None = None,
                          host: str | None = None, operation: str = "ANY",
                          permission_type: str = "ANY") -> dict[str, Any]:
        """Remove the bindings matching a filter (ANY / omitted match anything; pattern_type
        MATCH selects those that apply to the named resource)."""
        acl_filter = AclFilter(_enum(ResourceType, resource_type, "resource_type"),
                               resource_name, _enum(PatternType, pattern_type, "pattern_type"),
                               principal, host, _enum(AclOperation, operation, "operation"),
                               _enum(PermissionType, permission_type, "permission_type"))
        deleted = self.cluster.acl_control.delete([acl_filter])[0]
        return {"deleted": [a.to_json() for a in deleted]}

    async def acls(self) -> dict[str, Any]:
        """The authorizer: on or off, super users, every binding, decisions so far."""
        return self.cluster.acls.to_json(self.cluster.image.acls)

    async def set_authorizer(self, enabled: bool, super_users: str | list[str] | None = None,
                             allow_everyone_if_no_acl_found: bool | None = None
                             ) -> dict[str, Any]:
        """Turn authorization on or off at run time (and set super users)."""
        if not isinstance(enabled, bool):
            raise ControlError(400, f"enabled must be true or false, got {enabled!r}")
        authorizer = self.cluster.acls
        authorizer.enabled = enabled
        if super_users is not None:
            try:
                authorizer.super_users = parse_super_users(super_users)
            except ValueError as exc:
                raise ControlError(400, str(exc)) from None
        if allow_everyone_if_no_acl_found is not None:
            authorizer.allow_everyone_if_no_acl_found = bool(allow_everyone_if_no_acl_found)
        return authorizer.to_json(self.cluster.image.acls)


VERBS = {"create-acl": "create_acl", "delete-acls": "delete_acls", "acls": "acls",
         "set-authorizer": "set_authorizer"}
