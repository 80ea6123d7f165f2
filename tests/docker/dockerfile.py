"""Just enough of a Dockerfile parser for the tests: instructions, exec-form commands, ENV.

Continuation lines (a trailing backslash) are joined, comments and blank lines dropped.
CMD, ENTRYPOINT and HEALTHCHECK's CMD must be in exec (JSON array) form: the tests run them
as argument lists, as Docker does, with no shell in between.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "Dockerfile"
COMPOSE_FILE = REPO / "docker" / "compose.yaml"


@dataclass
class Dockerfile:
    instructions: list[tuple[str, str]]
    env: dict[str, str] = field(default_factory=dict)

    def all(self, name: str) -> list[str]:
        return [args for instr, args in self.instructions if instr == name]

    def last(self, name: str) -> str:
        found = self.all(name)
        assert found, f"the Dockerfile has no {name}"
        return found[-1]

    def exec_form(self, name: str) -> list[str]:
        """CMD or ENTRYPOINT as an argument list (exec form required)."""
        value = json.loads(self.last(name))
        assert isinstance(value, list) and all(isinstance(v, str) for v in value), value
        return value

    @property
    def command(self) -> list[str]:
        """What the container runs: ENTRYPOINT followed by CMD."""
        return self.exec_form("ENTRYPOINT") + self.exec_form("CMD")

    @property
    def healthcheck(self) -> tuple[dict[str, str], list[str]]:
        """HEALTHCHECK's options and its exec-form command."""
        text = self.last("HEALTHCHECK")
        options: dict[str, str] = {}
        while text.startswith("--"):
            option, _, text = text.partition(" ")
            key, _, value = option[2:].partition("=")
            options[key] = value
            text = text.lstrip()
        kind, _, rest = text.partition(" ")
        assert kind.upper() == "CMD", f"HEALTHCHECK {text!r}"
        command = json.loads(rest)
        assert isinstance(command, list), command
        return options, command

    @property
    def exposed(self) -> set[int]:
        return {int(p.split("/")[0]) for args in self.all("EXPOSE") for p in args.split()}


def parse(path: Path = DOCKERFILE) -> Dockerfile:
    logical: list[str] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    instructions = []
    env: dict[str, str] = {}
    for line in logical:
        instr, _, args = line.partition(" ")
        instr, args = instr.upper(), args.strip()
        instructions.append((instr, args))
        if instr == "ENV":
            for pair in shlex.split(args):
                key, sep, value = pair.partition("=")
                assert sep, f"ENV {pair!r}: use the KEY=VALUE form"
                env[key] = value
    return Dockerfile(instructions, env)
