"""The seeded plan of a check run: what each producer writes, and the fault schedule.

Theory of operation: everything a run decides by chance is drawn here, from the seed alone,
so the same seed (with the same options) gives the same plan: the same transactions with
the same partitions and the same commit-or-abort choices, and the same faults at the same
times with the same targets. Only what the real clients and the scheduler do with it in
real time differs between two runs. Each producer draws from its own generator, seeded by
(seed, producer name, step number), so a producer's plan does not depend on how far the
others got; the fault schedule draws from (seed, "faults").

A fault step names its targets by role, resolved against the cluster when it runs (the
leader of partition 2, the second of its followers in id order), since which broker leads
what depends on what happened before. The executed faults (workload.py) record the
brokers they resolved to.

Fault kinds, grouped into named mixes (`MIXES`, each kind with the weight the schedule draws
it by):
- elect: elect another replica of a partition as its leader;
- elect-lagging: delay a follower's replication, let it fall behind under the load for the
  hold, elect it, then let it fetch again at once (a clean election of an in-sync replica
  that lacks the tail);
- stop / crash: stop a broker (controlled) or crash it (the controller learns only at the
  session timeout), then start it again;
- stale-leader: pause metadata on a partition's leader, elect another replica, then resume;
- pause-metadata / delay-metadata: a broker answers from a stale image for a while;
- pause-replication / delay-replication: a broker's followers stop (or slow) fetching;
- isolate: cut a broker off from the controller and the other brokers, then heal it;
- reset: reset the next connections' requests to a broker;
- refuse: a broker refuses new connections for a while;
- disconnect: close connections on their next Produce or Fetch;
- clock-jump: move the manual clock forward (only with --clock manual).
With the manual clock, crash, isolate and pause-replication also jump the clock past the
broker session timeout or replica.lag.time.max.ms, so the controller fences the broker or
shrinks the ISR during the hold instead of after it.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field
from typing import Any

CLOCK_KINDS = ("clock-jump",)
# kind -> weight: how often the schedule draws it within the mix
MIXES: dict[str, dict[str, int]] = {
    "none": {},
    "elections": {"elect": 1, "elect-lagging": 3},
    "crashes": {"stop": 1, "crash": 1},
    "metadata": {"stale-leader": 2, "pause-metadata": 1, "delay-metadata": 1},
    "replication": {"pause-replication": 1, "delay-replication": 1, "elect-lagging": 1},
    "network": {"isolate": 1, "reset": 1, "refuse": 1, "disconnect": 1},
    "clock": {"clock-jump": 1},
}
MIXES["all"] = {k: 1 for name in ("elections", "crashes", "metadata", "replication",
                                  "network", "clock") for k in MIXES[name]}
FAULT_KINDS = tuple(MIXES["all"])
HOLD_S: dict[str, tuple[float, float]] = {  # seconds a fault stays on, by kind
    "elect": (0.1, 0.5), "clock-jump": (0.1, 0.5),  # nothing to undo
    "elect-lagging": (0.3, 1.0),  # the follower's lag before its election
}
DEFAULT_HOLD_S = (0.5, 2.0)

WARMUP_S = 1.0      # no fault before the workload has started
COOLDOWN_S = 1.0    # every fault is over this long before the end
MIN_GAP_S, MAX_GAP_S = 0.2, 0.8
ABORT_PROBABILITY = 0.4
MAX_TXN_VALUES = 4


def _rng(*parts: object) -> random.Random:
    # a string seed is hashed with SHA-512 (random.seed, version 2): stable across processes
    return random.Random(":".join(map(str, parts)))


@dataclass(frozen=True)
class Step:
    """One step of a producer: a transaction (or, for an idempotent producer, a burst) of
    one value per entry of `partitions`, then a pause."""

    partitions: tuple[int, ...]
    commit: bool
    pause_ms: int


def producer_step(seed: int, producer: str, number: int, partitions: int,
                  transactional: bool) -> Step:
    rng = _rng(seed, producer, number)
    count = rng.randint(1, MAX_TXN_VALUES)
    if transactional and count > 1 and partitions > 1:
        # over several partitions: at least two distinct ones
        first = rng.sample(range(partitions), 2)
        chosen = tuple(first + [rng.randrange(partitions) for _ in range(count - 2)])
    else:
        chosen = tuple(rng.randrange(partitions) for _ in range(count))
    commit = not transactional or rng.random() >= ABORT_PROBABILITY
    pause_ms = rng.randint(0, 10) if transactional else rng.randint(5, 20)
    return Step(chosen, commit, pause_ms)


@dataclass(frozen=True)
class FaultStep:
    number: int
    at: float  # seconds after the workload started
    kind: str
    hold: float  # seconds until it is undone
    params: dict[str, Any] = field(default_factory=dict)


def _fault_params(rng: random.Random, kind: str, partitions: int) -> dict[str, Any]:
    """Targets by role: `partition` (an index), `pick` (which candidate, modulo their
    number, in broker id order), and the kind's own figures."""
    params: dict[str, Any] = {"partition": rng.randrange(partitions),
                              "pick": rng.randrange(1_000_000)}
    if kind in ("stop", "crash", "isolate", "pause-metadata", "delay-metadata",
                "pause-replication", "delay-replication", "reset", "refuse", "disconnect"):
        params["role"] = rng.choice(("leader", "follower"))
    if kind == "elect-lagging":
        params["ms"] = rng.choice((200, 400, 800))
    elif kind in ("delay-metadata", "delay-replication"):
        params["ms"] = rng.choice((100, 300, 1000))
    elif kind == "reset":
        params["count"] = rng.randint(1, 5)
    elif kind == "disconnect":
        params["api"] = rng.choice(("Produce", "Fetch"))
        params["count"] = rng.randint(1, 3)
    elif kind == "clock-jump":
        params["ms"] = rng.choice((1000, 3000, 8000))
    return params


def fault_schedule(seed: int, mix: str, duration: float, partitions: int,
                   manual_clock: bool = False) -> list[FaultStep]:
    """The faults of a run, one at a time, each undone before the next starts."""
    weights = {k: w for k, w in MIXES[mix].items() if manual_clock or k not in CLOCK_KINDS}
    kinds = sorted(weights)
    rng = _rng(seed, "faults", mix)
    steps: list[FaultStep] = []
    at = WARMUP_S
    while kinds:
        kind = rng.choices(kinds, [weights[k] for k in kinds])[0]
        hold = round(rng.uniform(*HOLD_S.get(kind, DEFAULT_HOLD_S)), 3)
        if at + hold > duration - COOLDOWN_S:
            break
        steps.append(FaultStep(len(steps), round(at, 3), kind, hold,
                               _fault_params(rng, kind, partitions)))
        at += hold + rng.uniform(MIN_GAP_S, MAX_GAP_S)
    return steps


@dataclass(frozen=True)
class ProducerPlan:
    name: str
    client: str  # "confluent", "aiokafka" or "java"
    transactional: bool


@dataclass(frozen=True)
class ConsumerPlan:
    name: str
    client: str
    mode: str  # "assign" or "subscribe"
    group: str | None


@dataclass(frozen=True)
class Plan:
    seed: int
    mix: str
    duration: float
    operations: int  # the writes all producers together may send
    partitions: int
    manual_clock: bool
    producers: tuple[ProducerPlan, ...]
    consumers: tuple[ConsumerPlan, ...]
    faults: tuple[FaultStep, ...]

    def step(self, producer: ProducerPlan, number: int) -> Step:
        return producer_step(self.seed, producer.name, number, self.partitions,
                             producer.transactional)

    def budget(self, producer: ProducerPlan) -> int:
        """The writes this producer may send (an equal share of `operations`)."""
        index = self.producers.index(producer)
        share, extra = divmod(self.operations, len(self.producers))
        return share + (1 if index < extra else 0)

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "mix": self.mix, "duration": self.duration,
                "operations": self.operations, "partitions": self.partitions,
                "manual_clock": self.manual_clock,
                "producers": [asdict(p) for p in self.producers],
                "consumers": [asdict(c) for c in self.consumers],
                "faults": [asdict(f) for f in self.faults],
                "first_steps": {p.name: [asdict(self.step(p, n)) for n in range(5)]
                                for p in self.producers},
                "digest": self.digest()}

    def digest(self) -> str:
        """A hash of everything the plan decides (the producers' steps by their generator's
        seed): equal digests, equal plans."""
        body = {"seed": self.seed, "mix": self.mix, "duration": self.duration,
                "operations": self.operations, "partitions": self.partitions,
                "manual_clock": self.manual_clock,
                "producers": [asdict(p) for p in self.producers],
                "consumers": [asdict(c) for c in self.consumers],
                "faults": [asdict(f) for f in self.faults]}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


CLIENTS = ("confluent", "aiokafka")  # the default: the Python clients
KNOWN_CLIENTS = (*CLIENTS, "java")  # java: kafka-clients, given a class path


def make_plan(seed: int, mix: str = "all", duration: float = 20.0,
              operations: int = 100_000, partitions: int = 4,
              clients: tuple[str, ...] = CLIENTS, manual_clock: bool = False,
              txn_producers: int = 2) -> Plan:
    """Per client: one idempotent producer, `txn_producers` transactional ones, a reader
    assigning every partition and a group of subscribed readers (two members for
    confluent-kafka, one for aiokafka and java)."""
    if mix not in MIXES:
        raise ValueError(f"unknown fault mix {mix!r}; mixes: {', '.join(MIXES)}")
    unknown = [c for c in clients if c not in KNOWN_CLIENTS]
    if unknown or not clients:
        raise ValueError(f"clients must be some of {', '.join(KNOWN_CLIENTS)}, got {clients}")
    short = {"confluent": "cf", "aiokafka": "aio", "java": "java"}
    producers: list[ProducerPlan] = []
    consumers: list[ConsumerPlan] = []
    for c in clients:
        producers.append(ProducerPlan(f"{short[c]}-idem", c, False))
        producers.extend(ProducerPlan(f"{short[c]}-txn{i}", c, True)
                         for i in range(txn_producers))
        consumers.append(ConsumerPlan(f"{short[c]}-assign", c, "assign", None))
        members = 2 if c == "confluent" else 1
        consumers.extend(ConsumerPlan(f"{short[c]}-sub{i}", c, "subscribe",
                                      f"check-{short[c]}") for i in range(members))
    return Plan(seed, mix, duration, operations, partitions, manual_clock, tuple(producers),
                tuple(consumers),
                tuple(fault_schedule(seed, mix, duration, partitions, manual_clock)))
