"""Layering: the codec package (folder protocol/, import package kafka_protocol_codec) is
sans-IO. It never imports asyncio, socket, selectors or mockbroker.

Checked twice: statically, on the AST of every .py file under protocol/ (import and
from-import statements, and importlib.import_module / __import__ calls with a literal name);
and dynamically, by importing the package and every one of its modules in a fresh
interpreter and looking at sys.modules.

Note on the dynamic check: only asyncio and mockbroker are asserted absent from sys.modules.
socket and selectors do get loaded, indirectly, by the standard library: the crc32c package
(used by records.py) imports importlib.metadata, which imports email.utils, which imports
socket (and socket imports selectors). No codec module imports them itself, which the AST
check enforces.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROTOCOL = REPO / "protocol"
FORBIDDEN = {"asyncio", "socket", "selectors", "mockbroker"}
CODEC_FILES = sorted(p for p in PROTOCOL.rglob("*.py") if "__pycache__" not in p.parts)


def imported_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, dotted module name) for every import in a module, dynamic ones included."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.append((node.lineno, arg.value))
    return found


def test_codec_files_found() -> None:
    names = {p.name for p in CODEC_FILES}
    assert {"__init__.py", "api.py", "structs.py", "schema.py", "codegen.py"} <= names
    assert any(p.parent.name == "generated" for p in CODEC_FILES)


@pytest.mark.parametrize("path", CODEC_FILES, ids=lambda p: p.relative_to(PROTOCOL).as_posix())
def test_no_forbidden_imports_in_source(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bad = [(line, name) for line, name in imported_names(tree) if name.split(".")[0] in FORBIDDEN]
    assert not bad, f"{path.relative_to(REPO)} imports {bad}"


def test_ast_check_catches_violations() -> None:
    source = (
        "import asyncio\nfrom socket import socket\nimport selectors as s\n"
        "from mockbroker.cluster import x\nimport importlib\n"
        "importlib.import_module('asyncio.streams')\n__import__('socket')\n"
        "from . import sibling\n"
    )
    names = {name.split(".")[0] for _, name in imported_names(ast.parse(source))}
    assert FORBIDDEN <= names


_PROBE = """
import importlib, json, pkgutil, sys
import kafka_protocol_codec
modules = ["kafka_protocol_codec"]
for info in pkgutil.walk_packages(kafka_protocol_codec.__path__, "kafka_protocol_codec."):
    importlib.import_module(info.name)
    modules.append(info.name)
print(json.dumps({"modules": modules, "loaded": sorted(sys.modules)}))
"""


def test_no_forbidden_modules_loaded_at_runtime() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        cwd=REPO / "tests",
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    modules, loaded = report["modules"], set(report["loaded"])
    # Every module of the package was imported (api, structs, the generated ones, ...).
    assert {
        "kafka_protocol_codec.api",
        "kafka_protocol_codec.structs",
        "kafka_protocol_codec.generated.metadata",
        "kafka_protocol_codec.generated.metadata_records",
    } <= set(modules)
    assert len(modules) > 100
    assert "asyncio" not in loaded
    assert not {m for m in loaded if m == "mockbroker" or m.startswith("mockbroker.")}
