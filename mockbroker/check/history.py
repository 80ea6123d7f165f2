"""The history of a check run: what was written, acknowledged, committed, read and broken.

Theory of operation: the workload (mockbroker/check/workload.py) records, while it runs,
every value a producer sent (`Write`), how the broker answered it (`Ack`: an offset, or an
error), how each transaction ended (`Txn`), every value a consumer read and where (`Read`,
inside a `Session`: one stretch of one consumer owning one partition), the final catch-up
read (`FinalRead`: how far it got per partition), the faults it applied and the client
errors it saw. A History is plain data: it round-trips through JSON (`to_json`,
`from_json`) so a run's history can be kept and checked again, and the checks
(mockbroker/check/checks.py) are pure functions of it. Nothing here does I/O, imports
asyncio or a Kafka client.

Values are unique strings: `PRODUCER.SEQ`, the producer's name and its send counter
(`value_name`), so a value read anywhere names the write it came from. Times are seconds
since the run started, all from one monotonic clock, so a read and a commit request
recorded in different threads can be ordered.

Transaction outcomes, from the producer's side:
- committed: the client confirmed the commit;
- aborted: the client confirmed an abort, and no commit was ever asked for;
- indeterminate: a commit was asked for and not confirmed (it may or may not have happened);
- unfinished: no commit was ever asked for and no abort confirmed (the producer was fenced
  or closed inside it); a read_committed consumer must never see its values.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

TXN_COMMITTED = "committed"
TXN_ABORTED = "aborted"
TXN_INDETERMINATE = "indeterminate"
TXN_UNFINISHED = "unfinished"
TXN_OUTCOMES = (TXN_COMMITTED, TXN_ABORTED, TXN_INDETERMINATE, TXN_UNFINISHED)

MODE_ASSIGN = "assign"        # the consumer assigned the partition itself
MODE_SUBSCRIBE = "subscribe"  # the group gave it the partition
MODE_FINAL = "final"          # the final catch-up read
MODES = (MODE_ASSIGN, MODE_SUBSCRIBE, MODE_FINAL)
FINAL_CONSUMER = "final"


def value_name(producer: str, seq: int) -> str:
    """The value a producer sends as its `seq`-th write."""
    return f"{producer}.{seq}"


@dataclass(frozen=True)
class Write:
    """A value handed to a producer; `txn` is its transaction's id (None: idempotent only)."""

    value: str
    producer: str
    seq: int  # the producer's send order
    partition: int
    txn: str | None
    at: float


@dataclass(frozen=True)
class Ack:
    """The broker's answer to one write: its offset, or the error the client reported."""

    value: str
    offset: int | None
    error: str | None
    at: float

    @property
    def ok(self) -> bool:
        return self.error is None and self.offset is not None and self.offset >= 0


@dataclass(frozen=True)
class Txn:
    """One transaction of one producer and how it ended (TXN_OUTCOMES)."""

    id: str
    producer: str
    values: tuple[str, ...]
    outcome: str
    commit_at: float | None  # when the commit was first asked for; None if never
    end_at: float
    error: str | None = None


@dataclass(frozen=True)
class Session:
    """One consumer reading one partition without interruption: from an assignment (or an
    assign call) to its revocation or the consumer's end. `start_offset` is where it was
    told to start reading (0 for "from the beginning"), None when the position came from
    elsewhere (a group's committed offset)."""

    consumer: str
    number: int
    partition: int
    mode: str
    start_offset: int | None
    at: float


@dataclass(frozen=True)
class Read:
    """A value a read_committed consumer got, in the order the consumer got them."""

    consumer: str
    session: int
    partition: int
    offset: int
    value: str
    at: float


@dataclass(frozen=True)
class FinalRead:
    """How far the final catch-up read got: per partition the end it aimed for (the high
    watermark once the writes stopped) and the position it reached."""

    target: dict[int, int]
    reached: dict[int, int]
    at: float = 0.0

    def complete(self, partition: int) -> bool:
        target = self.target.get(partition)
        return target is not None and self.reached.get(partition, -1) >= target


@dataclass(frozen=True)
class FaultEvent:
    """A control verb the fault schedule called, and what came of it."""

    at: float
    step: int  # the schedule's step number (-1: healing at the end)
    kind: str
    verb: str
    args: dict[str, Any]
    error: str | None = None


@dataclass(frozen=True)
class ClientEvent:
    """An error a client reported (not an anomaly in itself: the context of one)."""

    at: float
    client: str
    error: str


@dataclass
class History:
    topic: str
    partitions: int
    writes: list[Write] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)
    txns: list[Txn] = field(default_factory=list)
    sessions: list[Session] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    final: FinalRead | None = None
    faults: list[FaultEvent] = field(default_factory=list)
    client_events: list[ClientEvent] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    # -- JSON -------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "topic": self.topic, "partitions": self.partitions,
            "writes": [asdict(w) for w in self.writes],
            "acks": [asdict(a) for a in self.acks],
            "txns": [{**asdict(t), "values": list(t.values)} for t in self.txns],
            "sessions": [asdict(s) for s in self.sessions],
            "reads": [asdict(r) for r in self.reads],
            "final": None if self.final is None else {
                "target": {str(p): o for p, o in sorted(self.final.target.items())},
                "reached": {str(p): o for p, o in sorted(self.final.reached.items())},
                "at": self.final.at},
            "faults": [asdict(f) for f in self.faults],
            "client_events": [asdict(e) for e in self.client_events],
            "meta": self.meta,
        }
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> History:
        final = data.get("final")
        return cls(
            topic=data["topic"], partitions=data["partitions"],
            writes=[Write(**w) for w in data.get("writes", [])],
            acks=[Ack(**a) for a in data.get("acks", [])],
            txns=[Txn(**{**t, "values": tuple(t["values"])}) for t in data.get("txns", [])],
            sessions=[Session(**s) for s in data.get("sessions", [])],
            reads=[Read(**r) for r in data.get("reads", [])],
            final=None if final is None else FinalRead(
                target={int(p): o for p, o in final["target"].items()},
                reached={int(p): o for p, o in final["reached"].items()},
                at=final.get("at", 0.0)),
            faults=[FaultEvent(**f) for f in data.get("faults", [])],
            client_events=[ClientEvent(**e) for e in data.get("client_events", [])],
            meta=dict(data.get("meta", {})),
        )
