"""The authorizer's decisions and ACL filters, as Kafka's StandardAuthorizer makes them,
over bindings applied as KRaft's ACL records."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest

from mockbroker.cluster.security.authorizer import (
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    AclBinding,
    AclError,
    AclFilter,
    AclsImage,
    Authorizer,
    entry_record,
    make_binding,
    parse_super_users,
)
from mockbroker.cluster.security.authorizer import AclOperation as Op
from mockbroker.cluster.security.authorizer import PatternType as PT
from mockbroker.cluster.security.authorizer import PermissionType as Perm
from mockbroker.cluster.security.authorizer import ResourceType as RT

HOST = "10.0.0.7"


def acl(name: str, op: Op, principal: str = "User:alice", perm: Perm = Perm.ALLOW,
        pattern: PT = PT.LITERAL, rtype: RT = RT.TOPIC, host: str = "*") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


@dataclass
class BrokerView:
    """An authorizer and the bindings of one broker's image, filled through the records."""

    auth: Authorizer
    acls: AclsImage = field(default_factory=AclsImage)

    def authorize(self, principal: str, host: str, op: Op, rtype: RT, name: str) -> bool:
        return self.auth.authorize(self.acls, principal, host, op, rtype, name)

    def authorized_operations(self, principal: str, host: str, rtype: RT, name: str) -> int:
        return self.auth.authorized_operations(self.acls, principal, host, rtype, name)

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return self.acls.describe(acl_filter)

    def delete(self, acl_filter: AclFilter) -> list[AclBinding]:
        matched = self.acls.matching(acl_filter)
        for acl_id, _ in matched:
            self.acls.apply(REMOVE_ACCESS_CONTROL_ENTRY_RECORD, {"id": acl_id})
        return [binding for _, binding in matched]


def authorizer(*bindings: AclBinding, **kwargs: bool) -> BrokerView:
    view = BrokerView(Authorizer(True, parse_super_users("User:admin"), **kwargs))
    for binding in bindings:
        view.acls.apply(ACCESS_CONTROL_ENTRY_RECORD, entry_record(uuid.uuid4(), binding))
    return view


def test_off_allows_everything() -> None:
    assert Authorizer(False).authorize(AclsImage(), "User:x", HOST, Op.DELETE, RT.CLUSTER,
                                       "kafka-cluster")


def test_a_copied_image_keeps_its_own_bindings() -> None:
    view = authorizer(acl("t", Op.READ))
    before = view.acls.copy()
    view.delete(AclFilter())
    assert not view.authorize("User:alice", HOST, Op.READ, RT.TOPIC, "t")
    assert view.auth.authorize(before, "User:alice", HOST, Op.READ, RT.TOPIC, "t")


def test_no_acl_denies_unless_allow_everyone() -> None:
    assert not authorizer().authorize("User:alice", HOST, Op.READ, RT.TOPIC, "t")
    assert authorizer(allow_everyone_if_no_acl_found=True).authorize(
        "User:alice", HOST, Op.READ, RT.TOPIC, "t")
    # any binding on the resource (even another principal's) turns the fallback off
    other = authorizer(acl("t", Op.READ, "User:bob"), allow_everyone_if_no_acl_found=True)
    assert not other.authorize("User:alice", HOST, Op.READ, RT.TOPIC, "t")


def test_super_user_is_allowed_even_against_deny() -> None:
    auth = authorizer(acl("t", Op.ALL, "User:*", Perm.DENY))
    assert auth.authorize("User:admin", HOST, Op.WRITE, RT.TOPIC, "t")
    assert not auth.authorize("User:alice", HOST, Op.WRITE, RT.TOPIC, "t")


@pytest.mark.parametrize(("granted", "implied"), [
    (Op.READ, Op.DESCRIBE), (Op.WRITE, Op.DESCRIBE), (Op.DELETE, Op.DESCRIBE),
    (Op.ALTER, Op.DESCRIBE), (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS), (Op.ALL, Op.DELETE)])
def test_implied_operations(granted: Op, implied: Op) -> None:
    assert authorizer(acl("t", granted)).authorize("User:alice", HOST, implied, RT.TOPIC, "t")


def test_describe_does_not_imply_read_and_deny_is_not_implied() -> None:
    assert not authorizer(acl("t", Op.DESCRIBE)).authorize("User:alice", HOST, Op.READ,
                                                           RT.TOPIC, "t")
    # DENY READ does not deny DESCRIBE granted by an ALLOW READ... (Kafka: deny is exact)
    auth = authorizer(acl("t", Op.READ), acl("t", Op.READ, perm=Perm.DENY))
    assert not auth.authorize("User:alice", HOST, Op.READ, RT.TOPIC, "t")
    assert auth.authorize("User:alice", HOST, Op.DESCRIBE, RT.TOPIC, "t")


def test_wildcards_prefixes_and_hosts() -> None:
    auth = authorizer(acl("*", Op.READ, "User:*"), acl("pay-", Op.WRITE, pattern=PT.PREFIXED),
                      acl("t", Op.DELETE, host="10.0.0.8"))
    assert auth.authorize("User:zed", HOST, Op.READ, RT.TOPIC, "anything")
    assert auth.authorize("User:alice", HOST, Op.WRITE, RT.TOPIC, "pay-eu")
    assert not auth.authorize("User:alice", HOST, Op.WRITE, RT.TOPIC, "pa")
    assert not auth.authorize("User:alice", HOST, Op.DELETE, RT.TOPIC, "t")
    assert auth.authorize("User:alice", "10.0.0.8", Op.DELETE, RT.TOPIC, "t")
    assert not auth.authorize("User:zed", HOST, Op.READ, RT.GROUP, "anything")  # other type


def test_deny_on_a_prefix_wins_over_a_literal_allow() -> None:
    auth = authorizer(acl("secret-x", Op.READ),
                      acl("secret-", Op.ALL, "User:*", Perm.DENY, PT.PREFIXED))
    assert not auth.authorize("User:alice", HOST, Op.READ, RT.TOPIC, "secret-x")


def test_authorized_operations_bitfield() -> None:
    auth = authorizer(acl("t", Op.WRITE), acl("t", Op.ALTER_CONFIGS))
    expected = sum(1 << int(op) for op in (Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS,
                                           Op.DESCRIBE_CONFIGS))
    assert auth.authorized_operations("User:alice", HOST, RT.TOPIC, "t") == expected


def test_filters_any_match_and_exact() -> None:
    bindings = [acl("orders", Op.READ), acl("ord", Op.WRITE, pattern=PT.PREFIXED),
                acl("*", Op.DESCRIBE, "User:bob"), acl("g", Op.READ, rtype=RT.GROUP)]
    auth = authorizer(*bindings)
    assert auth.describe(AclFilter()) == sorted(bindings)
    matched = auth.describe(AclFilter(RT.TOPIC, "orders", PT.MATCH))
    assert matched == sorted(bindings[:3])
    assert auth.describe(AclFilter(RT.ANY, "orders", PT.ANY)) == [bindings[0]]
    assert auth.describe(AclFilter(RT.TOPIC, "ord", PT.PREFIXED)) == [bindings[1]]
    assert auth.delete(AclFilter(principal="User:bob")) == [bindings[2]]
    assert not auth.authorize("User:bob", HOST, Op.DESCRIBE, RT.TOPIC, "x")


@pytest.mark.parametrize(("args", "message"), [
    ((1, "t", 3, "User:a", "*", 3, 3), "Invalid resourceType ANY"),
    ((2, "t", 2, "User:a", "*", 3, 3), "Invalid patternType MATCH"),
    ((2, "t", 3, "User:a", "*", 1, 3), "Invalid operation ANY"),
    ((2, "t", 3, "User:a", "*", 3, 1), "Invalid permissionType ANY"),
    ((2, "", 3, "User:a", "*", 3, 3), "Resource name should not be empty"),
    ((2, "t", 3, "alice", "*", 3, 3), "Could not parse principal"),
    ((9, "t", 3, "User:a", "*", 3, 3), "Unknown resource type 9")])
def test_invalid_bindings(args: tuple[int, str, int, str, str, int, int], message: str) -> None:
    with pytest.raises(AclError, match=message):
        make_binding(*args)
