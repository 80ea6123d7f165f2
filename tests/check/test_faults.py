"""The fault runner of mockbroker check against a fake control API: which verbs each fault
kind calls, on which targets, and what healing undoes. No cluster, no waiting (holds 0)."""

from __future__ import annotations

from typing import Any

import pytest

from mockbroker.check.faults import FaultRunner, Refused
from mockbroker.check.plan import FAULT_KINDS, FaultStep, make_plan
from mockbroker.check.workload import Recorder

TOPIC = "t"


class FakeControl:
    """Answers `state` with three brokers and one partition led by broker 1 (ISR 1, 2, 0);
    records every other verb."""

    def __init__(self, brokers: list[dict[str, Any]] | None = None,
                 faults: list[dict[str, Any]] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.brokers = brokers or [{"id": b, "up": True, "fenced": False} for b in range(3)]
        self.faults = faults if faults is not None else [{"id": 9}]

    def call(self, verb: str, **args: Any) -> Any:
        if verb == "state":
            return {"brokers": self.brokers, "faults": self.faults,
                    "topics": {TOPIC: {"partitions": [
                        {"partition": 0, "leader": 1, "isr": [1, 2, 0],
                         "replicas": [1, 2, 0]}]}}}
        self.calls.append((verb, args))
        if verb == "elect-leader" and args.get("broker") == 7:
            raise Refused(400, "not a replica")
        return {"id": 9}


def runner(control: FakeControl, manual_clock: bool = False) -> FaultRunner:
    plan = make_plan(1, "none", manual_clock=manual_clock)
    return FaultRunner(control, plan, TOPIC, Recorder(TOPIC, 1), 9000, 30_000)


EXPECTED = {
    # pick 1 of the followers [0, 2] is 2; the leader is 1
    "elect": [("elect-leader", {"topic": TOPIC, "partition": 0, "broker": 2})],
    "elect-lagging": [("delay-replication", {"ms": 200, "broker": 2}),
                      ("elect-leader", {"topic": TOPIC, "partition": 0, "broker": 2}),
                      ("resume-replication", {"broker": 2})],
    "stop": [("stop-broker", {"broker": 1}), ("start-broker", {"broker": 1})],
    "crash": [("crash-broker", {"broker": 1}), ("start-broker", {"broker": 1})],
    "stale-leader": [("pause-metadata", {"broker": 1}),
                     ("elect-leader", {"topic": TOPIC, "partition": 0, "broker": 2}),
                     ("resume-metadata", {"broker": 1})],
    "pause-metadata": [("pause-metadata", {"broker": 1}), ("resume-metadata", {"broker": 1})],
    "delay-metadata": [("delay-metadata", {"broker": 1, "ms": 200}),
                       ("resume-metadata", {"broker": 1})],
    "pause-replication": [("pause-replication", {"broker": 1}),
                          ("resume-replication", {"broker": 1})],
    "delay-replication": [("delay-replication", {"broker": 1, "ms": 200}),
                          ("resume-replication", {"broker": 1})],
    "isolate": [("isolate-broker", {"broker": 1}), ("heal-broker", {"broker": 1})],
    "reset": [("inject-connection-fault", {"kind": "reset", "broker": 1, "count": 2}),
              ("clear-faults", {"id": 9})],
    "refuse": [("refuse-connections", {"broker": 1}), ("accept-connections", {"broker": 1})],
    "disconnect": [("inject-error", {"api": "Fetch", "error": "disconnect", "broker": 1,
                                     "count": 2}), ("clear-faults", {"id": 9})],
    "clock-jump": [("advance-clock", {"ms": 200})],
}


def step(kind: str) -> FaultStep:
    return FaultStep(0, 0.0, kind, 0.0, {"partition": 0, "pick": 1, "role": "leader",
                                         "ms": 200, "count": 2, "api": "Fetch"})


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_kind_calls_its_verbs(kind: str) -> None:
    control = FakeControl()
    faults = runner(control)
    faults.apply(step(kind))
    assert control.calls == EXPECTED[kind]
    recorded = faults.rec.snapshot().faults
    assert [(f.verb, f.args) for f in recorded] == EXPECTED[kind]
    assert all(f.error is None and f.kind == kind for f in recorded)


def test_a_follower_role_picks_from_the_live_isr() -> None:
    control = FakeControl()
    stop = FaultStep(0, 0.0, "stop", 0.0, {"partition": 0, "pick": 0, "role": "follower"})
    runner(control).apply(stop)
    assert control.calls == [("stop-broker", {"broker": 0}), ("start-broker", {"broker": 0})]


def test_manual_clock_jumps_past_the_timeouts() -> None:
    control = FakeControl()
    faults = runner(control, manual_clock=True)
    for kind in ("crash", "isolate", "pause-replication"):
        faults.apply(step(kind))
    jumps = [args["ms"] for verb, args in control.calls if verb == "advance-clock"]
    assert jumps == [10_000, 10_000, 31_000]


def test_steps_without_a_target_are_skipped_and_recorded() -> None:
    down = [{"id": 0, "up": False, "fenced": True}, {"id": 1, "up": True, "fenced": False},
            {"id": 2, "up": False, "fenced": True}]
    control = FakeControl(brokers=down)
    faults = runner(control)
    faults.apply(step("elect"))
    faults.apply(step("crash"))
    assert control.calls == []
    assert [(f.verb, f.error is not None) for f in faults.rec.snapshot().faults] == [
        ("skip", True), ("skip", True)]


def test_a_refused_verb_is_recorded() -> None:
    control = FakeControl()
    faults = runner(control)
    faults._verb(3, "elect", "elect-leader", topic=TOPIC, partition=0, broker=7)
    (event,) = faults.rec.snapshot().faults
    assert (event.step, event.verb, event.error) == (3, "elect-leader", "400: not a replica")


def test_heal_undoes_what_is_left() -> None:
    brokers = [{"id": 0, "up": False, "fenced": True},
               {"id": 1, "up": True, "fenced": True, "isolated": True,
                "refusing_connections": True},
               {"id": 2, "up": True, "fenced": False, "metadata_paused": True}]
    control = FakeControl(brokers=brokers)
    runner(control).heal()
    assert control.calls == [("start-broker", {"broker": 0}), ("heal-broker", {"broker": 1}),
                             ("accept-connections", {"broker": 1}),
                             ("resume-metadata", {"broker": 2}), ("resume-replication", {}),
                             ("clear-faults", {})]


def test_a_consumed_fault_is_not_cleared() -> None:
    control = FakeControl(faults=[])
    runner(control).apply(step("reset"))
    assert [verb for verb, _ in control.calls] == ["inject-connection-fault"]
