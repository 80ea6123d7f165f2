"""Constants Kafka fixes are defined once (issue 30): one module-level definition each in the
codec (protocol/) and mockbroker together, imported everywhere else. A constant the codec needs
stays in the codec, and mockbroker imports it from there. mockbroker.spark stands apart (it
imports nothing of the rest), so it is not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    p for root in (REPO / "mockbroker", REPO / "protocol") for p in root.rglob("*.py")
    if "__pycache__" not in p.parts and "generated" not in p.parts and "spark" not in p.parts)

DEFINED_ONCE = (
    "ZERO_UUID", "METADATA_TOPIC_ID", "METADATA_TOPIC", "OFFSETS_TOPIC", "TRANSACTION_TOPIC",
    "GROUP_KEY_TYPE", "TRANSACTION_KEY_TYPE", "UNSET_OPERATIONS", "NO_EPOCH_CHECK",
    "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "LOG_OVERHEAD", "HEADER_SIZE", "JOIN_EPOCH",
    "LEAVE_EPOCH", "USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
    "UNKNOWN_TOPIC_MESSAGE", "READ_COMMITTED", "CONSUMER_REPLICA_ID", "INITIAL_CAPACITY",
    "LOAD_FACTOR",
)


def definitions() -> dict[str, list[str]]:
    """Name (leading underscores dropped) -> the files that assign it at module level."""
    found: dict[str, list[str]] = {}
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            for target in targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id.lstrip("_"), []).append(
                        path.relative_to(REPO).as_posix())
    return found


DEFINITIONS = definitions()


@pytest.mark.parametrize("name", DEFINED_ONCE)
def test_defined_once(name: str) -> None:
    assert len(DEFINITIONS.get(name, [])) == 1, f"{name} defined in {DEFINITIONS.get(name)}"


def test_zero_uuid_is_only_spelled_once() -> None:
    """uuid.UUID(int=0) is written only where ZERO_UUID is defined (the codec)."""
    spelled = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "UUID"
                    and any(k.arg == "int" and isinstance(k.value, ast.Constant)
                            and k.value.value == 0 for k in node.keywords)):
                spelled.append(f"{path.relative_to(REPO).as_posix()}:{node.lineno}")
    assert len(spelled) == 1, spelled
