"""The checks: pure functions from a History (history.py) to the anomalies it shows.

Theory of operation: every check reads the whole history and answers a list of Anomaly,
each with its kind, a one-line message and JSON details (the values, offsets, consumers and
transactions involved). `check(history)` runs them all. The rules, and why each is sound
against the real clients' guarantees (idempotent and transactional producers, acks=all,
read_committed consumers):

- duplicate-offset: one (partition, offset) seen holding two different values, by the
  producers' acknowledgements and the consumers' reads together. A log position holds one
  record forever.
- duplicate-value: one value seen at two positions. Every value is sent once, by an
  idempotent or transactional producer, so it is written once.
- lost-write: a value that must be in the log (acknowledged and not transactional, or in a
  committed transaction) is missing from the final read, where that read covered the
  value's position (its partition read to the end, or past the acknowledged offset).
- final-read-incomplete: the final read did not reach the end of a partition (the high
  watermark once writes stopped), so what lies past it could not be checked.
- aborted-read: a read_committed consumer read a value of an aborted transaction.
- uncommitted-read: it read a value of a transaction that never asked to commit, or read
  it before the producer asked to commit (both times come from one monotonic clock, and a
  read is recorded after the client returned it).
- partial-txn: the final read shows some values of a committed (or indeterminate)
  transaction and, where it covered their positions, not the others.
- read-backwards: within one session (one consumer reading one partition without a
  rebalance or reassignment between), an offset not above the one before.
- read-skip: within a session, a jump over an offset where the final read found a visible
  value (read_committed legitimately jumps over aborted records and transaction markers,
  which the final read does not show either). A session with a known start (the
  assignments that start from the beginning) is checked from that start.
- reorder: one producer's values in one partition at offsets out of their send order, in
  the acknowledgements or in the final read.
- unknown-value: a consumer read a value no producer of the run sent.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mockbroker.check.history import (
    FINAL_CONSUMER,
    TXN_ABORTED,
    TXN_COMMITTED,
    TXN_INDETERMINATE,
    TXN_UNFINISHED,
    Ack,
    History,
    Read,
    Txn,
    Write,
)

DUPLICATE_OFFSET = "duplicate-offset"
DUPLICATE_VALUE = "duplicate-value"
LOST_WRITE = "lost-write"
FINAL_READ_INCOMPLETE = "final-read-incomplete"
ABORTED_READ = "aborted-read"
UNCOMMITTED_READ = "uncommitted-read"
PARTIAL_TXN = "partial-txn"
READ_BACKWARDS = "read-backwards"
READ_SKIP = "read-skip"
REORDER = "reorder"
UNKNOWN_VALUE = "unknown-value"

KINDS: dict[str, str] = {
    DUPLICATE_OFFSET: "one offset holding two values",
    DUPLICATE_VALUE: "one value at two offsets",
    LOST_WRITE: "an acknowledged or committed write missing from the final read",
    FINAL_READ_INCOMPLETE: "the final read did not reach a partition's end",
    ABORTED_READ: "a read_committed consumer read an aborted value",
    UNCOMMITTED_READ: "a read_committed consumer read a value before (or without) its commit",
    PARTIAL_TXN: "some values of a committed transaction visible, others not",
    READ_BACKWARDS: "a consumer's offsets went backwards within one assignment",
    READ_SKIP: "a consumer skipped a visible value within one assignment",
    REORDER: "one producer's values out of send order in a partition",
    UNKNOWN_VALUE: "a consumer read a value nobody sent",
}
MAX_LISTED = 10  # values or offsets named in one anomaly's details


@dataclass(frozen=True)
class Anomaly:
    kind: str
    message: str
    partition: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "partition": self.partition, "message": self.message,
                **self.details}


class _Index:
    """Lookups shared by the checks."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.writes: dict[str, Write] = {}
        for write in history.writes:
            self.writes.setdefault(write.value, write)
        self.acks: dict[str, list[Ack]] = defaultdict(list)
        for ack in history.acks:
            self.acks[ack.value].append(ack)
        self.txns: dict[str, Txn] = {t.id: t for t in history.txns}
        self.final_reads = [r for r in history.reads if r.consumer == FINAL_CONSUMER]
        self.final_positions: dict[str, set[tuple[int, int]]] = defaultdict(set)
        self.final_by_offset: dict[int, dict[int, str]] = defaultdict(dict)
        for read in self.final_reads:
            self.final_positions[read.value].add((read.partition, read.offset))
            self.final_by_offset[read.partition][read.offset] = read.value
        self.read_by: dict[str, set[str]] = defaultdict(set)
        for read in history.reads:
            self.read_by[read.value].add(read.consumer)

    def ack_offset(self, value: str) -> int | None:
        """The offset of the value's first successful acknowledgement."""
        for ack in self.acks.get(value, ()):
            if ack.ok:
                return ack.offset
        return None

    def txn_of(self, value: str) -> Txn | None:
        write = self.writes.get(value)
        if write is None or write.txn is None:
            return None
        return self.txns.get(write.txn)

    def must_survive(self, value: str) -> bool:
        """Acknowledged and idempotent only, or part of a committed transaction."""
        write = self.writes[value]
        if write.txn is None:
            return self.ack_offset(value) is not None
        txn = self.txns.get(write.txn)
        return txn is not None and txn.outcome == TXN_COMMITTED

    def never_visible(self, value: str) -> bool:
        """A value of an aborted or unfinished transaction."""
        txn = self.txn_of(value)
        return txn is not None and txn.outcome in (TXN_ABORTED, TXN_UNFINISHED)

    def covered(self, value: str) -> bool | None:
        """Did the final read cover the value's position? None when there is no final read;
        the value's partition read to its end, or past its acknowledged offset."""
        final = self.history.final
        if final is None:
            return None
        partition = self.writes[value].partition
        if final.complete(partition):
            return True
        offset = self.ack_offset(value)
        return offset is not None and offset < final.reached.get(partition, 0)


def _names(items: Iterable[str]) -> list[str]:
    return sorted(items)[:MAX_LISTED]


# -- positions ------------------------------------------------------------------------------

def _observations(index: _Index) -> Iterable[tuple[str, int, int, str]]:
    """(value, partition, offset, source) for every acknowledgement and every read."""
    for ack in index.history.acks:
        write = index.writes.get(ack.value)
        if ack.ok and write is not None and ack.offset is not None:
            yield ack.value, write.partition, ack.offset, f"ack:{write.producer}"
    for read in index.history.reads:
        yield read.value, read.partition, read.offset, f"read:{read.consumer}"


def duplicate_offsets(history: History, index: _Index | None = None) -> list[Anomaly]:
    index = index or _Index(history)
    seen: dict[tuple[int, int], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for value, partition, offset, source in _observations(index):
        seen[(partition, offset)][value].add(source)
    out = []
    for (partition, offset), values in sorted(seen.items()):
        if len(values) < 2:
            continue
        listed = "; ".join(f"{v} ({', '.join(sorted(s))})" for v, s in sorted(values.items()))
        out.append(Anomaly(
            DUPLICATE_OFFSET, f"{history.topic}-{partition} offset {offset} holds "
                              f"{len(values)} values: {listed}", partition,
            {"offset": offset, "values": {v: sorted(s) for v, s in sorted(values.items())}}))
    return out


def duplicate_values(history: History, index: _Index | None = None) -> list[Anomaly]:
    index = index or _Index(history)
    seen: dict[str, dict[tuple[int, int], set[str]]] = defaultdict(lambda: defaultdict(set))
    for value, partition, offset, source in _observations(index):
        seen[value][(partition, offset)].add(source)
    out = []
    for value, positions in sorted(seen.items()):
        if len(positions) < 2:
            continue
        listed = "; ".join(f"{history.topic}-{p}@{o} ({', '.join(sorted(s))})"
                           for (p, o), s in sorted(positions.items()))
        write = index.writes.get(value)
        out.append(Anomaly(
            DUPLICATE_VALUE, f"{value} is at {len(positions)} positions: {listed}",
            write.partition if write is not None else None,
            {"value": value, "positions": [{"partition": p, "offset": o, "seen_by": sorted(s)}
                                           for (p, o), s in sorted(positions.items())]}))
    return out


# -- the final read -------------------------------------------------------------------------

def final_read_incomplete(history: History, index: _Index | None = None) -> list[Anomaly]:
    index = index or _Index(history)
    final = history.final
    if final is None:
        return [Anomaly(FINAL_READ_INCOMPLETE, "no final read: nothing could be checked "
                                               "for loss")]
    out = []
    for partition in range(history.partitions):
        if final.complete(partition):
            continue
        unverified = [v for v, w in index.writes.items() if w.partition == partition
                      and index.must_survive(v) and v not in index.final_positions
                      and not index.covered(v)]
        target, reached = final.target.get(partition), final.reached.get(partition)
        out.append(Anomaly(
            FINAL_READ_INCOMPLETE,
            f"the final read of {history.topic}-{partition} reached {reached}, short of "
            f"its end {target}: {len(unverified)} committed value(s) past it unchecked",
            partition, {"target": target, "reached": reached,
                        "unverified": len(unverified), "examples": _names(unverified)}))
    return out


def lost_writes(history: History, index: _Index | None = None) -> list[Anomaly]:
    index = index or _Index(history)
    if history.final is None:
        return []
    out = []
    for value, write in sorted(index.writes.items(), key=lambda i: (i[1].producer, i[1].seq)):
        if not index.must_survive(value) or value in index.final_positions \
                or not index.covered(value):
            continue
        offset = index.ack_offset(value)
        txn = index.txn_of(value)
        where = f"acknowledged at {history.topic}-{write.partition}@{offset}" \
            if offset is not None else f"sent to {history.topic}-{write.partition}"
        how = f" in committed transaction {txn.id}" if txn is not None else ""
        earlier = sorted(index.read_by.get(value, set()))
        seen = f"; read during the run by {', '.join(earlier)}" if earlier else ""
        out.append(Anomaly(
            LOST_WRITE, f"{value} {where}{how} is missing from the final read{seen}",
            write.partition, {"value": value, "offset": offset, "producer": write.producer,
                              "txn": write.txn, "read_during_run_by": earlier}))
    return out


def partial_txns(history: History, index: _Index | None = None) -> list[Anomaly]:
    index = index or _Index(history)
    if history.final is None:
        return []
    out = []
    for txn in history.txns:
        if txn.outcome not in (TXN_COMMITTED, TXN_INDETERMINATE) or len(txn.values) < 2:
            continue
        visible = [v for v in txn.values if v in index.final_positions]
        missing = [v for v in txn.values
                   if v not in index.final_positions and v in index.writes and index.covered(v)]
        if not visible or not missing:
            continue

        def where(v: str) -> str:
            return f"{v}@{history.topic}-{index.writes[v].partition}"

        out.append(Anomaly(
            PARTIAL_TXN, f"{txn.outcome} transaction {txn.id}: "
                         f"{', '.join(map(where, visible))} visible, "
                         f"{', '.join(map(where, missing))} not",
            None, {"txn": txn.id, "outcome": txn.outcome, "visible": visible,
                   "missing": missing}))
    return out


# -- what consumers read --------------------------------------------------------------------

def isolation_violations(history: History, index: _Index | None = None) -> list[Anomaly]:
    """aborted-read, uncommitted-read and unknown-value: once per (consumer, value)."""
    index = index or _Index(history)
    out = []
    done: set[tuple[str, str]] = set()
    for read in history.reads:
        if (read.consumer, read.value) in done:
            continue
        write = index.writes.get(read.value)
        if write is None:
            done.add((read.consumer, read.value))
            out.append(Anomaly(
                UNKNOWN_VALUE, f"{read.consumer} read {read.value!r} at "
                               f"{history.topic}-{read.partition}@{read.offset}, a value "
                               f"nobody sent", read.partition,
                {"consumer": read.consumer, "value": read.value, "offset": read.offset}))
            continue
        txn = index.txn_of(read.value)
        if txn is None:
            continue
        kind, why = None, ""
        if txn.outcome == TXN_ABORTED:
            kind, why = ABORTED_READ, f"of aborted transaction {txn.id}"
        elif txn.outcome == TXN_UNFINISHED:
            kind, why = UNCOMMITTED_READ, f"of transaction {txn.id}, never committed"
        elif txn.commit_at is None or read.at < txn.commit_at:
            kind = UNCOMMITTED_READ
            why = (f"of transaction {txn.id} at {read.at:.3f} s, before its commit was "
                   f"asked for at {txn.commit_at:.3f} s" if txn.commit_at is not None
                   else f"of transaction {txn.id}, whose commit was never asked for")
        if kind is None:
            continue
        done.add((read.consumer, read.value))
        out.append(Anomaly(
            kind, f"{read.consumer} read {read.value} at {history.topic}-{read.partition}@"
                  f"{read.offset}, a value {why}", read.partition,
            {"consumer": read.consumer, "value": read.value, "offset": read.offset,
             "txn": txn.id, "outcome": txn.outcome, "read_at": read.at,
             "commit_at": txn.commit_at}))
    return out


def read_order(history: History, index: _Index | None = None) -> list[Anomaly]:
    """read-backwards and read-skip, per session."""
    index = index or _Index(history)
    visible: dict[int, list[int]] = {
        p: sorted(o for o, v in by_offset.items() if not index.never_visible(v))
        for p, by_offset in index.final_by_offset.items()}
    reads: dict[tuple[str, int], list[Read]] = defaultdict(list)
    for read in history.reads:
        reads[(read.consumer, read.session)].append(read)
    starts = {(s.consumer, s.number): s for s in history.sessions}
    out = []
    for key, session_reads in reads.items():
        session = starts.get(key)
        mode = session.mode if session is not None else "?"
        previous: int | None = None
        if session is not None and session.start_offset is not None:
            previous = session.start_offset - 1
        for read in session_reads:
            if previous is not None and read.offset <= previous:
                out.append(Anomaly(
                    READ_BACKWARDS, f"{read.consumer} ({mode}) read "
                                    f"{history.topic}-{read.partition}@{read.offset} after "
                                    f"offset {previous} in one session", read.partition,
                    {"consumer": read.consumer, "session": read.session, "mode": mode,
                     "previous": previous, "offset": read.offset, "value": read.value}))
            elif previous is not None and read.offset > previous + 1:
                offsets = visible.get(read.partition, [])
                lo = bisect.bisect_right(offsets, previous)
                hi = bisect.bisect_left(offsets, read.offset)
                if hi > lo:
                    skipped = offsets[lo:hi]
                    values = [index.final_by_offset[read.partition][o]
                              for o in skipped[:MAX_LISTED]]
                    out.append(Anomaly(
                        READ_SKIP, f"{read.consumer} ({mode}) jumped from "
                                   f"{history.topic}-{read.partition}@{previous} to "
                                   f"{read.offset} over {len(skipped)} visible value(s): "
                                   f"{', '.join(values)}", read.partition,
                        {"consumer": read.consumer, "session": read.session, "mode": mode,
                         "previous": previous, "offset": read.offset,
                         "skipped_offsets": skipped[:MAX_LISTED], "skipped_values": values,
                         "skipped": len(skipped)}))
            previous = read.offset
    return out


# -- producers ------------------------------------------------------------------------------

def reorders(history: History, index: _Index | None = None) -> list[Anomaly]:
    index = index or _Index(history)
    views: dict[str, list[tuple[str, int]]] = {
        "acks": [(v, o) for v in index.writes if (o := index.ack_offset(v)) is not None],
        "final read": [(r.value, r.offset) for r in index.final_reads],
    }
    out = []
    reported: set[tuple[str, str]] = set()
    for view, positions in views.items():
        lanes: dict[tuple[str, int], list[tuple[int, int, str]]] = defaultdict(list)
        for value, offset in positions:
            write = index.writes.get(value)
            if write is not None:
                lanes[(write.producer, write.partition)].append((offset, write.seq, value))
        for (producer, partition), lane in sorted(lanes.items()):
            lane.sort()
            for (o1, s1, v1), (o2, s2, v2) in itertools.pairwise(lane):
                if o1 < o2 and s1 > s2 and (v1, v2) not in reported:
                    reported.add((v1, v2))
                    out.append(Anomaly(
                        REORDER, f"{producer} sent {v2} before {v1}, but in the {view} "
                                 f"{v1} is at {history.topic}-{partition}@{o1} and {v2} "
                                 f"after it at @{o2}", partition,
                        {"producer": producer, "view": view,
                         "earlier_sent": {"value": v2, "seq": s2, "offset": o2},
                         "later_sent": {"value": v1, "seq": s1, "offset": o1}}))
    return out


CHECKS: tuple[Callable[[History, _Index | None], list[Anomaly]], ...] = (
    duplicate_offsets, duplicate_values, final_read_incomplete, lost_writes, partial_txns,
    isolation_violations, read_order, reorders)


def check(history: History) -> list[Anomaly]:
    """Every check over the history."""
    index = _Index(history)
    out: list[Anomaly] = []
    for run in CHECKS:
        out.extend(run(history, index))
    return out


def by_kind(anomalies: Iterable[Anomaly]) -> dict[str, list[Anomaly]]:
    grouped: dict[str, list[Anomaly]] = {}
    for anomaly in anomalies:
        grouped.setdefault(anomaly.kind, []).append(anomaly)
    return {kind: grouped[kind] for kind in KINDS if kind in grouped}
