"""Layering of the mockbroker package: imports go downward only (DESIGN.md section 1).

    cli / embedded / pytest_plugin  ->  control  ->  server  ->  handlers  ->  cluster

The cluster model never imports asyncio or sockets; the server reaches the control layer only
through the hook interface it defines itself (mockbroker.server.hooks), so faults live in
mockbroker.control and are installed from above. Checked on the AST of every module, with
imports under TYPE_CHECKING included (they would be cycles in waiting).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "mockbroker"
LAYERS = ["cluster", "handlers", "server", "control"]  # bottom to top
TOP = {"cli", "embedded", "pytest_plugin", "__main__"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "mockbroker" or len(parts) < 2:
        return None
    return parts[1]


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_go_downward_only(layer: str) -> None:
    allowed = set(LAYERS[:LAYERS.index(layer) + 1])
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for module in _imports(path):
            target = _layer_of(module)
            if target is not None and target not in allowed and target not in ("__init__",):
                bad.append(f"{path.relative_to(PACKAGE)} imports {module}")
            if target in TOP:
                bad.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert not bad, bad


def test_cluster_model_has_no_io() -> None:
    for path in sorted((PACKAGE / "cluster").rglob("*.py")):
        io = {m for m in _imports(path) if m.split(".")[0] in ("asyncio", "socket", "aiohttp")}
        assert not io, f"{path.name} imports {io}"
