"""Produce by idempotent and transactional producers (sequences, duplicates, epochs,
verification against the transaction) and under ACLs (WRITE, IDEMPOTENT_WRITE, the
transactional id, DENY, PREFIXED patterns)."""

from __future__ import annotations

from tests.conformance.cases.data_support import (
    CLUSTER,
    DENY,
    IDEMPOTENT_WRITE,
    PREFIXED,
    PRODUCE,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    Producer,
    add_partitions,
    batch,
    create_topic,
    grant,
    init_producer,
    produce_batch,
    revoking,
    transactional_produce,
)
from tests.conformance.cases.produce_fetch import end_offset, fetch_all, observe_sorted
from tests.conformance.harness import Session, produce_body
from tests.conformance.registry import case, cases

# -- idempotence and transactions -------------------------------------------------------------

async def idempotent(s: Session, topic: str, producer: Producer, values: list[bytes],
                     sequence: int, label: str, epoch: int | None = None) -> None:
    used = producer if epoch is None else Producer(producer.producer_id, epoch)
    await produce_batch(s, topic, batch(values, producer=used, sequence=sequence),
                        label=label)


@case("produce/idempotent-duplicate", api=PRODUCE)
async def idempotent_duplicate(s: Session) -> None:
    """The same batch again: answered with the first append's offset, written once."""
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s)
    await idempotent(s, topic, producer, [b"a", b"b"], 0, "first")
    await idempotent(s, topic, producer, [b"c"], 2, "second")
    await idempotent(s, topic, producer, [b"a", b"b"], 0, "duplicate of first")
    await end_offset(s, topic)


@case("produce/out-of-order-sequence", api=PRODUCE)
async def out_of_order_sequence(s: Session) -> None:
    """A gap in the sequence: OUT_OF_ORDER_SEQUENCE_NUMBER (45)."""
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s)
    await idempotent(s, topic, producer, [b"a"], 0, "first")
    await idempotent(s, topic, producer, [b"b"], 5, "gap")
    await idempotent(s, topic, producer, [b"c"], 1, "next")
    await end_offset(s, topic)


@case("produce/first-sequence-not-zero", api=PRODUCE)
async def first_sequence_not_zero(s: Session) -> None:
    """A producer's first batch on a partition with sequence 7."""
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s)
    await idempotent(s, topic, producer, [b"a"], 7, "first")
    await idempotent(s, topic, producer, [b"b"], 8, "next")
    await end_offset(s, topic)


@case("produce/unknown-producer-id", api=PRODUCE)
async def unknown_producer_id(s: Session) -> None:
    """A producer id no coordinator handed out."""
    topic = s.name()
    await create_topic(s, topic)
    await idempotent(s, topic, Producer(987_654_321, 0), [b"a"], 0, "unallocated id")
    await end_offset(s, topic)


@case("produce/stale-producer-epoch", api=PRODUCE)
async def stale_producer_epoch(s: Session) -> None:
    """After epoch 1 wrote, epoch 0 of the same producer id is fenced."""
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s)
    await idempotent(s, topic, producer, [b"a"], 0, "epoch 1", epoch=producer.epoch + 1)
    await idempotent(s, topic, producer, [b"b"], 1, "epoch 0")
    await idempotent(s, topic, producer, [b"c"], 0, "epoch 2 at sequence 0",
                     epoch=producer.epoch + 2)
    await idempotent(s, topic, producer, [b"d"], 3, "epoch 3 not at sequence 0",
                     epoch=producer.epoch + 3)
    await end_offset(s, topic)


@case("produce/sequence-wrap", api=PRODUCE)
async def sequence_wrap(s: Session) -> None:
    """Sequences wrap after 2^31-1: a batch across the wrap, then sequence 1."""
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s)
    await idempotent(s, topic, producer, [b"a", b"b"], 2**31 - 1, "across the wrap")
    await idempotent(s, topic, producer, [b"c"], 1, "after the wrap")
    await idempotent(s, topic, producer, [b"d"], 0, "sequence 0 again")
    await end_offset(s, topic)


@case("produce/duplicate-partition", api=PRODUCE)
async def duplicate_partition(s: Session) -> None:
    """One partition twice in a request."""
    topic = s.name()
    await create_topic(s, topic)
    body = produce_body(topic, 0, batch([b"first"]))
    body["topic_data"][0]["partition_data"].append({"index": 0, "records": batch([b"again"])})
    await s.call(PRODUCE, 9, body)
    await fetch_all(s, topic)


@case("produce/transactional-fenced-epoch", api=PRODUCE)
async def transactional_fenced_epoch(s: Session) -> None:
    """A second InitProducerId fences the first epoch: its transactional batch is
    refused."""
    topic = s.name()
    await create_topic(s, topic)
    old = await init_producer(s, s.name("txn"))
    new = await init_producer(s, s.name("txn"))
    await add_partitions(s, new, topic)
    data = batch([b"zombie"], producer=old, sequence=0, transactional=True)
    await produce_batch(s, topic, data, transactional_id=old.transactional_id)
    await end_offset(s, topic)


@case("produce/producer-id-without-sequence", api=PRODUCE)
async def producer_id_without_sequence(s: Session) -> None:
    """A producer id with base sequence -1: INVALID_RECORD."""
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s)
    await idempotent(s, topic, producer, [b"a"], -1, "no sequence")
    await end_offset(s, topic)


@cases("produce/transactional-outside-transaction", [9, 11, 12], api=PRODUCE)
async def transactional_outside(s: Session, version: int) -> None:
    """A transactional batch for a partition never added to the transaction."""
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s, s.name("txn"))
    data = batch([b"a"], producer=producer, sequence=0, transactional=True)
    await produce_batch(s, topic, data, version=version,
                        transactional_id=producer.transactional_id)
    await end_offset(s, topic)


@case("produce/transactional-without-id", api=PRODUCE)
async def transactional_without_id(s: Session) -> None:
    """A transactional batch in a request without a transactional id."""
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    data = batch([b"a"], producer=producer, sequence=0, transactional=True)
    await produce_batch(s, topic, data)
    await end_offset(s, topic)


@case("produce/transactional-in-transaction", api=PRODUCE)
async def transactional_in_transaction(s: Session) -> None:
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    data = batch([b"a", b"b"], producer=producer, sequence=0, transactional=True)
    await produce_batch(s, topic, data, transactional_id=producer.transactional_id)
    await end_offset(s, topic, "high watermark")


# -- authorization ----------------------------------------------------------------------------

@case("produce/acl-denied", api=PRODUCE)
async def acl_denied(s: Session) -> None:
    """alice without WRITE: TOPIC_AUTHORIZATION_FAILED (29); an unknown topic looks the
    same to her."""
    topic = s.name()
    await create_topic(s, topic)
    body = produce_body(topic, 0, batch([b"a"]))
    body["topic_data"].append({"name": s.name("missing"),
                               "partition_data": [{"index": 0, "records": batch([b"b"])}]})
    observe_sorted(s, "as alice", await s.call(PRODUCE, 9, body, user="alice", record=False))
    await end_offset(s, topic)


@case("produce/acl-write-granted", api=PRODUCE)
@revoking
async def acl_write_granted(s: Session) -> None:
    """With WRITE on the topic alice may produce, idempotently too (WRITE implies
    IDEMPOTENT_WRITE)."""
    topic = s.name()
    await create_topic(s, topic)
    await grant(s, TOPIC, topic, WRITE)
    await s.call(PRODUCE, 9, produce_body(topic, 0, batch([b"a"])), user="alice")
    producer = await init_producer(s)
    data = batch([b"b"], producer=producer, sequence=0)
    await s.call(PRODUCE, 9, produce_body(topic, 0, data), user="alice", label="idempotent")
    await end_offset(s, topic)


@case("produce/acl-idempotent-write-only", api=PRODUCE)
@revoking
async def acl_idempotent_write_only(s: Session) -> None:
    """IDEMPOTENT_WRITE on the cluster alone does not grant WRITE on a topic."""
    topic = s.name()
    await create_topic(s, topic)
    await grant(s, CLUSTER, "kafka-cluster", IDEMPOTENT_WRITE, principal="User:alice")
    producer = await init_producer(s)
    data = batch([b"b"], producer=producer, sequence=0)
    await s.call(PRODUCE, 9, produce_body(topic, 0, data), user="alice")


@cases("produce/acl-transactional-id", ["denied", "granted"], api=PRODUCE)
@revoking
async def acl_transactional_id(s: Session, grant_it: str) -> None:
    """A transactional produce needs WRITE on the transactional id, else every partition is
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53)."""
    topic = s.name()
    await create_topic(s, topic)
    await grant(s, TOPIC, topic, WRITE)
    producer = await init_producer(s, s.name("txn"))
    if grant_it == "granted":
        await grant(s, TRANSACTIONAL_ID, s.name("txn"), WRITE)
    await add_partitions(s, producer, topic)
    data = batch([b"a"], producer=producer, sequence=0, transactional=True)
    body = produce_body(topic, 0, data, transactional_id=producer.transactional_id)
    await s.call(PRODUCE, 9, body, user="alice")


@case("produce/acl-deny-overrides-allow", api=PRODUCE)
@revoking
async def acl_deny_overrides_allow(s: Session) -> None:
    """A DENY WRITE beside an ALLOW WRITE: denied."""
    topic = s.name()
    await create_topic(s, topic)
    await grant(s, TOPIC, topic, WRITE)
    await grant(s, TOPIC, topic, WRITE, permission=DENY)
    await s.call(PRODUCE, 9, produce_body(topic, 0, batch([b"a"])), user="alice")


@case("produce/acl-prefixed", api=PRODUCE)
@revoking
async def acl_prefixed(s: Session) -> None:
    """WRITE on a PREFIXED pattern covers every topic whose name starts with it."""
    topic = s.name("prefixed-one")
    await create_topic(s, topic)
    await grant(s, TOPIC, s.name("prefixed-"), WRITE, pattern=PREFIXED)
    await s.call(PRODUCE, 9, produce_body(topic, 0, batch([b"a"])), user="alice")


@case("produce/plain-batch-during-transaction", api=PRODUCE)
async def plain_batch_during_transaction(s: Session) -> None:
    """A transactional producer's non-transactional batch while its transaction is open on
    the partition: INVALID_TXN_STATE (48)."""
    topic = s.name()
    await create_topic(s, topic)
    producer = await init_producer(s, s.name("txn"))
    await add_partitions(s, producer, topic)
    await transactional_produce(s, producer, topic, [b"in"], 0)
    await produce_batch(s, topic, batch([b"out"], producer=producer, sequence=1),
                        transactional_id=producer.transactional_id)
    await end_offset(s, topic)
