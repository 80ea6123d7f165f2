"""Client quotas: DescribeClientQuotas (filters, match types, strict), AlterClientQuotas
(set, remove, validate_only and its validation errors), alice's denials, and a quota that
throttles: a tiny produce_byte_rate for a client id, then more produced than it allows.

Every quota set here names an entity of the case's own (a client id or user named after it)
and is removed again, so no case (nor anything else the session runs) is throttled by
another's. Cluster-wide defaults are only ever validated (validate_only)."""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec.records import RecordSpec, build_batch

from tests.conformance.cases.admin_support import plain
from tests.conformance.harness import Session, produce_body
from tests.conformance.registry import case, cases
from tests.support.rawclient import RawClient

DESCRIBE_QUOTAS = 48
ALTER_QUOTAS = 49
EXACT, DEFAULT, ANY = 0, 1, 2


def component(entity_type: str, match_type: int = EXACT,
              match: str | None = None) -> dict[str, Any]:
    return {"entity_type": entity_type, "match_type": match_type, "match": match}


def describe_body(*components: dict[str, Any], strict: bool = True) -> dict[str, Any]:
    return {"components": list(components), "strict": strict}


def entry(entity: dict[str, str | None], ops: dict[str, float | None]) -> dict[str, Any]:
    return {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
            "ops": [{"key": k, "value": 0.0 if v is None else v, "remove": v is None}
                    for k, v in ops.items()]}


def alter_body(*entries: dict[str, Any], validate_only: bool = False) -> dict[str, Any]:
    return {"entries": list(entries), "validate_only": validate_only}


async def describe(s: Session, version: int, body: dict[str, Any], *,
                   label: str | None = None, user: str | None = None) -> None:
    """DescribeClientQuotas recorded with entries and values in a canonical order (Kafka
    lists them in its quota cache's hash order)."""
    answer = await s.call(DESCRIBE_QUOTAS, version, body, record=False, user=user)
    if answer is None:
        s.observe(label or f"48v{version}", {"closed": True})
        return
    result = plain(answer)
    for item in result.get("entries") or []:
        item["values"].sort(key=lambda v: v["key"])
        item["entity"].sort(key=lambda e: e["entity_type"])
    if result.get("entries"):
        result["entries"].sort(key=lambda e: repr(e["entity"]))
    s.observe(label or f"48v{version}", result)


async def until_quota(s: Session, entity_type: str, name: str, count: int) -> None:
    """Wait (bounded) until the entity has `count` quota values: the broker describes from
    its metadata image, a moment after the controller wrote them."""
    async def present() -> bool:
        answer = await s.call(DESCRIBE_QUOTAS, 1, describe_body(component(entity_type,
                                                                          EXACT, name)),
                              record=False)
        found = answer.entries if answer is not None and answer.entries else []
        return sum(len(e["values"]) for e in found) == count

    await s.until(present, what=f"{count} quota values of {name}")


@cases("quotas/describe-none", [0, 1], api=DESCRIBE_QUOTAS)
async def describe_none(s: Session, version: int) -> None:
    await describe(s, version, describe_body(component("client-id", EXACT, s.name())))


@cases("quotas/alter-describe-remove", [0, 1], api=ALTER_QUOTAS)
async def alter_describe_remove(s: Session, version: int) -> None:
    client = s.name()
    await s.call(ALTER_QUOTAS, version, alter_body(entry(
        {"client-id": client}, {"producer_byte_rate": 1048576.0,
                                "consumer_byte_rate": 2097152.0,
                                "request_percentage": 50.0})))
    await until_quota(s, "client-id", client, 3)
    await describe(s, version, describe_body(component("client-id", EXACT, client)),
                   label="set")
    await s.call(ALTER_QUOTAS, version, alter_body(entry(
        {"client-id": client}, {"producer_byte_rate": None, "request_percentage": None})),
        label="remove two")
    await until_quota(s, "client-id", client, 1)
    await describe(s, version, describe_body(component("client-id", EXACT, client)),
                   label="one left")
    await s.call(ALTER_QUOTAS, version, alter_body(entry(
        {"client-id": client}, {"consumer_byte_rate": None})), label="remove last")
    await until_quota(s, "client-id", client, 0)


@case("quotas/user-and-client", api=DESCRIBE_QUOTAS)
async def user_and_client(s: Session) -> None:
    """A (user, client-id) entity: found by both exact components, by the user with
    strict=False, not by the user alone with strict=True."""
    user, client = s.name("user"), s.name("client")
    await s.call(ALTER_QUOTAS, 1, alter_body(entry({"user": user, "client-id": client},
                                                   {"producer_byte_rate": 4096.0})))

    async def present() -> bool:
        answer = await s.call(DESCRIBE_QUOTAS, 1, describe_body(
            component("user", EXACT, user), component("client-id", EXACT, client)),
            record=False)
        return answer is not None and bool(answer.entries)

    await s.until(present, what="the quota")
    try:
        await describe(s, 1, describe_body(component("user", EXACT, user),
                                           component("client-id", EXACT, client)),
                       label="both")
        await describe(s, 1, describe_body(component("user", EXACT, user), strict=False),
                       label="user, not strict")
        await describe(s, 1, describe_body(component("user", EXACT, user)),
                       label="user, strict")
        await describe(s, 1, describe_body(component("user", EXACT, user),
                                           component("client-id", ANY)), label="any client")
    finally:
        await s.call(ALTER_QUOTAS, 1, alter_body(entry({"user": user, "client-id": client},
                                                       {"producer_byte_rate": None})),
                     record=False)


@cases("quotas/describe-invalid", ["unknown-type", "exact-without-match",
                                   "default-with-match", "same-type-twice",
                                   "bad-match-type"], api=DESCRIBE_QUOTAS)
async def describe_invalid(s: Session, kind: str) -> None:
    components = {
        "unknown-type": [component("group", EXACT, "g")],
        "exact-without-match": [component("user", EXACT, None)],
        "default-with-match": [component("user", DEFAULT, "x")],
        "same-type-twice": [component("user", EXACT, "a"), component("user", EXACT, "b")],
        "bad-match-type": [component("user", 7, "a")],
    }[kind]
    await describe(s, 1, describe_body(*components))


@case("quotas/alter-validate-only", api=ALTER_QUOTAS)
async def alter_validate_only(s: Session) -> None:
    """validate_only writes nothing; the cluster-wide default entity validates too."""
    client = s.name()
    await s.call(ALTER_QUOTAS, 1, alter_body(
        entry({"client-id": client}, {"producer_byte_rate": 1024.0}),
        entry({"client-id": None}, {"producer_byte_rate": 1024.0}), validate_only=True))
    await describe(s, 1, describe_body(component("client-id", EXACT, client)))


@cases("quotas/alter-invalid", ["unknown-key", "negative", "fractional-rate",
                                "unknown-entity-type", "user-and-ip", "ip-with-user-key",
                                "bad-ip", "no-entity", "same-key-twice",
                                "ip-connection-rate-for-client"], api=ALTER_QUOTAS)
async def alter_invalid(s: Session, kind: str) -> None:
    name = s.name()
    invalid = {
        "unknown-key": entry({"client-id": name}, {"no.such.quota": 1.0}),
        "negative": entry({"client-id": name}, {"producer_byte_rate": -5.0}),
        "fractional-rate": entry({"client-id": name}, {"producer_byte_rate": 1.5}),
        "unknown-entity-type": entry({"group": name}, {"producer_byte_rate": 1.0}),
        "user-and-ip": entry({"user": name, "ip": "127.0.0.1"}, {"producer_byte_rate": 1.0}),
        "ip-with-user-key": entry({"ip": "127.0.0.9"}, {"producer_byte_rate": 1.0}),
        "bad-ip": entry({"ip": "not-an-ip"}, {"connection_creation_rate": 1.0}),
        "no-entity": {"entity": [], "ops": [{"key": "producer_byte_rate", "value": 1.0,
                                              "remove": False}]},
        "same-key-twice": {"entity": [{"entity_type": "client-id", "entity_name": name}],
                           "ops": [{"key": "producer_byte_rate", "value": 1.0,
                                    "remove": False},
                                   {"key": "producer_byte_rate", "value": 2.0,
                                    "remove": False}]},
        "ip-connection-rate-for-client": entry({"client-id": name},
                                               {"connection_creation_rate": 1.0}),
    }[kind]
    await s.call(ALTER_QUOTAS, 1, alter_body(invalid, validate_only=True))


@case("quotas/denied", api=ALTER_QUOTAS)
async def denied(s: Session) -> None:
    """alice may neither alter nor describe quotas: CLUSTER_AUTHORIZATION_FAILED."""
    client = s.name()
    await s.call(ALTER_QUOTAS, 1, alter_body(entry({"client-id": client},
                                                   {"producer_byte_rate": 1.0})),
                 user="alice")
    await describe(s, 1, describe_body(component("client-id", EXACT, client)), user="alice",
                   label="describe")


@case("quotas/produce-throttled", api=ALTER_QUOTAS)
async def produce_throttled(s: Session) -> None:
    """A produce_byte_rate of 1 KiB/s for this case's client id; a 64 KiB produce from that
    client is throttled (throttle_time_ms > 0), one from another client is not."""
    topic = s.name()
    client = s.name("client")
    await s.create_topic(topic)
    await s.call(ALTER_QUOTAS, 1, alter_body(entry({"client-id": client},
                                                   {"producer_byte_rate": 1024.0})),
                 record=False)
    await until_quota(s, "client-id", client, 1)
    raw = await RawClient.connect(s.target.port, client_id=client)
    try:
        data = build_batch([RecordSpec(value=b"x" * 65536)])
        answer = await raw.request(0, 9, produce_body(topic, 0, data), timeout=15.0)
        s.observe("throttled client", plain(answer))
        other = await s.produce(topic, [b"x" * 65536])
        s.observe("other client", plain(other))
    finally:
        await raw.close()
        await s.call(ALTER_QUOTAS, 1, alter_body(entry({"client-id": client},
                                                       {"producer_byte_rate": None})),
                     record=False)
