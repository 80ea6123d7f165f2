"""Running the suite's Java client programs (tests/jvm/src/main/java/io/mockbroker/jvmclients)
against mockbroker and real Kafka side by side, and reading what they observed.

Each program prints one JSON object per line on stdout, an observation with a "kind" (the
clients' own log lines are filtered out). `SideBySide` starts the same program against
both clusters at once (each JVM mostly waits on the network, so several at a time cost
little more than one) and `observations()` returns both observation lists; a program that
fails or outlives `PROGRAM_TIMEOUT` fails the test with its output. Tests may start
several programs first and collect their results later.

Consumers fetch partitions in an order the protocol leaves open, so `fetch_order_normalised`
sorts each run of consecutive observations of one kind by partition and offset before
the two sides are compared.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.support.real_kafka import java_command

PACKAGE = "io.mockbroker.jvmclients"
PROGRAM_TIMEOUT = 150.0  # seconds for one program run (its own calls are bounded at 30 s)

Observation = dict[str, Any]


def parse(stdout: str) -> list[Observation]:
    """The observation lines of a program's output, in order."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith('{"kind"')]


class SideBySide:
    """One program started against every target {name: bootstrap} at once; `observations()`
    waits for them (each within PROGRAM_TIMEOUT) and returns what each observed."""

    def __init__(self, program: str, targets: dict[str, str], *args: str) -> None:
        self.program = program
        self.procs: dict[str, subprocess.Popen[str]] = {}
        try:
            for name, boot in targets.items():
                self.procs[name] = subprocess.Popen(
                    java_command(f"{PACKAGE}.{program}", boot, *args),
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except BaseException:
            self.stop()
            raise
        self._observed: dict[str, list[Observation]] | None = None

    def observations(self) -> dict[str, list[Observation]]:
        """Each target's observations, which must end with {"kind": "done"}."""
        if self._observed is not None:
            return self._observed
        outputs: dict[str, str] = {}
        try:
            for name, proc in self.procs.items():
                outputs[name], _ = proc.communicate(timeout=PROGRAM_TIMEOUT)
        finally:
            self.stop()
        observed: dict[str, list[Observation]] = {}
        for name, proc in self.procs.items():
            lines = parse(outputs[name])
            if proc.returncode != 0 or not lines or lines[-1] != {"kind": "done"}:
                tail = "\n".join(line for line in outputs[name].splitlines()
                                 if not line.startswith("\t"))[-4000:]
                raise AssertionError(f"{self.program} against {name} failed "
                                     f"(exit {proc.returncode}):\n{tail}")
            observed[name] = lines
        self._observed = observed
        return observed

    def stop(self) -> None:
        """Kill whatever still runs (by the PIDs started here)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def _record_order(observation: Observation) -> tuple[Any, ...]:
    record = observation.get("record", {})
    return (observation.get("consumer", ""), observation.get("topic", ""),
            observation.get("isolation", ""), record.get("p", -1), record.get("o", -1))


def fetch_order_normalised(observations: list[Observation],
                             kinds: tuple[str, ...] = ("read", "consumed")) -> list[Observation]:
    """The observations with every run of consecutive `kinds` lines sorted by consumer,
    topic, isolation, partition and offset; everything else stays in place."""
    out: list[Observation] = []
    run: list[Observation] = []
    for observation in [*observations, {"kind": None}]:
        if observation["kind"] in kinds:
            run.append(observation)
            continue
        out += sorted(run, key=_record_order)
        run = []
        if observation["kind"] is not None:
            out.append(observation)
    return out


def of_kind(observations: list[Observation], kind: str, **match: Any) -> list[Observation]:
    """The observations of one kind whose fields equal `match`."""
    return [o for o in observations
            if o["kind"] == kind and all(o.get(k) == v for k, v in match.items())]


def records(observations: list[Observation], kind: str, **match: Any
            ) -> list[tuple[int, int, str | None, str | None]]:
    """(partition, offset, key, value) of the records of the matching observations."""
    return [(o["record"]["p"], o["record"]["o"], o["record"]["k"], o["record"]["v"])
            for o in of_kind(observations, kind, **match)]
