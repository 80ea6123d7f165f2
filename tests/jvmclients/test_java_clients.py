"""The Java client (kafka-clients, the version tests/jvm/pom.xml pins) as a real client: the
programs of tests/jvm/src/main/java/io/mockbroker/jvmclients run against mockbroker
(in-process) and against the session's real Kafka at the same time (all of the module's
programs start together when the first test asks), and what they observe must agree, and
equal the exact outcome written here.

- ProducerChecks: an idempotent producer (partitions, offsets, headers, timestamps, the
  broker's producer state) and a transactional one that commits, aborts and commits, which
  negotiates transactions v2 (KIP-890 part 2). The proof of v2: the client's own flag, the
  coordinator bumping the producer epoch at every EndTxn (both sides, DescribeTransactions),
  and, from mockbroker's request trace, EndTxn v5, Produce v12 and TxnOffsetCommit v5 with
  no AddPartitionsToTxn or AddOffsetsToTxn at all.
- ConsumerChecks, for group.protocol classic and consumer (KIP-848): the rebalance
  listener's calls as two consumers share a topic and leave, the records each consumed,
  commits, a third consumer resuming from the committed positions, and
  committed/beginningOffsets/endOffsets/offsetsForTimes/seek/position; with the classic
  protocol also a consumer that exceeds max.poll.interval.ms and loses its partitions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.embedded import MockClusterThread
from tests.jvmclients.java_programs import (
    Observation,
    SideBySide,
    fetch_order_normalised,
    of_kind,
    records,
)
from tests.support.real_kafka import RealKafka

TRANSACTION_APIS = ["Produce", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn",
                    "TxnOffsetCommit", "InitProducerId"]


PRODUCER_PREFIX = "jvmclients-producer"
PROGRAMS = {"producer": ("ProducerChecks", PRODUCER_PREFIX),
            "classic": ("ConsumerChecks", "jvmclients-group", "classic"),
            "consumer": ("ConsumerChecks", "jvmclients-group", "consumer")}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockClusterThread]:
    """One mockbroker for the module's programs (their topics and groups are distinct)."""
    with MockClusterThread(brokers=3, trace_buffer=50_000) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def programs(mock: MockClusterThread, real_kafka: RealKafka) -> Iterator[dict[str, SideBySide]]:
    """Every program of the module started at once against both clusters (the rebalances
    and transactions mostly wait on timers, so they overlap well); each test collects its
    own."""
    targets = {"mockbroker": mock.bootstrap_servers, "real Kafka": real_kafka.bootstrap_servers}
    started: dict[str, SideBySide] = {}
    try:
        for name, (program, *args) in PROGRAMS.items():
            started[name] = SideBySide(program, targets, *args)
        yield started
    finally:
        for run in started.values():
            run.stop()


def _results(programs: dict[str, SideBySide], name: str
             ) -> tuple[list[Observation], list[Observation]]:
    runs = programs[name].observations()
    return (fetch_order_normalised(runs["mockbroker"]),
            fetch_order_normalised(runs["real Kafka"]))


def test_idempotent_and_transactional_producer(mock: MockClusterThread,
                                               programs: dict[str, SideBySide]) -> None:
    ours, real = _results(programs, "producer")

    # idempotent: the default partitioner (murmur2 of the key over 3 partitions), headers
    # (a null value included) and timestamps as sent (the programs show timestamps in ms
    # from their base time), one producer per partition with its
    # last sequence
    expected_acks = [(1, 0), (0, 0), (2, 0), (2, 1), (0, 1), (2, 2), (2, 3), (2, 4), (2, 5)]
    assert [(o["v"], o["p"], o["o"], o["ts"]) for o in of_kind(real, "acked")] == [
        (f"value-{i}", p, offset, i) for i, (p, offset) in enumerate(expected_acks)]
    assert [(o["p"], o["producers"]) for o in of_kind(real, "producer_state")] == [
        (p, [{"id_set": True, "epoch": 0, "last_sequence": last, "in_txn": False}])
        for p, last in ((0, 1), (1, 0), (2, 5))]
    idem = of_kind(real, "read", topic="idem")
    assert [(o["record"]["p"], o["record"]["o"], o["record"]["v"], o["record"]["h"])
            for o in idem] == sorted(
        (p, offset, f"value-{i}", [["n", str(i)], ["empty", None]] if i < 6 else [])
        for i, (p, offset) in enumerate(expected_acks))

    # transactional: commit, abort, commit; every EndTxn bumps the epoch (v2)
    assert of_kind(real, "txn_init") == [{
        "kind": "txn_init", "tv2": True, "client_epoch": 0,
        "coordinator": {"state": "Empty", "epoch": 0, "partitions": 0}}]
    assert [(o["txn"], o["commit"], o["tv2"], o["client_epoch"], o["coordinator"])
            for o in of_kind(real, "txn_end")] == [
        (0, True, True, 1, {"state": "CompleteCommit", "epoch": 1, "partitions": 0}),
        (1, False, True, 2, {"state": "CompleteAbort", "epoch": 2, "partitions": 0}),
        (2, True, True, 3, {"state": "CompleteCommit", "epoch": 3, "partitions": 0})]
    assert [(o["txn"], o["v"], o["p"], o["o"]) for o in of_kind(real, "txn_acked")] == [
        (0, "a", 0, 0), (0, "b", 1, 0), (0, "c", 0, 1), (1, "d", 0, 3), (1, "e", 1, 2),
        (2, "f", 1, 4)]
    assert of_kind(real, "txn_group_offsets") == [
        {"kind": "txn_group_offsets", "offsets": {"0": [12, "t2"]}}]
    # offsets 2 (p0) and 1, 3, 5 (p1) are the control records
    assert records(real, "read", topic="txn", isolation="read_committed") == [
        (0, 0, "t0", "a"), (0, 1, "t0", "c"), (1, 0, "t0", "b"), (1, 4, "t2", "f")]
    assert records(real, "read", topic="txn", isolation="read_uncommitted") == [
        (0, 0, "t0", "a"), (0, 1, "t0", "c"), (0, 3, "t1", "d"), (1, 0, "t0", "b"),
        (1, 2, "t1", "e"), (1, 4, "t2", "f")]

    assert ours == real

    # mockbroker's trace: the transactional client used the v2 request forms only
    client = f"producer-{PRODUCER_PREFIX}-tx"
    traced = [(r["api"], r["version"]) for r in mock.control.trace(None)["requests"]
              if r["client_id"] == client and r["api"] in TRANSACTION_APIS]
    assert sorted(set(traced)) == [("EndTxn", 5), ("InitProducerId", 5), ("Produce", 12),
                                   ("TxnOffsetCommit", 5)]
    assert [api for api, _ in traced].count("EndTxn") == 3


def _rebalances(observations: list[Observation], consumer: str) -> list[tuple[str, list[int]]]:
    """The consumer's listener calls, an empty assignment that the next assignment follows
    left out: whether a KIP-848 member is told "nothing yet" before its partitions depends
    on when Kafka 4.3+'s batched assignor (KIP-1263) runs, not on what it assigns."""
    events = [(o["event"], o["partitions"])
              for o in of_kind(observations, "rebalance", consumer=consumer)]
    return [event for i, event in enumerate(events)
            if not (event == ("assigned", []) and i + 1 < len(events)
                    and events[i + 1][0] == "assigned")]


def _without_rebalances(observations: list[Observation]) -> list[Observation]:
    return [o for o in observations if o["kind"] != "rebalance"]


# what each consumer's ConsumerRebalanceListener sees: classic (eager, the range assignor
# first in the default list) revokes everything at each rebalance; KIP-848 revokes and adds
# only what moves (an empty call before a member's partitions arrive is left out: _rebalances)
REBALANCES: dict[str, dict[str, list[tuple[str, list[int]]]]] = {
    "classic": {
        "a": [("assigned", [0, 1, 2, 3]), ("revoked", [0, 1, 2, 3]), ("assigned", [0, 1]),
              ("revoked", [0, 1]), ("assigned", [0, 1, 2, 3]), ("revoked", [0, 1, 2, 3])],
        "b": [("assigned", [2, 3]), ("revoked", [2, 3])],
        "c": [("assigned", [0, 1, 2, 3]), ("revoked", [0, 1, 2, 3])],
        # past max.poll.interval.ms: the next poll reports the partitions lost and rejoins
        "d": [("assigned", [0, 1, 2, 3]), ("lost", [0, 1, 2, 3]), ("assigned", [0, 1, 2, 3]),
              ("revoked", [0, 1, 2, 3])]},
    "consumer": {
        "a": [("assigned", [0, 1, 2, 3]), ("revoked", [2, 3]), ("assigned", [2, 3]),
              ("revoked", [0, 1, 2, 3])],
        "b": [("assigned", [2, 3]), ("revoked", [2, 3])],
        "c": [("assigned", [0, 1, 2, 3]), ("revoked", [0, 1, 2, 3])],
        "d": []},
}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consumer_group(programs: dict[str, SideBySide], protocol: str) -> None:
    ours, real = _results(programs, protocol)

    for name in ("a", "b", "c", "d"):
        assert _rebalances(real, name) == REBALANCES[protocol][name], name
        assert _rebalances(ours, name) == _rebalances(real, name), name
    assert [(o["name"], o.get("a"), o.get("b")) for o in of_kind(real, "step")] == [
        ("a alone", [0, 1, 2, 3], None), ("a and b", [0, 1], [2, 3]), ("b closed", None, None),
        ("a closed", None, None)] + ([("d slept", None, None)] if protocol == "classic" else [])
    assert records(real, "consumed", consumer="a") == [
        (p, r, f"k{p}-{r}", f"v{p}-{r}") for p in (0, 1) for r in (0, 1)]
    assert records(real, "consumed", consumer="b") == [
        (p, r, f"k{p}-{r}", f"v{p}-{r}") for p in (2, 3) for r in (0, 1)]
    # c resumes from the committed offsets: only the third round
    assert records(real, "consumed", consumer="c") == [
        (p, 2, f"k{p}-2", f"v{p}-2") for p in range(4)]
    consumed = of_kind(real, "consumed", consumer="c")
    assert [(o["record"]["ts"], o["record"]["h"]) for o in consumed] == [
        ((8 + p) * 1000, [["round", "2"]]) for p in range(4)]
    committed = {str(p): [2, ""] for p in range(4)}
    offsets: list[tuple[Any, ...]] = [(o["what"], o.get("at"), o["offsets"])
                                      for o in of_kind(real, "offsets")]
    assert offsets == [
        ("committed", None, committed),
        ("beginning", None, {str(p): 0 for p in range(4)}),
        ("end", None, {str(p): 3 for p in range(4)}),
        # the first record at or after +5 s: p0 has 0, 4, 8 s; p1 1, 5, 9 s; ...
        ("for_time", 5000, {"0": [2, 8000], "1": [1, 5000], "2": [1, 6000], "3": [1, 7000]}),
        ("for_time", 1000000, {str(p): None for p in range(4)}),
        ("positions after seeks", None, {"0": 1, "1": 0, "2": 3, "3": 3}),
        ("committed with metadata", None, {**committed, "3": [1, "meta-3"]})]
    assert of_kind(real, "committed") == [{"kind": "committed", "by": "a", "offsets": committed}]
    assert records(real, "consumed", consumer="c after seeks") == [
        (0, 1, "k0-1", "v0-1"), (0, 2, "k0-2", "v0-2"), (1, 0, "k1-0", "v1-0"),
        (1, 1, "k1-1", "v1-1"), (1, 2, "k1-2", "v1-2")]

    assert _without_rebalances(ours) == _without_rebalances(real)
