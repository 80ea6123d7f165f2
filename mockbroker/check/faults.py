"""The fault schedule of a check run, applied through the control API.

Theory of operation: `FaultRunner.run` walks the plan's schedule (plan.py) in real time:
at each step's time it resolves the step's roles against the cluster's state (the leader
of partition 2, the follower picked by the step's number), calls the verbs that start the
fault, holds it, and calls the verbs that undo it; only one fault is on at a time. Every
verb called is recorded in the history with its arguments and, if the control API refused
it, the reason (a step whose target does not exist at that moment, say a partition without
a live follower, records why it was skipped). `heal` ends everything at the end of the
run, whatever was left: stopped or isolated brokers started or healed, paused metadata
and replication resumed, refused connections accepted, injected faults cleared.

The verbs go through a `Control`: in process, the MockClusterThread's blocking control
(`InProcessControl`), or the HTTP control API of a mockbroker started elsewhere
(`HttpControl`, the same verbs as `mockbroker ctl`).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Protocol

from mockbroker.check.plan import FaultStep, Plan
from mockbroker.check.workload import Recorder

HTTP_TIMEOUT_S = 30.0
TICK_S = 0.1  # how often the manual clock follows real time


class Refused(Exception):
    """The control API refused a verb (its HTTP status and reason)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class Control(Protocol):
    def call(self, verb: str, **args: Any) -> Any: ...


class InProcessControl:
    """The verbs of a MockClusterThread's control (`mock.control`)."""

    def __init__(self, control: Any) -> None:
        self.control = control

    def call(self, verb: str, **args: Any) -> Any:
        from mockbroker.control.errors import ControlError

        try:
            return getattr(self.control, verb.replace("-", "_"))(**args)
        except ControlError as exc:
            raise Refused(exc.status, exc.message) from None


class HttpControl:
    """The verbs over HTTP (a `mockbroker` started elsewhere; the READY line's control=)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def call(self, verb: str, **args: Any) -> Any:
        if verb == "state":
            request = urllib.request.Request(f"{self.url}/state")
        else:
            request = urllib.request.Request(
                f"{self.url}/{verb}", data=json.dumps(args).encode(), method="POST",
                headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as answer:
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                reason = json.loads(exc.read()).get("error", exc.reason)
            except ValueError:
                reason = exc.reason
            raise Refused(exc.code, str(reason)) from None


class FaultRunner:
    """Applies the plan's fault schedule to the run's topic."""

    def __init__(self, control: Control, plan: Plan, topic: str, recorder: Recorder,
                 session_timeout_ms: int, lag_time_max_ms: int) -> None:
        self.control, self.plan, self.topic, self.rec = control, plan, topic, recorder
        self.session_timeout_ms = session_timeout_ms
        self.lag_time_max_ms = lag_time_max_ms
        self.stop = threading.Event()
        self.clock_lock = threading.Lock()

    # -- verbs ------------------------------------------------------------------------------

    def _verb(self, step: int, kind: str, verb: str, /, **args: Any) -> Any:
        try:
            if verb == "advance-clock":
                with self.clock_lock:
                    answer = self.control.call(verb, **args)
            else:
                answer = self.control.call(verb, **args)
        except Refused as exc:
            self.rec.fault(step, kind, verb, args, str(exc))
            return None
        except Exception as exc:  # the control API unreachable, a timeout
            self.rec.fault(step, kind, verb, args, f"{type(exc).__name__}: {exc}")
            return None
        self.rec.fault(step, kind, verb, args, None)
        return answer

    def _skip(self, step: FaultStep, why: str) -> None:
        self.rec.fault(step.number, step.kind, "skip", dict(step.params), why)

    def _partition(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        state = self.control.call("state")
        return state, state["topics"][self.topic]["partitions"]

    def _hold(self, seconds: float) -> None:
        self.stop.wait(max(0.0, seconds))

    # -- the schedule -----------------------------------------------------------------------

    def run(self, started: float) -> None:
        """Every step at its time (seconds after `started`, a time.monotonic()), until
        the schedule ends or `stop` is set."""
        for step in self.plan.faults:
            if self.stop.wait(max(0.0, started + step.at - time.monotonic())):
                return
            try:
                self.apply(step)
            except Exception as exc:  # a state the step did not expect: recorded, go on
                self.rec.fault(step.number, step.kind, "error", dict(step.params),
                               f"{type(exc).__name__}: {exc}")

    def apply(self, step: FaultStep) -> None:
        state, partitions = self._partition()
        brokers = {b["id"]: b for b in state["brokers"]}
        part = partitions[step.params["partition"] % len(partitions)]
        kind, number, p = step.kind, step.number, step.params
        partition, leader = part["partition"], part["leader"]
        live = sorted(b for b, info in brokers.items() if info["up"] and not info["fenced"])
        followers = [b for b in part["isr"] if b != leader and b in live]

        def pick(candidates: list[int]) -> int | None:
            return sorted(candidates)[p["pick"] % len(candidates)] if candidates else None

        def role() -> int | None:
            if p.get("role") == "leader" and leader in live:
                return int(leader)
            return pick(followers) if followers else pick(live)

        def verb(name: str, /, **args: Any) -> Any:
            return self._verb(number, kind, name, **args)

        topic = self.topic
        if kind == "elect":
            target = pick(followers)
            if target is None:
                return self._skip(step, f"partition {partition} has no live follower in "
                                        "its ISR")
            verb("elect-leader", topic=topic, partition=partition, broker=target)
        elif kind == "elect-lagging":
            target = pick(followers)
            if target is None:
                return self._skip(step, f"partition {partition} has no live follower in "
                                        "its ISR")
            verb("delay-replication", ms=p["ms"], broker=target)
            self._hold(step.hold)
            verb("elect-leader", topic=topic, partition=partition, broker=target)
            verb("resume-replication", broker=target)
        elif kind in ("stop", "crash"):
            target = role()
            if target is None or len(live) < 3:
                return self._skip(step, "fewer than 3 live brokers")
            verb("stop-broker" if kind == "stop" else "crash-broker", broker=target)
            if kind == "crash" and self.plan.manual_clock:
                verb("advance-clock", ms=self.session_timeout_ms + 1000)
            self._hold(step.hold)
            verb("start-broker", broker=target)
        elif kind == "stale-leader":
            target = pick(followers)
            if target is None or leader not in live:
                return self._skip(step, f"partition {partition} has no live leader and "
                                        "follower")
            verb("pause-metadata", broker=leader)
            verb("elect-leader", topic=topic, partition=partition, broker=target)
            self._hold(step.hold)
            verb("resume-metadata", broker=leader)
        elif kind in ("pause-metadata", "delay-metadata"):
            target = role()
            if target is None:
                return self._skip(step, "no live broker")
            if kind == "pause-metadata":
                verb("pause-metadata", broker=target)
            else:
                verb("delay-metadata", broker=target, ms=p["ms"])
            self._hold(step.hold)
            verb("resume-metadata", broker=target)
        elif kind in ("pause-replication", "delay-replication"):
            target = role()
            if target is None:
                return self._skip(step, "no live broker")
            if kind == "pause-replication":
                verb("pause-replication", broker=target)
                if self.plan.manual_clock:
                    self._hold(step.hold / 2)
                    verb("advance-clock", ms=self.lag_time_max_ms + 1000)
                    self._hold(step.hold / 2)
                else:
                    self._hold(step.hold)
            else:
                verb("delay-replication", broker=target, ms=p["ms"])
                self._hold(step.hold)
            verb("resume-replication", broker=target)
        elif kind == "isolate":
            target = role()
            if target is None or len(live) < 3:
                return self._skip(step, "fewer than 3 live brokers")
            verb("isolate-broker", broker=target)
            if self.plan.manual_clock:
                verb("advance-clock", ms=self.session_timeout_ms + 1000)
            self._hold(step.hold)
            verb("heal-broker", broker=target)
        elif kind in ("reset", "disconnect"):
            target = role()
            if target is None:
                return self._skip(step, "no live broker")
            if kind == "reset":
                fault = verb("inject-connection-fault", kind="reset", broker=target,
                             count=p["count"])
            else:
                fault = verb("inject-error", api=p["api"], error="disconnect", broker=target,
                             count=p["count"])
            self._hold(step.hold)
            if fault is not None:
                self._clear(number, kind, fault["id"])
        elif kind == "refuse":
            target = role()
            if target is None:
                return self._skip(step, "no live broker")
            verb("refuse-connections", broker=target)
            self._hold(step.hold)
            verb("accept-connections", broker=target)
        elif kind == "clock-jump":
            verb("advance-clock", ms=p["ms"])
        else:
            return self._skip(step, f"unknown fault kind {kind!r}")
        return None

    def _clear(self, number: int, kind: str, fault_id: int) -> None:
        """Clear an injected fault unless it already fired its count."""
        active = {f.get("id") for f in self.control.call("state").get("faults", [])}
        if fault_id in active:
            self._verb(number, kind, "clear-faults", id=fault_id)

    # -- the end ----------------------------------------------------------------------------

    def heal(self) -> None:
        """Undo whatever is still on (step -1 in the history)."""
        state = self.control.call("state")
        for broker in state["brokers"]:
            b = broker["id"]
            if not broker["up"]:
                self._verb(-1, "heal", "start-broker", broker=b)
            elif broker.get("isolated"):
                self._verb(-1, "heal", "heal-broker", broker=b)
            if broker.get("refusing_connections"):
                self._verb(-1, "heal", "accept-connections", broker=b)
            if broker.get("metadata_paused") or broker.get("metadata_delay_ms"):
                self._verb(-1, "heal", "resume-metadata", broker=b)
        self._verb(-1, "heal", "resume-replication")
        if state.get("faults"):
            self._verb(-1, "heal", "clear-faults")

    def follow_clock(self, stop: threading.Event) -> None:
        """With a manual clock: move it on with real time, so timeouts still pass (the
        schedule's jumps come on top)."""
        last = time.monotonic()
        while not stop.wait(TICK_S):
            now = time.monotonic()
            ms = int((now - last) * 1000)
            if ms <= 0:
                continue
            last += ms / 1000
            try:
                with self.clock_lock:
                    self.control.call("advance-clock", ms=ms)
            except Exception as exc:
                self.rec.fault(-1, "clock", "advance-clock", {"ms": ms}, str(exc))
                return
