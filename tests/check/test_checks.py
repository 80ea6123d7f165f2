"""The checks of mockbroker.check against handmade histories.

A clean history (two producers, one idempotent and one transactional, a committed and an
aborted transaction over two partitions, a consumer reading both partitions from the
beginning, a complete final read) has no anomaly; each test plants one defect into it and
asserts exactly the anomaly the checker reports: kind, partition and details. No cluster,
no client: the checker is a pure function of the history.
"""

from __future__ import annotations

import json

import pytest

from mockbroker.check import checks
from mockbroker.check.checks import Anomaly, check
from mockbroker.check.history import (
    FINAL_CONSUMER,
    MODE_ASSIGN,
    MODE_FINAL,
    MODE_SUBSCRIBE,
    TXN_ABORTED,
    TXN_COMMITTED,
    TXN_INDETERMINATE,
    TXN_UNFINISHED,
    Ack,
    FaultEvent,
    FinalRead,
    History,
    Read,
    Session,
    Txn,
    Write,
)
from mockbroker.check.report import build_report, summary_line

TOPIC = "t"


class Builder:
    """A history written by hand, event by event; times rise by 1 per event."""

    def __init__(self, partitions: int = 2) -> None:
        self.h = History(TOPIC, partitions, meta={"seed": 1, "mix": "none"})
        self.t = 0.0
        self.sessions: dict[tuple[str, int], int] = {}

    def now(self) -> float:
        self.t += 1.0
        return self.t

    def write(self, producer: str, seq: int, partition: int, offset: int | None = None,
              txn: str | None = None, error: str | None = None) -> str:
        value = f"{producer}.{seq}"
        self.h.writes.append(Write(value, producer, seq, partition, txn, self.now()))
        if offset is not None or error is not None:
            self.h.acks.append(Ack(value, offset, error, self.now()))
        return value

    def txn(self, txn_id: str, producer: str, values: list[str], outcome: str,
            commit_at: float | None = None) -> None:
        if commit_at is None and outcome in (TXN_COMMITTED, TXN_INDETERMINATE):
            commit_at = self.now()
        self.h.txns.append(Txn(txn_id, producer, tuple(values), outcome, commit_at,
                               self.now()))

    def session(self, consumer: str, partition: int, mode: str = MODE_ASSIGN,
                start: int | None = 0) -> int:
        number = len([s for s in self.h.sessions if s.consumer == consumer])
        self.h.sessions.append(Session(consumer, number, partition, mode, start, self.now()))
        self.sessions[(consumer, partition)] = number
        return number

    def read(self, consumer: str, partition: int, offset: int, value: str,
             at: float | None = None) -> None:
        session = self.sessions[(consumer, partition)]
        self.h.reads.append(Read(consumer, session, partition, offset, value,
                                 self.now() if at is None else at))

    def final(self, log: dict[int, dict[int, str]], target: dict[int, int],
              reached: dict[int, int] | None = None) -> None:
        for partition, entries in sorted(log.items()):
            self.session(FINAL_CONSUMER, partition, MODE_FINAL, 0)
            for offset, value in sorted(entries.items()):
                self.read(FINAL_CONSUMER, partition, offset, value)
        self.h.final = FinalRead(dict(target), dict(reached or target), self.now())


def clean(*, skip_final: bool = False) -> tuple[Builder, dict[int, dict[int, str]]]:
    """The clean history without its final read, and the log the final read would show.

    partition 0: i.0@0 i.1@1 x.0@2 (txn x/0, committed) marker@3 x.2@4 (txn x/1, aborted)
                 marker@5 i.2@6
    partition 1: x.1@0 (txn x/0) marker@1 x.3@2 (txn x/1) marker@3 i.3@4
    """
    b = Builder()
    i0 = b.write("i", 0, 0, 0)
    i1 = b.write("i", 1, 0, 1)
    x0 = b.write("x", 0, 0, 2, txn="x/0")
    x1 = b.write("x", 1, 1, 0, txn="x/0")
    b.txn("x/0", "x", [x0, x1], TXN_COMMITTED)
    x2 = b.write("x", 2, 0, 4, txn="x/1")
    x3 = b.write("x", 3, 1, 2, txn="x/1")
    b.txn("x/1", "x", [x2, x3], TXN_ABORTED)
    i2 = b.write("i", 2, 0, 6)
    i3 = b.write("i", 3, 1, 4)
    b.session("c", 0)
    b.session("c", 1)
    for offset, value in ((0, i0), (1, i1), (2, x0), (6, i2)):
        b.read("c", 0, offset, value)
    for offset, value in ((0, x1), (4, i3)):
        b.read("c", 1, offset, value)
    log = {0: {0: i0, 1: i1, 2: x0, 6: i2}, 1: {0: x1, 4: i3}}
    return b, log


def finished(b: Builder, log: dict[int, dict[int, str]],
             reached: dict[int, int] | None = None) -> History:
    b.final(log, {0: 7, 1: 5}, reached)
    return b.h


def only(anomalies: list[Anomaly]) -> Anomaly:
    assert len(anomalies) == 1, [a.message for a in anomalies]
    return anomalies[0]


def test_the_clean_history_has_no_anomaly() -> None:
    b, log = clean()
    assert check(finished(b, log)) == []


def test_one_offset_two_values() -> None:
    """A write that failed for its producer is read at an offset that the final log fills
    with another value (a stale leader served what it later lost)."""
    b, log = clean()
    ghost = b.write("i", 4, 0, error="REQUEST_TIMED_OUT")
    b.session("c2", 0, MODE_SUBSCRIBE, None)
    b.read("c2", 0, 6, ghost)
    found = only(check(finished(b, log)))
    assert found.kind == checks.DUPLICATE_OFFSET and found.partition == 0
    assert found.details == {"offset": 6, "values": {"i.2": ["ack:i", "read:c", "read:final"],
                                                     "i.4": ["read:c2"]}}


def test_acknowledged_on_a_deposed_leader_then_lost() -> None:
    """The stale-leader defect's shape: acknowledged at an offset the final log gives to
    another value: one offset with two values, and a lost write."""
    b, log = clean()
    b.write("i", 4, 0, 6)
    kinds = sorted(a.kind for a in check(finished(b, log)))
    assert kinds == [checks.DUPLICATE_OFFSET, checks.LOST_WRITE]


def test_one_value_two_offsets() -> None:
    b, log = clean()
    log[0][7] = "i.2"  # written twice
    b.h.final = None
    b.final(log, {0: 8, 1: 5})
    found = only(check(b.h))
    assert found.kind == checks.DUPLICATE_VALUE and found.partition == 0
    assert found.details["value"] == "i.2"
    assert [(p["partition"], p["offset"]) for p in found.details["positions"]] == [(0, 6),
                                                                                    (0, 7)]


def test_acknowledged_write_missing() -> None:
    b, log = clean()
    del log[0][6]  # i.2, acknowledged at 6 and read by c, gone from the log
    found = only(check(finished(b, log)))
    assert found.kind == checks.LOST_WRITE and found.partition == 0
    assert found.details == {"value": "i.2", "offset": 6, "producer": "i", "txn": None,
                             "read_during_run_by": ["c"]}


def test_a_failed_write_may_be_missing() -> None:
    b, log = clean()
    b.write("i", 4, 1, error="MSG_TIMED_OUT")
    b.write("i", 5, 1)  # never answered
    assert check(finished(b, log)) == []


def test_final_read_short_of_the_end() -> None:
    """Values past where the final read stopped are reported as unchecked, not lost."""
    b, log = clean()
    del log[1][4]
    found = only(check(finished(b, log, reached={0: 7, 1: 2})))
    assert found.kind == checks.FINAL_READ_INCOMPLETE and found.partition == 1
    assert found.details == {"target": 5, "reached": 2, "unverified": 1,
                             "examples": ["i.3"]}


def test_no_final_read() -> None:
    b, _ = clean()
    found = only(check(b.h))
    assert found.kind == checks.FINAL_READ_INCOMPLETE and found.partition is None


def test_aborted_value_read() -> None:
    b, log = clean()
    b.h.reads = [r for r in b.h.reads if not (r.consumer == "c" and r.partition == 0
                                              and r.offset == 6)]
    b.read("c", 0, 4, "x.2")  # between x.0@2 and i.2@6, in offset order
    b.read("c", 0, 6, "i.2")
    found = only(check(finished(b, log)))
    assert found.kind == checks.ABORTED_READ and found.partition == 0
    assert (found.details["consumer"], found.details["value"], found.details["txn"]) == (
        "c", "x.2", "x/1")


def test_value_read_before_its_commit_was_asked_for() -> None:
    b = Builder()
    x0 = b.write("x", 0, 0, 0, txn="x/0")
    b.session("c", 0)
    b.read("c", 0, 0, x0)  # at t=4
    b.txn("x/0", "x", [x0], TXN_COMMITTED)  # commit asked at t=5
    b.final({0: {0: x0}}, {0: 2, 1: 0})
    found = only(check(b.h))
    assert found.kind == checks.UNCOMMITTED_READ
    assert found.details["read_at"] < found.details["commit_at"]


def test_value_of_a_transaction_never_committed_read() -> None:
    b, log = clean()
    x4 = b.write("x", 4, 1, 6, txn="x/2")
    b.txn("x/2", "x", [x4], TXN_UNFINISHED)
    b.session("c2", 1, MODE_SUBSCRIBE, None)
    b.read("c2", 1, 6, x4)
    found = only(check(finished(b, log)))
    assert found.kind == checks.UNCOMMITTED_READ and found.details["outcome"] == TXN_UNFINISHED


def test_reading_after_the_commit_request_is_fine() -> None:
    """A consumer may see a value once the commit was asked for, before it is confirmed,
    and a value of an indeterminate transaction."""
    b = Builder()
    x0 = b.write("x", 0, 0, 0, txn="x/0")
    b.txn("x/0", "x", [x0], TXN_INDETERMINATE)
    b.session("c", 0)
    b.read("c", 0, 0, x0)
    b.final({0: {0: x0}}, {0: 2, 1: 0})
    assert check(b.h) == []


def test_partial_transaction() -> None:
    """An indeterminate transaction may be all there or all gone, never half."""
    b, log = clean()
    x4 = b.write("x", 4, 0, 7, txn="x/2")
    x5 = b.write("x", 5, 1, 5, txn="x/2")
    b.txn("x/2", "x", [x4, x5], TXN_INDETERMINATE)
    log[0][7] = x4
    b.final(log, {0: 9, 1: 7})  # x.5 not in the log although partition 1 was read to its end
    found = only(check(b.h))
    assert found.kind == checks.PARTIAL_TXN
    assert found.details == {"txn": "x/2", "outcome": TXN_INDETERMINATE,
                             "visible": ["x.4"], "missing": ["x.5"]}


def test_committed_transaction_half_lost() -> None:
    """The lost commit marker's shape: half of a committed transaction hidden."""
    b, log = clean()
    del log[1][0]  # x.1 of the committed x/0
    kinds = sorted(a.kind for a in check(finished(b, log)))
    assert kinds == [checks.LOST_WRITE, checks.PARTIAL_TXN]


def test_read_going_backwards() -> None:
    b, log = clean()
    b.read("c", 0, 1, "i.1")  # after 6, in the same session
    found = only(check(finished(b, log)))
    assert found.kind == checks.READ_BACKWARDS and found.partition == 0
    assert (found.details["previous"], found.details["offset"]) == (6, 1)


def test_a_new_session_may_start_anywhere() -> None:
    b, log = clean()
    b.session("c", 0, MODE_SUBSCRIBE, None)  # a rebalance gave it the partition again
    b.read("c", 0, 1, "i.1")
    assert check(finished(b, log)) == []


def test_read_skipping_a_visible_value() -> None:
    b, log = clean()
    b.h.reads = [r for r in b.h.reads if not (r.consumer == "c" and r.offset == 1
                                              and r.partition == 0)]
    found = only(check(finished(b, log)))
    assert found.kind == checks.READ_SKIP and found.partition == 0
    assert (found.details["previous"], found.details["offset"],
            found.details["skipped_values"]) == (0, 2, ["i.1"])


def test_skip_from_a_known_start() -> None:
    """An assignment from the beginning must start at the first visible value."""
    b, log = clean()
    b.h.reads = [r for r in b.h.reads if not (r.consumer == "c" and r.partition == 1
                                              and r.offset == 0)]
    found = only(check(finished(b, log)))
    assert found.kind == checks.READ_SKIP and found.details["skipped_values"] == ["x.1"]


def test_producer_reordering() -> None:
    b, log = clean()
    i4 = b.write("i", 4, 1, 6)
    i5 = b.write("i", 5, 1, 5)  # sent after i.4, placed before it
    log[1].update({5: i5, 6: i4})
    b.final(log, {0: 7, 1: 7})
    found = only(check(b.h))
    assert found.kind == checks.REORDER and found.partition == 1
    assert (found.details["earlier_sent"]["value"], found.details["later_sent"]["value"]) == (
        "i.4", "i.5")


def test_unknown_value_read() -> None:
    b, log = clean()
    b.session("c2", 1, MODE_SUBSCRIBE, None)
    b.read("c2", 1, 9, "zz.1")
    found = only(check(finished(b, log)))
    assert found.kind == checks.UNKNOWN_VALUE and found.details["value"] == "zz.1"


@pytest.mark.parametrize("kind", sorted(checks.KINDS))
def test_every_kind_has_a_planted_test(kind: str) -> None:
    source = open(__file__, encoding="utf-8").read()
    name = {"duplicate-offset": "DUPLICATE_OFFSET", "duplicate-value": "DUPLICATE_VALUE",
            "lost-write": "LOST_WRITE", "final-read-incomplete": "FINAL_READ_INCOMPLETE",
            "aborted-read": "ABORTED_READ", "uncommitted-read": "UNCOMMITTED_READ",
            "partial-txn": "PARTIAL_TXN", "read-backwards": "READ_BACKWARDS",
            "read-skip": "READ_SKIP", "reorder": "REORDER",
            "unknown-value": "UNKNOWN_VALUE"}[kind]
    assert f"found.kind == checks.{name}" in source


def test_history_round_trips_through_json() -> None:
    b, log = clean()
    del log[0][6]
    history = finished(b, log)
    again = History.from_json(json.loads(json.dumps(history.to_json())))
    assert again == history
    assert check(again) == check(history)


def test_report_names_the_anomalies() -> None:
    b, log = clean()
    del log[0][6]
    history = finished(b, log)
    anomalies = check(history)
    line = summary_line(history, anomalies)
    assert line.endswith("anomalies: lost-write=1")
    assert "seed=1 faults=none" in line
    report = build_report(history, anomalies)
    assert report["valid"] is False
    assert report["anomalies"]["lost-write"]["count"] == 1
    assert report["anomalies"]["lost-write"]["examples"][0]["value"] == "i.2"
    assert report["figures"]["txn_outcomes"][TXN_COMMITTED] == 1
    json.dumps(report)
    b2, log2 = clean()
    for step, kind, verb in ((0, "elect-lagging", "delay-replication"),
                             (0, "elect-lagging", "elect-leader"), (1, "elect", "elect-leader"),
                             (-1, "heal", "resume-replication")):
        b2.h.faults.append(FaultEvent(b2.now(), step, kind, verb, {}))
    history2 = finished(b2, log2)
    assert summary_line(history2, []).endswith("faults=2 anomalies: none")
    figures = build_report(history2, [])["figures"]
    assert (figures["faults"], figures["fault_verbs"], figures["faults_by_kind"]) == (
        2, 3, {"elect": 1, "elect-lagging": 1})
