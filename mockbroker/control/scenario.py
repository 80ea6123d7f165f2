"""Scenarios: seed topics and data, then timed or triggered fault steps, declared in a file.

Theory of operation: a scenario is a plain mapping (JSON, TOML or YAML) validated as a whole
before anything happens (`parse`), so a typo is a 400 naming its path, never half a run:

    seed = 7                               # optional: random and reported when absent
    [[topics]]                             # created first, with their seed messages
    name = "orders"
    partitions = 3
    messages = [{ partition = 0, key = "k1", value = "v1" }]

    [[steps]]                              # each step runs one control verb ("do")
    do = "stop-broker"
    args = { broker = 1 }
    after = { api = "Produce", count = 100 }   # trigger: the 100th Produce request
    for_ms = 3000                              # then undone (start-broker) 3 s later

    [[steps]]
    do = "elect-leader"
    args = { topic = "orders", partition = 0 }
    every_ms = 500                             # timed, repeated (at most `times` firings)
    times = 20
    probability = 0.5                          # drawn from the scenario's seeded RNG

When a step runs is one of `at_ms` (once, that long after the start; the default is 0, and
such steps have run when loading returns),
`every_ms` (repeatedly, bounded by `times`) or `after` (once a number of requests of one API
have arrived since the start). Time is the event loop's (wall) time, not the cluster's
injected clock. `for_ms` undoes what the step did (stop-broker -> start-broker,
pause-metadata / delay-metadata -> resume-metadata, refuse-connections -> accept-connections,
inject-error / inject-latency / inject-connection-fault -> clearing that fault). Every firing is recorded (step, time, verb, arguments, outcome); with the seed
this is what a failing test prints so that the run can be replayed. A step that the control
API refuses is recorded with its reason and the scenario goes on. Stopping a scenario (or
`reset`) cancels what is pending and runs the pending undos at once.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.cluster import Cluster
from mockbroker.control.errors import ControlError
from mockbroker.control.faults import FaultInjector

MAX_STEPS = 1000
MAX_TIMES = 100_000
MAX_MS = 86_400_000
MAX_SEED_MESSAGES = 100_000
FIRED_KEPT = 10_000
NOT_IN_STEPS = {"load-scenario", "scenario", "stop-scenario", "reset", "state", "trace",
                "connections"}
UNDO = {"stop-broker": "start-broker", "pause-metadata": "resume-metadata",
        "delay-metadata": "resume-metadata", "inject-error": "clear-faults",
        "inject-latency": "clear-faults", "inject-connection-fault": "clear-faults",
        "refuse-connections": "accept-connections", "pause-replication": "resume-replication",
        "delay-replication": "resume-replication", "crash-broker": "start-broker",
        "isolate-broker": "heal-broker"}
STEP_KEYS = {"do", "args", "at_ms", "every_ms", "times", "after", "for_ms", "probability"}


def load_file(path: str | Path) -> dict[str, Any]:
    """A scenario file (.json, .toml, .yaml/.yml) as a mapping; ValueError says why not."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in (".json", ".toml", ".yaml", ".yml"):
        raise ValueError(f"scenario {file}: use a .json, .toml, .yaml or .yml file")
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read scenario {file}: {exc.strerror or exc}") from None
    if suffix in (".yaml", ".yml"):
        data = _load_yaml(file, text)
    else:
        import tomllib  # only when a file is loaded: not on the broker's start-up path

        try:
            data = json.loads(text) if suffix == ".json" else tomllib.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"scenario {file} is not valid {suffix[1:].upper()}: "
                             f"{exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"scenario {file} must be a mapping at the top")
    return data


def _load_yaml(file: Path, text: str) -> Any:
    try:
        import yaml
    except ImportError:
        raise ValueError("YAML scenarios need PyYAML (pip install pyyaml); "
                         "JSON and TOML work without it") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"scenario {file} is not valid YAML: {exc}") from None


@dataclass(frozen=True)
class Step:
    index: int
    verb: str
    args: dict[str, Any]
    at_ms: int | None = None
    every_ms: int | None = None
    times: int | None = None
    after: tuple[int, int] | None = None  # (api key, request count)
    for_ms: int | None = None
    probability: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.index, "do": self.verb, "args": self.args}
        for name in ("at_ms", "every_ms", "times", "for_ms", "probability"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.after is not None:
            from kafka_protocol_codec import api

            out["after"] = {"api": api(self.after[0]).name, "count": self.after[1]}
        return out


@dataclass(frozen=True)
class Scenario:
    seed: int | None
    topics: list[dict[str, Any]]
    steps: list[Step] = field(default_factory=list)


def _number(where: str, value: Any, low: float, high: float, integer: bool = True) -> Any:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
        kind = "an integer" if integer else "a number"
        raise ControlError(400, f"scenario: {where} must be {kind} in [{low}, {high}], "
                                f"got {value!r}")
    return value


def parse(data: Any, verbs: dict[str, str], api_key_of: Any) -> Scenario:
    """Validate a scenario mapping completely (ControlError 400 naming the path)."""
    if not isinstance(data, dict):
        raise ControlError(400, "scenario must be an object")
    unknown = sorted(set(data) - {"seed", "topics", "steps", "name"})
    if unknown:
        raise ControlError(400, f"scenario: unknown key(s) {', '.join(unknown)}; "
                                "expected seed, topics, steps, name")
    seed = data.get("seed")
    if seed is not None:
        _number("seed", seed, 0, 2**63 - 1)
    topics = data.get("topics", [])
    if not isinstance(topics, list):
        raise ControlError(400, "scenario: topics must be a list")
    seeded = 0
    for i, topic in enumerate(topics):
        where = f"topics[{i}]"
        if not isinstance(topic, dict) or not isinstance(topic.get("name"), str):
            raise ControlError(400, f"scenario: {where} needs a name")
        extra = sorted(set(topic) - {"name", "partitions", "replication_factor", "configs",
                                     "messages"})
        if extra:
            raise ControlError(400, f"scenario: {where} has unknown key(s) {', '.join(extra)}")
        messages = topic.get("messages", [])
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise ControlError(400, f"scenario: {where}.messages must be a list of objects")
        for j, message in enumerate(messages):
            bad = sorted(set(message) - {"partition", "key", "value"})
            if bad:
                raise ControlError(400, f"scenario: {where}.messages[{j}] has unknown "
                                        f"key(s) {', '.join(bad)}")
        seeded += len(messages)
    if seeded > MAX_SEED_MESSAGES:
        raise ControlError(400, f"scenario: at most {MAX_SEED_MESSAGES} seed messages")
    steps_data = data.get("steps", [])
    if not isinstance(steps_data, list) or len(steps_data) > MAX_STEPS:
        raise ControlError(400, f"scenario: steps must be a list of at most {MAX_STEPS}")
    steps = [_parse_step(i, s, verbs, api_key_of) for i, s in enumerate(steps_data)]
    return Scenario(seed, topics, steps)


def _parse_step(index: int, data: Any, verbs: dict[str, str], api_key_of: Any) -> Step:
    where = f"steps[{index}]"
    if not isinstance(data, dict):
        raise ControlError(400, f"scenario: {where} must be an object")
    unknown = sorted(set(data) - STEP_KEYS)
    if unknown:
        raise ControlError(400, f"scenario: {where} has unknown key(s) {', '.join(unknown)}; "
                                f"expected {', '.join(sorted(STEP_KEYS))}")
    verb = data.get("do")
    if not isinstance(verb, str) or verb not in verbs or verb in NOT_IN_STEPS \
            or verb.startswith("wait-"):
        raise ControlError(400, f"scenario: {where}.do must be a control verb that changes "
                                f"the cluster, got {verb!r}")
    args = data.get("args", {})
    if not isinstance(args, dict):
        raise ControlError(400, f"scenario: {where}.args must be an object")
    when = [k for k in ("at_ms", "every_ms", "after") if k in data]
    if len(when) > 1:
        raise ControlError(400, f"scenario: {where} gives {' and '.join(when)}; give one")
    at_ms = _number(f"{where}.at_ms", data["at_ms"], 0, MAX_MS) if "at_ms" in data else None
    every_ms = _number(f"{where}.every_ms", data["every_ms"], 1, MAX_MS) \
        if "every_ms" in data else None
    times = _number(f"{where}.times", data["times"], 1, MAX_TIMES) if "times" in data \
        else None
    if times is not None and every_ms is None:
        raise ControlError(400, f"scenario: {where}.times needs every_ms")
    after = None
    if "after" in data:
        trigger = data["after"]
        if not isinstance(trigger, dict) or set(trigger) != {"api", "count"}:
            raise ControlError(400, f"scenario: {where}.after must be {{api, count}}")
        after = (api_key_of(trigger["api"]),
                 _number(f"{where}.after.count", trigger["count"], 1, 2**31 - 1))
    for_ms = _number(f"{where}.for_ms", data["for_ms"], 1, MAX_MS) if "for_ms" in data \
        else None
    if for_ms is not None and verb not in UNDO:
        raise ControlError(400, f"scenario: {where}.for_ms: {verb} cannot be undone "
                                f"(undoable: {', '.join(sorted(UNDO))})")
    probability = _number(f"{where}.probability", data["probability"], 0, 1, integer=False) \
        if "probability" in data else None
    if at_ms is None and every_ms is None and after is None:
        at_ms = 0
    return Step(index, verb, dict(args), at_ms, every_ms, times, after, for_ms, probability)


class Verbs(Protocol):
    """What a scenario needs of the control API (ControlAPI; named here to keep this module
    from importing api.py, which imports it)."""

    cluster: Cluster
    faults: FaultInjector

    async def dispatch(self, verb: str, args: Mapping[str, Any]) -> Any: ...


class ScenarioRun:
    """One running scenario on the cluster's event loop."""

    def __init__(self, control: Verbs, scenario: Scenario, seed: int,
                 name: str | None = None) -> None:
        self.control = control
        self.scenario = scenario
        self.seed = seed
        self.name = name
        self.rng = random.Random(seed)
        self.fired: list[dict[str, Any]] = []
        self.fired_total = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._undos: dict[int, tuple[str, dict[str, Any]]] = {}
        self._undo_ids = 0
        self._counts: dict[int, int] = {}
        self._triggers = [s for s in scenario.steps if s.after is not None]
        self._start = 0.0
        self.running = False

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await self._seed_topics()
        self._start = loop.time()
        self.running = True
        if self._triggers:
            self.control.faults.add_observer(self._observe)
        for step in self.scenario.steps:
            if step.at_ms == 0:  # "at the start": done when the scenario is loaded
                await self._fire(step)
            elif step.at_ms is not None:
                self._spawn(self._at(step))
            elif step.every_ms is not None:
                self._spawn(self._every(step))

    async def stop(self) -> None:
        """Cancel what is pending; run the pending undos now."""
        if not self.running:
            return
        self.running = False
        self.control.faults.remove_observer(self._observe)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for undo_id in sorted(self._undos):
            verb, args = self._undos.pop(undo_id)
            await self._run(None, verb, args)

    def status(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        return {"running": self.running, "name": self.name, "seed": self.seed,
                "elapsed_ms": round((loop.time() - self._start) * 1000, 3) if self._start
                else 0.0,
                "steps": [s.to_json() for s in self.scenario.steps],
                "pending": len(self._tasks) + len(self._undos),
                "fired_total": self.fired_total, "fired": list(self.fired)}

    # -- seeding ----------------------------------------------------------------------------

    async def _seed_topics(self) -> None:
        cluster = self.control.cluster
        for topic in self.scenario.topics:
            args: dict[str, Any] = {k: topic[k] for k in
                                    ("partitions", "replication_factor", "configs")
                                    if k in topic}
            await self.control.dispatch("create-topic", {"topic": topic["name"], **args})
            by_partition: dict[int, list[RecordSpec]] = {}
            for message in topic.get("messages", []):
                part = message.get("partition", 0)
                by_partition.setdefault(part, []).append(RecordSpec(
                    key=_bytes(message.get("key")), value=_bytes(message.get("value"))))
            for part, records in sorted(by_partition.items()):
                image = cluster.image.partition(topic["name"], part)
                if image is None:
                    raise ControlError(400, f"scenario: topic {topic['name']} has no "
                                            f"partition {part}")
                result = cluster.produce(cluster.brokers[image.leader], topic["name"], part,
                                         build_batch(records), acks=1)
                if not result.ok:
                    raise ControlError(400, f"scenario: seeding {topic['name']}-{part} "
                                            f"failed: {result.error.name}")

    # -- timing -----------------------------------------------------------------------------

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _at(self, step: Step) -> None:
        assert step.at_ms is not None
        await asyncio.sleep(step.at_ms / 1000)
        await self._fire(step)

    async def _every(self, step: Step) -> None:
        assert step.every_ms is not None
        for _ in range(step.times or MAX_TIMES):
            await asyncio.sleep(step.every_ms / 1000)
            await self._fire(step)

    def _observe(self, api_key: int) -> None:
        """Called for every request (FaultInjector observers): counts toward `after`."""
        count = self._counts.get(api_key, 0) + 1
        self._counts[api_key] = count
        for step in self._triggers:
            assert step.after is not None
            if step.after == (api_key, count):
                self._spawn(self._fire(step))

    # -- firing -----------------------------------------------------------------------------

    async def _fire(self, step: Step) -> None:
        if step.probability is not None and self.rng.random() >= step.probability:
            return
        result = await self._run(step, step.verb, step.args)
        if step.for_ms is not None and result is not None:
            undo = (UNDO[step.verb], _undo_args(step.verb, step.args, result))
            self._undo_ids += 1
            undo_id = self._undo_ids
            self._undos[undo_id] = undo
            self._spawn(self._undo_later(undo_id, step.for_ms))

    async def _undo_later(self, undo_id: int, delay_ms: int) -> None:
        await asyncio.sleep(delay_ms / 1000)
        undo = self._undos.pop(undo_id, None)
        if undo is not None:
            await self._run(None, *undo)

    async def _run(self, step: Step | None, verb: str, args: dict[str, Any]) -> Any:
        entry: dict[str, Any] = {
            "step": None if step is None else step.index, "undo": step is None,
            "at_ms": round((asyncio.get_running_loop().time() - self._start) * 1000, 1),
            "do": verb, "args": args}
        if verb == "clear-faults" and self.control.faults.get(args["id"]) is None:
            entry.update(ok=True, note="the fault was already consumed")
            self._record(entry)
            return None
        try:
            result = await self.control.dispatch(verb, args)
        except ControlError as exc:
            entry.update(ok=False, error=f"{exc.status}: {exc.message}")
            result = None
        else:
            entry["ok"] = True
        self._record(entry)
        return result

    def _record(self, entry: dict[str, Any]) -> None:
        self.fired_total += 1
        if len(self.fired) < FIRED_KEPT:
            self.fired.append(entry)


def _bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


def _undo_args(verb: str, args: dict[str, Any], result: Any) -> dict[str, Any]:
    if verb in ("inject-error", "inject-latency", "inject-connection-fault"):
        return {"id": result["id"]}
    if verb in ("pause-replication", "delay-replication"):
        return {k: args[k] for k in ("broker", "topic", "partition") if k in args}
    return {"broker": args["broker"]}
