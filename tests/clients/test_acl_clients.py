"""ACLs with real clients over SASL_SSL: an admin (super user) manages ACLs with
confluent-kafka's and kafka-python's admin clients; SCRAM users are refused what their ACLs
do not allow, with the exact error each client reports.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from mockbroker.embedded import MockClusterThread

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
TIMEOUT = 30.0
MECHANISM = "SCRAM-SHA-512"


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockClusterThread]:
    with MockClusterThread(brokers=3, security_protocol="SASL_SSL", sasl_users=USERS,
                           authorizer=True, super_users="User:admin") as mock:
        yield mock


@pytest.fixture
def secure(cluster: MockClusterThread) -> MockClusterThread:
    cluster.control.reset()
    return cluster


def _confluent(mock: MockClusterThread, user: str, **extra: Any) -> dict[str, Any]:
    files = mock.tls_files
    assert files is not None
    return {"bootstrap.servers": mock.bootstrap_servers, "security.protocol": "SASL_SSL",
            "ssl.ca.location": files.ca, "sasl.mechanism": MECHANISM, "sasl.username": user,
            "sasl.password": USERS[user], **extra}


def _kafka_python(mock: MockClusterThread, user: str) -> dict[str, Any]:
    files = mock.tls_files
    assert files is not None
    return {"bootstrap_servers": mock.bootstrap_servers, "security_protocol": "SASL_SSL",
            "ssl_cafile": files.ca, "sasl_mechanism": MECHANISM,
            "sasl_plain_username": user, "sasl_plain_password": USERS[user]}


def _produce_errors(mock: MockClusterThread, user: str, topic: str,
                    values: list[bytes], **extra: Any) -> list[KafkaError | None]:
    producer = Producer(_confluent(mock, user, **{"message.timeout.ms": 10_000, **extra}))
    errors: list[KafkaError | None] = []
    for value in values:
        producer.produce(topic, value, on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(TIMEOUT) == 0
    return errors


def _acl(rtype: ResourceType, name: str, principal: str, op: AclOperation,
         permission: AclPermissionType = AclPermissionType.ALLOW,
         pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, "*", op, permission)


def _create(admin: AdminClient, *bindings: AclBinding) -> None:
    for future in admin.create_acls(list(bindings)).values():
        assert future.result(TIMEOUT) is None


def _admin(mock: MockClusterThread) -> AdminClient:
    return AdminClient(_confluent(mock, "admin"))


def _stored(mock: MockClusterThread) -> set[tuple[str, ...]]:
    return {(a["resource_type"], a["resource_name"], a["pattern_type"], a["principal"],
             a["operation"], a["permission_type"]) for a in mock.control.acls()["acls"]}


def test_confluent_admin_creates_describes_and_deletes_acls(secure: MockClusterThread) -> None:
    admin = _admin(secure)
    read_orders = _acl(ResourceType.TOPIC, "orders", "User:alice", AclOperation.READ)
    write_prefix = _acl(ResourceType.TOPIC, "orders-", "User:alice", AclOperation.WRITE,
                        pattern=ResourcePatternType.PREFIXED)
    deny_group = _acl(ResourceType.GROUP, "billing", "User:bob", AclOperation.READ,
                      AclPermissionType.DENY)
    _create(admin, read_orders, write_prefix, deny_group)
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    described = admin.describe_acls(everything).result(TIMEOUT)
    assert sorted(map(str, described)) == sorted(map(str, [read_orders, write_prefix,
                                                            deny_group]))
    # MATCH: the bindings that apply to topic orders-eu (the prefixed one only)
    matching = admin.describe_acls(AclBindingFilter(
        ResourceType.TOPIC, "orders-eu", ResourcePatternType.MATCH, None, None,
        AclOperation.ANY, AclPermissionType.ANY)).result(TIMEOUT)
    assert [str(b) for b in matching] == [str(write_prefix)]
    alice_topics = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY,
                                    "User:alice", None, AclOperation.ANY, AclPermissionType.ANY)
    [deleted] = admin.delete_acls([alice_topics]).values()
    assert sorted(map(str, deleted.result(TIMEOUT))) == sorted(map(str, [read_orders,
                                                                          write_prefix]))
    assert _stored(secure) == {("GROUP", "billing", "LITERAL", "User:bob", "READ", "DENY")}


def test_acl_apis_refuse_a_user_without_cluster_alter(secure: MockClusterThread) -> None:
    admin = AdminClient(_confluent(secure, "alice"))
    futures = admin.create_acls([_acl(ResourceType.TOPIC, "t", "User:alice", AclOperation.ALL)])
    [future] = futures.values()
    with pytest.raises(Exception) as refused:
        future.result(TIMEOUT)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert _stored(secure) == set()


def test_confluent_producer_without_write_gets_topic_authorization_failed(
        secure: MockClusterThread) -> None:
    secure.control.create_topic("orders", partitions=2)
    secure.control.create_acl("TOPIC", "orders", "User:alice", "DESCRIBE")
    errors = _produce_errors(secure, "alice", "orders", [b"a", b"b"])
    assert [e.code() if e else None for e in errors] == [
        KafkaError.TOPIC_AUTHORIZATION_FAILED] * 2
    secure.control.create_acl("TOPIC", "orders", "User:alice", "WRITE")
    assert _produce_errors(secure, "alice", "orders", [b"c"]) == [None]


def test_prefixed_acl_allows_only_its_prefix(secure: MockClusterThread) -> None:
    secure.control.create_topic("orders-eu")
    secure.control.create_topic("payments")
    secure.control.create_acl("TOPIC", "orders-", "User:alice", "WRITE",
                              pattern_type="PREFIXED")
    assert _produce_errors(secure, "alice", "orders-eu", [b"x"]) == [None]
    [refused] = _produce_errors(secure, "alice", "payments", [b"y"])
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_deny_overrides_allow(secure: MockClusterThread) -> None:
    secure.control.create_topic("ledger")
    secure.control.create_acl("TOPIC", "*", "User:*", "ALL")
    secure.control.create_acl("TOPIC", "ledger", "User:alice", "WRITE",
                              permission_type="DENY")
    [refused] = _produce_errors(secure, "alice", "ledger", [b"no"])
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _produce_errors(secure, "bob", "ledger", [b"yes"]) == [None]


def test_consumer_without_group_read_gets_group_authorization_failed(
        secure: MockClusterThread) -> None:
    secure.control.create_topic("events")
    secure.control.create_acl("TOPIC", "events", "User:alice", "READ")
    consumer = Consumer(_confluent(secure, "alice", **{"group.id": "analytics",
                                                       "auto.offset.reset": "earliest"}))
    consumer.subscribe(["events"])
    seen: list[int] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while not seen and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                seen.append(message.error().code())
    finally:
        consumer.close()
    assert seen == [KafkaError.GROUP_AUTHORIZATION_FAILED]


def test_kafka_python_producer_gets_topic_authorization_failed(
        secure: MockClusterThread) -> None:
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    secure.control.create_topic("audit")
    secure.control.create_acl("TOPIC", "audit", "User:bob", "DESCRIBE")
    producer = KafkaProducer(**_kafka_python(secure, "bob"), retries=0)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("audit", b"no").get(timeout=TIMEOUT)
    finally:
        producer.close(timeout=5)


def test_kafka_python_admin_creates_and_describes_acls(secure: MockClusterThread) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KPResourceType

    admin = KafkaAdminClient(**_kafka_python(secure, "admin"))
    try:
        acl = ACL(principal="User:carol", host="*", operation=ACLOperation.READ,
                  permission_type=ACLPermissionType.ALLOW,
                  resource_pattern=ResourcePattern(KPResourceType.TOPIC, "metrics-",
                                                   ACLResourcePatternType.PREFIXED))
        created = admin.create_acls([acl])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        found, error = admin.describe_acls(ACLFilter(
            principal=None, host=None, operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(KPResourceType.TOPIC, None,
                                                   ACLResourcePatternType.ANY)))
        assert error.errno == 0
        assert [(a.principal, a.host, a.operation, a.permission_type,
                 a.resource_pattern.resource_name, a.resource_pattern.pattern_type)
                for a in found] == [("User:carol", "*", ACLOperation.READ,
                                     ACLPermissionType.ALLOW, "metrics-",
                                     ACLResourcePatternType.PREFIXED)]
    finally:
        admin.close()
    assert _stored(secure) == {("TOPIC", "metrics-", "PREFIXED", "User:carol", "READ", "ALLOW")}


def test_consumer_with_group_and_topic_read_consumes_and_commits(
        secure: MockClusterThread) -> None:
    secure.control.create_topic("events")
    secure.control.create_acl("TOPIC", "events", "User:alice", "READ")
    secure.control.create_acl("TOPIC", "events", "User:bob", "WRITE")
    secure.control.create_acl("GROUP", "analytics", "User:alice", "READ")
    assert _produce_errors(secure, "bob", "events", [b"e1", b"e2"]) == [None, None]
    consumer = Consumer(_confluent(secure, "alice", **{"group.id": "analytics",
                                                       "auto.offset.reset": "earliest",
                                                       "enable.auto.commit": False}))
    consumer.subscribe(["events"])
    got: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(got) < 2 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                got.append(message.value())
        [committed] = consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert got == [b"e1", b"e2"]
    assert (committed.topic, committed.offset, committed.error) == ("events", 2, None)


def test_idempotent_producer_needs_write_on_a_topic(secure: MockClusterThread) -> None:
    """InitProducerId without a transactional id: IDEMPOTENT_WRITE on the cluster or WRITE on
    some topic (KIP-679); bob may only DESCRIBE the topic, so his InitProducerId fails."""
    secure.control.create_topic("ids")
    secure.control.create_acl("TOPIC", "ids", "User:alice", "WRITE")
    secure.control.create_acl("TOPIC", "ids", "User:bob", "DESCRIBE")
    assert _produce_errors(secure, "alice", "ids", [b"once"],
                           **{"enable.idempotence": True}) == [None]
    fatal: list[KafkaError] = []
    producer = Producer(_confluent(secure, "bob", **{"enable.idempotence": True,
                                                     "message.timeout.ms": 5000,
                                                     "error_cb": fatal.append}))
    producer.produce("ids", b"never")
    raised: list[KafkaError] = []
    try:
        producer.flush(TIMEOUT)
    except KafkaException as exc:  # librdkafka surfaces its fatal error here too
        raised.append(exc.args[0])
    assert [(e.code(), e.fatal()) for e in [*raised, *fatal]][:1] == [
        (KafkaError.CLUSTER_AUTHORIZATION_FAILED, True)]
    assert (secure.control.acls()["decisions"]["denied"]) > 0


def test_transactional_producer_needs_write_on_its_transactional_id(
        secure: MockClusterThread) -> None:
    secure.control.create_topic("payments")
    secure.control.create_acl("TOPIC", "payments", "User:alice", "WRITE")
    secure.control.create_acl("TRANSACTIONAL_ID", "pay-", "User:alice", "WRITE",
                              pattern_type="PREFIXED")
    producer = Producer(_confluent(secure, "alice", **{"transactional.id": "pay-1"}))
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    producer.produce("payments", b"paid")
    producer.commit_transaction(TIMEOUT)
    other = Producer(_confluent(secure, "alice", **{"transactional.id": "other-1"}))
    with pytest.raises(KafkaException) as refused:
        other.init_transactions(TIMEOUT)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_kafka_python_consumer_without_group_read(secure: MockClusterThread) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    secure.control.create_topic("audit-log")
    secure.control.create_acl("TOPIC", "audit-log", "User:bob", "READ")
    consumer = KafkaConsumer("audit-log", group_id="auditors", **_kafka_python(secure, "bob"))
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            for _ in range(20):  # bounded: each poll waits at most 0.5 s
                consumer.poll(timeout_ms=500)
    finally:
        consumer.close()
