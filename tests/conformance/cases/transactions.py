"""Transactions from the producer's side: InitProducerId (idempotent and transactional,
epoch bumps, fencing, timeouts), AddPartitionsToTxn in its client form (v0-v3),
AddOffsetsToTxn, TxnOffsetCommit and EndTxn (commit, abort, the state errors, the
transactions-v2 epoch bump of v5)."""

from __future__ import annotations

from tests.conformance.cases.group_support import (
    TRANSACTION,
    call_sorted,
    coordinator_ready,
    grant,
    wait_acl,
)
from tests.conformance.cases.txn_support import (
    ADD_OFFSETS,
    ADD_PARTITIONS,
    END_TXN,
    INIT_PRODUCER_ID,
    Producer,
    add_partitions,
    add_partitions_body,
    end_body,
    init_body,
    init_producer,
    ongoing,
    produce_settled,
    produce_txn,
    wait_complete,
)
from tests.conformance.harness import Session
from tests.conformance.registry import case, cases


@cases("txn/init-idempotent", [0, 2, 3, 4, 5], api=INIT_PRODUCER_ID)
async def init_idempotent(s: Session, version: int) -> None:
    """No transactional id: a new producer id, epoch 0, every time."""
    await s.call(INIT_PRODUCER_ID, version, init_body(None))
    await s.call(INIT_PRODUCER_ID, version, init_body(None), label="again")


@cases("txn/init-transactional", [0, 2, 3, 5], api=INIT_PRODUCER_ID)
async def init_transactional(s: Session, version: int) -> None:
    """A transactional id: its producer id at epoch 0, then the same id at epoch 1."""
    txn = s.name()
    await coordinator_ready(s, txn, TRANSACTION)
    await s.call(INIT_PRODUCER_ID, version, init_body(txn))
    await s.call(INIT_PRODUCER_ID, version, init_body(txn), label="again")


@cases("txn/init-with-current-epoch", ["current", "stale-epoch", "other-producer-id",
                                       "epoch-without-id"], api=INIT_PRODUCER_ID)
async def init_with_current(s: Session, which: str) -> None:
    """v3+ with the producer id and epoch the producer has (KIP-360): the epoch is bumped;
    an older epoch: PRODUCER_FENCED (90); another producer id:
    INVALID_PRODUCER_ID_MAPPING (49); an epoch without an id: INVALID_REQUEST (42)."""
    txn = s.name()
    producer = await init_producer(s, txn)
    await s.call(INIT_PRODUCER_ID, 4, init_body(txn), record=False)  # epoch 1
    producer.epoch += 1
    pid, epoch = producer.producer_id, producer.epoch
    if which == "stale-epoch":
        epoch -= 1
    elif which == "other-producer-id":
        pid += 1000
    elif which == "epoch-without-id":
        pid = -1
    await s.call(INIT_PRODUCER_ID, 4, init_body(txn, producer_id=pid, epoch=epoch))


@case("txn/init-idempotent-with-id", api=INIT_PRODUCER_ID)
async def init_idempotent_with_id(s: Session) -> None:
    """An idempotent producer (no transactional id) that names its producer id and epoch."""
    first = await s.call(INIT_PRODUCER_ID, 4, init_body(None), record=False)
    assert first is not None
    await s.call(INIT_PRODUCER_ID, 4, init_body(None, producer_id=first.producer_id,
                                                  epoch=first.producer_epoch))


@cases("txn/init-invalid-timeout", [0, -1, 900001], api=INIT_PRODUCER_ID)
async def init_invalid_timeout(s: Session, timeout_ms: int) -> None:
    """A timeout not in (0, transaction.max.timeout.ms]: INVALID_TRANSACTION_TIMEOUT (50)."""
    txn = s.name()
    await coordinator_ready(s, txn, TRANSACTION)
    await s.call(INIT_PRODUCER_ID, 4, init_body(txn, timeout_ms=timeout_ms))
    await s.call(INIT_PRODUCER_ID, 4, init_body(None, timeout_ms=timeout_ms),
                 label="idempotent")


@case("txn/init-empty-transactional-id", api=INIT_PRODUCER_ID)
async def init_empty_id(s: Session) -> None:
    await coordinator_ready(s, s.name(), TRANSACTION)
    await s.call(INIT_PRODUCER_ID, 4, init_body(""))


@case("txn/init-denied", api=INIT_PRODUCER_ID)
async def init_denied(s: Session) -> None:
    """alice: a transactional id without WRITE: TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53);
    idempotent without IDEMPOTENT_WRITE or any topic WRITE: CLUSTER_AUTHORIZATION_FAILED."""
    txn = s.name()
    await coordinator_ready(s, txn, TRANSACTION)
    await s.call(INIT_PRODUCER_ID, 4, init_body(txn), user="alice")
    await s.call(INIT_PRODUCER_ID, 4, init_body(None), user="alice", label="idempotent")


@case("txn/init-aborts-ongoing", api=INIT_PRODUCER_ID)
async def init_aborts_ongoing(s: Session) -> None:
    """InitProducerId while a transaction is open: the coordinator aborts it
    (CONCURRENT_TRANSACTIONS, 51, until that completes), then the epoch is bumped; the
    old epoch is fenced."""
    topic = s.name("t")
    producer = await ongoing(s, topic)
    await s.call(INIT_PRODUCER_ID, 4, init_body(producer.transactional_id))

    async def done() -> object:
        answer = await s.call(INIT_PRODUCER_ID, 4, init_body(producer.transactional_id),
                              record=False)
        return answer if answer is not None and answer.error_code == 0 else None
    final = await s.until(done, timeout=10.0, what="the abort")
    s.observe("after abort", {"epoch": final.producer_epoch,
                              "same id": final.producer_id == producer.producer_id})
    await s.call(END_TXN, 3, end_body(producer, True), label="old epoch commits")


@cases("txn/add-partitions", [0, 1, 2, 3], api=ADD_PARTITIONS)
async def add_partitions_ok(s: Session, version: int) -> None:
    """Two partitions of a topic added, then added again (no change)."""
    topic = s.name("t")
    await s.create_topic(topic, 2)
    producer = await init_producer(s, s.name())
    body = add_partitions_body(producer, {topic: [0, 1]})
    await s.call(ADD_PARTITIONS, version, body)
    await s.call(ADD_PARTITIONS, version, body, label="again")


@cases("txn/add-partitions-unknown-topic", [0, 3], api=ADD_PARTITIONS)
async def add_partitions_unknown(s: Session, version: int) -> None:
    """An unknown topic (and a partition beyond a topic's): UNKNOWN_TOPIC_OR_PARTITION (3),
    the rest OPERATION_NOT_ATTEMPTED (55)."""
    topic = s.name("t")
    await s.create_topic(topic, 1)
    producer = await init_producer(s, s.name())
    # compared sorted: Kafka builds this answer from hash maps
    await call_sorted(s, ADD_PARTITIONS, version, add_partitions_body(
        producer, {topic: [0], s.name("missing"): [0]}))
    await call_sorted(s, ADD_PARTITIONS, version, add_partitions_body(producer, {topic: [0, 5]}),
                      label="partition out of range")


@cases("txn/add-partitions-errors", ["stale-epoch", "newer-epoch", "unknown-id",
                                     "other-producer-id", "v2-stale-epoch"],
       api=ADD_PARTITIONS)
async def add_partitions_errors(s: Session, which: str) -> None:
    """A fenced epoch (PRODUCER_FENCED at v3, INVALID_PRODUCER_EPOCH before), a
    transactional id the coordinator does not know or a producer id it did not give:
    INVALID_PRODUCER_ID_MAPPING (49)."""
    topic = s.name("t")
    await s.create_topic(topic, 1)
    producer = await init_producer(s, s.name())
    await s.call(INIT_PRODUCER_ID, 4, init_body(producer.transactional_id), record=False)
    override: dict[str, object] = {"producer_epoch": producer.epoch + 1}
    version = 3
    if which in ("stale-epoch", "v2-stale-epoch"):
        override = {"producer_epoch": producer.epoch}
        version = 2 if which == "v2-stale-epoch" else 3
    elif which == "newer-epoch":
        override = {"producer_epoch": producer.epoch + 5}
    elif which == "unknown-id":
        override["transactional_id"] = s.name("unknown")
        await coordinator_ready(s, s.name("unknown"), TRANSACTION)
    else:
        override["producer_id"] = producer.producer_id + 1000
    await s.call(ADD_PARTITIONS, version, add_partitions_body(producer, {topic: [0]},
                                                               **override))


@case("txn/add-partitions-denied", api=ADD_PARTITIONS)
async def add_partitions_denied(s: Session) -> None:
    """alice without WRITE on the transactional id: 53 for every partition."""
    topic = s.name("t")
    await s.create_topic(topic, 1)
    producer = await init_producer(s, s.name())
    await s.call(ADD_PARTITIONS, 3, add_partitions_body(producer, {topic: [0]}),
                 user="alice")


@case("txn/add-partitions-v4-as-client", api=ADD_PARTITIONS)
async def add_partitions_v4(s: Session) -> None:
    """v4+ is the brokers' batched form: alice (no CLUSTER_ACTION) is refused with
    CLUSTER_AUTHORIZATION_FAILED (31); a super user may verify."""
    topic = s.name("t")
    await s.create_topic(topic, 1)
    producer = await init_producer(s, s.name())
    await add_partitions(s, producer, {topic: [0]})
    body = {"transactions": [{**producer.ids(), "verify_only": True,
                              "topics": [{"name": topic, "partitions": [0]}]}]}
    await s.call(ADD_PARTITIONS, 4, body, user="alice", label="alice")
    await s.call(ADD_PARTITIONS, 4, body, label="super user")


@cases("txn/add-offsets", [0, 2, 3, 4], api=ADD_OFFSETS)
async def add_offsets(s: Session, version: int) -> None:
    producer = await init_producer(s, s.name())
    await s.call(ADD_OFFSETS, version, {**producer.ids(), "group_id": s.name("group")})
    await s.call(ADD_OFFSETS, version, {**producer.ids(), "group_id": s.name("group")},
                 label="again")


@cases("txn/add-offsets-errors", ["stale-epoch", "unknown-id", "denied-group",
                                  "denied-txn"], api=ADD_OFFSETS)
async def add_offsets_errors(s: Session, which: str) -> None:
    producer = await init_producer(s, s.name())
    body = {**producer.ids(), "group_id": s.name("group")}
    user = None
    if which == "stale-epoch":
        await s.call(INIT_PRODUCER_ID, 4, init_body(producer.transactional_id), record=False)
    elif which == "unknown-id":
        await coordinator_ready(s, s.name("unknown"), TRANSACTION)
        body["transactional_id"] = s.name("unknown")
    elif which == "denied-group":
        await grant(s, 5, producer.transactional_id, 4)

        async def applied() -> bool:
            answer = await s.call(ADD_OFFSETS, 3, body, user="alice", record=False)
            return answer is not None and answer.error_code != 53
        await wait_acl(s, applied)
        user = "alice"
    else:
        user = "alice"
    await s.call(ADD_OFFSETS, 3, body, user=user)


@cases("txn/end-commit", [0, 2, 3, 4], api=END_TXN)
async def end_commit(s: Session, version: int) -> None:
    """Commit an open transaction; the same commit again is answered OK (a retry); an
    abort then: INVALID_TXN_STATE (48)."""
    producer = await ongoing(s, s.name("t"))
    await s.call(END_TXN, version, end_body(producer, True))
    await wait_complete(s, producer)
    await s.call(END_TXN, version, end_body(producer, True), label="retry")
    await s.call(END_TXN, version, end_body(producer, False), label="abort after commit")


@cases("txn/end-abort", [0, 3, 4], api=END_TXN)
async def end_abort(s: Session, version: int) -> None:
    producer = await ongoing(s, s.name("t"))
    await s.call(END_TXN, version, end_body(producer, False))
    await wait_complete(s, producer)
    await s.call(END_TXN, version, end_body(producer, True), label="commit after abort")


@cases("txn/end-without-transaction", [True, False], api=END_TXN)
async def end_empty(s: Session, committed: bool) -> None:
    """EndTxn with nothing open: INVALID_TXN_STATE (48)."""
    producer = await init_producer(s, s.name())
    await s.call(END_TXN, 4, end_body(producer, committed))


@cases("txn/end-errors", ["stale-epoch", "unknown-id", "other-producer-id", "denied"],
       api=END_TXN)
async def end_errors(s: Session, which: str) -> None:
    producer = await ongoing(s, s.name("t"))
    body = end_body(producer, True)
    user = None
    if which == "stale-epoch":
        body["producer_epoch"] = producer.epoch - 1
    elif which == "unknown-id":
        await coordinator_ready(s, s.name("unknown"), TRANSACTION)
        body["transactional_id"] = s.name("unknown")
    elif which == "other-producer-id":
        body["producer_id"] = producer.producer_id + 1000
    else:
        user = "alice"
    await s.call(END_TXN, 4, body, user=user)
    await s.call(END_TXN, 4, end_body(producer, False), label="then abort")


@cases("txn/end-v5", [True, False], api=END_TXN)
async def end_v5(s: Session, committed: bool) -> None:
    """Transactions v2 (KIP-890): InitProducerId v5, Produce v12 adds the partition
    itself, EndTxn v5 answers with the producer id and the bumped epoch, which the next
    transaction uses."""
    topic = s.name("t")
    await s.create_topic(topic, 1)
    producer = await init_producer(s, s.name(), version=5)
    await produce_settled(s, producer, topic, [b"a"], version=12)
    ended = await s.call(END_TXN, 5, end_body(producer, committed))
    assert ended is not None
    bumped = Producer(producer.transactional_id, ended.producer_id, ended.producer_epoch)
    await produce_settled(s, bumped, topic, [b"b"], version=12, label="second produce")
    await s.call(END_TXN, 5, end_body(bumped, committed), label="second")
    await wait_complete(s, bumped)
    await s.call(END_TXN, 5, end_body(producer, committed), label="old epoch")


@case("txn/end-v5-empty", api=END_TXN)
async def end_v5_empty(s: Session) -> None:
    """EndTxn v5 with nothing open."""
    producer = await init_producer(s, s.name(), version=5)
    await s.call(END_TXN, 5, end_body(producer, True))
    await s.call(END_TXN, 5, end_body(producer, False), label="abort")


@case("txn/produce-without-add-partitions", api=ADD_PARTITIONS)
async def produce_unadded(s: Session) -> None:
    """A transactional batch at Produce v11 to a partition not added to the transaction."""
    topic = s.name("t")
    await s.create_topic(topic, 1)
    producer = await init_producer(s, s.name())

    async def answered() -> object:
        # Kafka's leader verifies with the coordinator first: NOT_LEADER_OR_FOLLOWER while
        # that is not reachable yet (a client retries it)
        answer = await produce_txn(s, producer, topic, [b"x"])
        error = answer.responses[0].partition_responses[0].error_code
        return answer if error != 6 else None
    await s.until(answered, timeout=10.0, what="a verified answer")
    await produce_txn(s, producer, topic, [b"x"], record=True)


@case("txn/end-v5-retry", api=END_TXN)
async def end_v5_retry(s: Session) -> None:
    """A retried EndTxn v5 (the epoch from before the bump) after the transaction
    completed is answered OK with the bumped epoch; with the other result:
    PRODUCER_FENCED or INVALID_TXN_STATE as Kafka decides."""
    topic = s.name("t")
    await s.create_topic(topic, 1)
    producer = await init_producer(s, s.name(), version=5)
    await produce_settled(s, producer, topic, [b"a"], version=12)
    await s.call(END_TXN, 5, end_body(producer, True))
    await wait_complete(s, producer)
    await s.call(END_TXN, 5, end_body(producer, True), label="retry")
    await s.call(END_TXN, 5, end_body(producer, False), label="other result")


@cases("txn/empty-ids", ["add-offsets-group", "end-txn", "add-partitions"], api=END_TXN)
async def empty_ids(s: Session, which: str) -> None:
    """Empty identifiers: AddOffsetsToTxn for the group "", EndTxn and AddPartitionsToTxn
    for the transactional id ""."""
    producer = await init_producer(s, s.name())
    if which == "add-offsets-group":
        await s.call(ADD_OFFSETS, 3, {**producer.ids(), "group_id": ""})
    elif which == "end-txn":
        await s.call(END_TXN, 3, {**producer.ids(), "transactional_id": "",
                                  "committed": True})
    else:
        topic = s.name("t")
        await s.create_topic(topic, 1)
        await s.call(ADD_PARTITIONS, 3, add_partitions_body(producer, {topic: [0]},
                                                            transactional_id=""))


@case("txn/init-new-timeout", api=INIT_PRODUCER_ID)
async def init_new_timeout(s: Session) -> None:
    """InitProducerId again with another timeout: DescribeTransactions shows the new one."""
    producer = await init_producer(s, s.name())
    await s.call(INIT_PRODUCER_ID, 4, init_body(producer.transactional_id, timeout_ms=12345))
    await s.call(65, 0, {"transactional_ids": [producer.transactional_id]})
