"""ACLs and the authorizer, with the semantics of Kafka's StandardAuthorizer (KIP-801).

Theory of operation: an ACL binding is a resource pattern (resource type, name, LITERAL or
PREFIXED) and an entry (principal `Type:name` or `User:*`, host or `*`, operation, ALLOW or
DENY). `Authorizer.authorize` decides one action (principal, client host, operation,
resource type, resource name) as Kafka does:

1. a super user (`super.users`) is allowed everything;
2. the bindings that apply are those whose pattern matches the resource (LITERAL: the same
   name or the wildcard `*`; PREFIXED: a prefix of the name) and whose principal and host
   match the request (or are the wildcards `User:*` and `*`);
3. a DENY for the operation (or ALL) wins over any ALLOW;
4. an ALLOW for the operation (or ALL, or one that implies it: READ, WRITE, DELETE and
   ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows;
5. if no binding at all (of any principal, host or operation) matches the resource, the
   answer is `allow.everyone.if.no.acl.found` (false by default); otherwise denied.

Filters (DescribeAcls, DeleteAcls) follow Kafka's AclBindingFilter: ANY matches any value,
a null name or principal or host matches any, pattern type MATCH selects the bindings that
would apply to the named resource (the literal name, the `*` wildcard, every prefix).

The bindings live in the metadata log, as in KRaft: the controller (acl_control.py) writes
each new binding as an AccessControlEntryRecord with a random Uuid id and removes one with a
RemoveAccessControlEntryRecord naming that id. Every metadata image keeps its bindings in an
`AclsImage` (Kafka's AclsImage, indexed for decisions as StandardAuthorizerData is), and a
broker decides by its own image's: a broker whose metadata is paused or delayed keeps
authorizing by the bindings it has applied, as a lagging Kafka broker's StandardAuthorizer
does. `Authorizer` holds what is broker configuration, not metadata (authorizer.class.name,
super.users, allow.everyone.if.no.acl.found) and counts its decisions; each decision takes
the AclsImage to decide by. Authorization is off unless enabled (Kafka without
`authorizer.class.name` has no authorizer, and every request is allowed).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


Op = AclOperation
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource's name
# Kafka's "authorized operations not requested" value (Integer.MIN_VALUE)
UNSET_OPERATIONS = -2147483648

# the operations each resource type has (Kafka's AclEntry.supportedOperations)
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER,
                         Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    # Kafka 4 groups have configs (KIP-848), hence DESCRIBE_CONFIGS and ALTER_CONFIGS
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS,
                         Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS,
                           Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}

# an ALLOW for the key also allows these
IMPLIED: dict[AclOperation, frozenset[AclOperation]] = {
    Op.DESCRIBE: frozenset({Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}),
    Op.DESCRIBE_CONFIGS: frozenset({Op.ALTER_CONFIGS}),
}


class AclError(ValueError):
    """An ACL binding or filter Kafka would refuse (INVALID_REQUEST)."""


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL as Kafka stores it: a resource pattern and an access control entry (ordered,
    so listings are stable)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType

    def applies_to(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this binding's pattern covers the resource."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name in (name, WILDCARD)
        return name.startswith(self.resource_name)

    def to_json(self) -> dict[str, str]:
        return {"resource_type": self.resource_type.name, "resource_name": self.resource_name,
                "pattern_type": self.pattern_type.name, "principal": self.principal,
                "host": self.host, "operation": self.operation.name,
                "permission_type": self.permission.name}


@dataclass(frozen=True)
class AclFilter:
    """Kafka's AclBindingFilter: None and ANY match anything."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.resource_name is not None:
            if self.pattern_type == PatternType.MATCH:
                if not acl.applies_to(acl.resource_type, self.resource_name):
                    return False
            elif self.resource_name != acl.resource_name:
                return False
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (AclOperation.ANY, acl.operation)
                and self.permission in (PermissionType.ANY, acl.permission))

    def validate(self) -> None:
        for value, kind in ((self.resource_type, "resource type"),
                            (self.pattern_type, "pattern type"),
                            (self.operation, "operation"), (self.permission, "permission type")):
            if value == 0:
                raise AclError(f"Unknown {kind} in the filter")


def _enum(kind: type[IntEnum], code: int, what: str) -> int:
    try:
        return kind(code)
    except ValueError:
        raise AclError(f"Unknown {what} {code}") from None


def make_binding(resource_type: int, name: str | None, pattern_type: int, principal: str | None,
                 host: str | None, operation: int, permission: int) -> AclBinding:
    """A binding from wire values, refused as Kafka's controller refuses a new ACL."""
    rtype = ResourceType(_enum(ResourceType, resource_type, "resource type"))
    ptype = PatternType(_enum(PatternType, pattern_type, "pattern type"))
    op = AclOperation(_enum(AclOperation, operation, "operation"))
    perm = PermissionType(_enum(PermissionType, permission, "permission type"))
    if rtype in (ResourceType.ANY, ResourceType.UNKNOWN):
        raise AclError(f"Invalid resourceType {rtype.name}")
    if ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise AclError(f"Invalid patternType {ptype.name}")
    if op in (AclOperation.ANY, AclOperation.UNKNOWN):
        raise AclError(f"Invalid operation {op.name}")
    if perm in (PermissionType.ANY, PermissionType.UNKNOWN):
        raise AclError(f"Invalid permissionType {perm.name}")
    if rtype == ResourceType.CLUSTER and name != CLUSTER_NAME:
        raise AclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not name:
        raise AclError("Resource name should not be empty")
    if not principal or ":" not in principal:
        raise AclError(f"Could not parse principal from `{principal}` (no colon is found "
                       "separating the principal type from the principal name)")
    if host is None:
        raise AclError("Invalid null host")
    return AclBinding(rtype, name, ptype, principal, host, op, perm)


def parse_super_users(text: str | Iterable[str]) -> frozenset[str]:
    """Kafka's `super.users`: principals separated by semicolons."""
    items = text.split(";") if isinstance(text, str) else list(text)
    users = frozenset(u.strip() for u in items if u.strip())
    for user in users:
        if ":" not in user:
            raise ValueError(f"super user {user!r} is not a principal (Type:name, "
                             "e.g. User:admin)")
    return users


# KRaft metadata record types of the ACL family (Kafka's metadata record schemas)
ACCESS_CONTROL_ENTRY_RECORD = 18
REMOVE_ACCESS_CONTROL_ENTRY_RECORD = 19
ACL_RECORD_TYPES = frozenset({ACCESS_CONTROL_ENTRY_RECORD, REMOVE_ACCESS_CONTROL_ENTRY_RECORD})

_IndexKey = tuple[ResourceType, PatternType, str]


def entry_record(acl_id: uuid.UUID, binding: AclBinding) -> dict[str, Any]:
    """The AccessControlEntryRecord that adds `binding` under `acl_id`."""
    return {"id": acl_id, "resource_type": int(binding.resource_type),
            "resource_name": binding.resource_name, "pattern_type": int(binding.pattern_type),
            "principal": binding.principal, "host": binding.host,
            "operation": int(binding.operation), "permission_type": int(binding.permission)}


class AclsImage:
    """The ACL bindings of one metadata image, by id, indexed by (resource type, pattern
    type, name) so a decision looks up the resource's name, the wildcard and every prefix of
    the name instead of every binding. Mutated only by `apply` (log order); `copy` for a
    new image."""

    def __init__(self) -> None:
        self.by_id: dict[uuid.UUID, AclBinding] = {}
        self._ids: dict[AclBinding, uuid.UUID] = {}
        self._index: dict[_IndexKey, dict[uuid.UUID, AclBinding]] = {}

    def __len__(self) -> int:
        return len(self.by_id)

    def copy(self) -> AclsImage:
        other = AclsImage()
        other.by_id = dict(self.by_id)
        other._ids = dict(self._ids)
        other._index = {key: dict(entries) for key, entries in self._index.items()}
        return other

    def apply(self, record_type: int, data: dict[str, Any]) -> None:
        """Apply one record of the ACL family."""
        if record_type == ACCESS_CONTROL_ENTRY_RECORD:
            self.add(data["id"], AclBinding(
                ResourceType(data["resource_type"]), data["resource_name"],
                PatternType(data["pattern_type"]), data["principal"], data["host"],
                AclOperation(data["operation"]), PermissionType(data["permission_type"])))
        elif record_type == REMOVE_ACCESS_CONTROL_ENTRY_RECORD:
            self.remove(data["id"])

    def add(self, acl_id: uuid.UUID, binding: AclBinding) -> None:
        self.remove(acl_id)
        self.by_id[acl_id] = binding
        self._ids[binding] = acl_id
        key = (binding.resource_type, binding.pattern_type, binding.resource_name)
        self._index.setdefault(key, {})[acl_id] = binding

    def remove(self, acl_id: uuid.UUID) -> AclBinding | None:
        binding = self.by_id.pop(acl_id, None)
        if binding is None:
            return None
        if self._ids.get(binding) == acl_id:
            del self._ids[binding]
        key = (binding.resource_type, binding.pattern_type, binding.resource_name)
        entries = self._index[key]
        del entries[acl_id]
        if not entries:
            del self._index[key]
        return binding

    def id_of(self, binding: AclBinding) -> uuid.UUID | None:
        return self._ids.get(binding)

    def matching(self, acl_filter: AclFilter) -> list[tuple[uuid.UUID, AclBinding]]:
        """(id, binding) of every binding the filter matches, in binding order."""
        return sorted(((i, a) for i, a in self.by_id.items() if acl_filter.matches(a)),
                      key=lambda pair: pair[1])

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return sorted(a for a in self.by_id.values() if acl_filter.matches(a))

    def bindings(self) -> list[AclBinding]:
        return sorted(self.by_id.values())

    def applying(self, resource_type: ResourceType, name: str) -> Iterator[AclBinding]:
        """The bindings whose pattern covers the resource, from the index."""
        index = self._index
        for key in ((resource_type, PatternType.LITERAL, name),
                    (resource_type, PatternType.LITERAL, WILDCARD)):
            entries = index.get(key)
            if entries:
                yield from entries.values()
        for end in range(1, len(name) + 1):
            entries = index.get((resource_type, PatternType.PREFIXED, name[:end]))
            if entries:
                yield from entries.values()


class Authorizer:
    """The authorizer's configuration and its decisions over an AclsImage (see the module
    docstring)."""

    def __init__(self, enabled: bool = False, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.enabled = enabled
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.decisions = {"allowed": 0, "denied": 0}
        self._configured = (enabled, self.super_users, allow_everyone_if_no_acl_found)

    def reset(self) -> None:
        """The switch and super users as configured at start; no decisions counted (the
        bindings are metadata: acl_control.AclControl.reset removes them)."""
        self.enabled, self.super_users, self.allow_everyone_if_no_acl_found = self._configured
        self.decisions = {"allowed": 0, "denied": 0}

    # -- decisions -----------------------------------------------------------------------

    def authorize(self, acls: AclsImage, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        """Kafka's decision for one action by `acls`; always True with the authorizer off."""
        if not self.enabled:
            return True
        allowed = self._decide(acls, principal, host, operation, resource_type, name)
        self.decisions["allowed" if allowed else "denied"] += 1
        return allowed

    def _decide(self, acls: AclsImage, principal: str, host: str, operation: AclOperation,
                resource_type: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        found_any = False
        allowed = False
        implied_by = IMPLIED.get(operation, frozenset())
        for acl in acls.applying(resource_type, name):
            found_any = True
            if acl.principal not in (principal, WILDCARD_PRINCIPAL) \
                    or acl.host not in (host, WILDCARD):
                continue
            if acl.permission == PermissionType.DENY:
                if acl.operation in (operation, AclOperation.ALL):
                    return False
            elif acl.operation in (operation, AclOperation.ALL) or acl.operation in implied_by:
                allowed = True
        return allowed or (not found_any and self.allow_everyone_if_no_acl_found)

    def authorized_operations(self, acls: AclsImage, principal: str, host: str,
                              resource_type: ResourceType, name: str) -> int:
        """The bitfield of the resource type's operations this principal may do (bit n set
        for operation code n), as the authorized-operations fields carry it."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if not self.enabled or self._decide(acls, principal, host, op, resource_type,
                                                name):
                bits |= 1 << int(op)
        return bits

    def any_allowed(self, acls: AclsImage, principal: str, host: str, operation: AclOperation,
                    resource_type: ResourceType) -> bool:
        """Whether some resource of the type could allow the operation (Kafka's
        authorizeByResourceType, used for idempotent producers: WRITE on any topic)."""
        if not self.enabled or principal in self.super_users:
            return True
        candidates = {a.resource_name for a in acls.by_id.values()
                      if a.resource_type == resource_type
                      and a.permission == PermissionType.ALLOW
                      and a.principal in (principal, WILDCARD_PRINCIPAL)
                      and a.host in (host, WILDCARD)}
        return any(self._decide(acls, principal, host, operation, resource_type, n)
                   for n in candidates)

    def to_json(self, acls: AclsImage) -> dict[str, object]:
        """The configuration, the bindings of `acls` and the decisions so far."""
        return {"enabled": self.enabled, "super_users": sorted(self.super_users),
                "allow_everyone_if_no_acl_found": self.allow_everyone_if_no_acl_found,
                "acls": [a.to_json() for a in acls.bindings()],
                "decisions": dict(self.decisions)}
