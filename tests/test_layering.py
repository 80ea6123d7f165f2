"""Layering of the whole code base: every import goes downward, and no module cycles.

    entry          cli, ctl, __main__, pytest_plugin, mockbroker/__init__ (the package facade)
    check          the history checker (mockbroker.check): a workload of real clients on a
                   MockClusterThread under faults, and pure checks of what it recorded
    embedded       MockCluster, MockClusterThread
    entry support  config, logs, versions: what the entry points configure the layers with
    control        the Python control API and its HTTP server, faults
    server         asyncio, sockets, connections, trace
    handlers       one module per Kafka API
    cluster        the cluster model: single owner of state, synchronous, injected clock
    codec          kafka_protocol_codec (folder protocol/): sans-IO

A module may import modules of its own layer or of a layer below it (the server reaches the
control layer only through the hook interface it defines, mockbroker.server.hooks). Spark
(mockbroker.spark) stands apart: it is a Kafka client that talks to any broker over the
network, so it imports nothing else of this repository and nothing imports it.

Imports are read from the AST of every module, wherever they appear: at module level, inside
functions (lazy imports), under `if TYPE_CHECKING:` (they are cycles and inversions in
waiting), and importlib.import_module / __import__ calls with a literal name.

The checker's model and checks (mockbroker.check: history, checks, plan, report) are pure
functions of a recorded history: they import no asyncio, threading, socket or Kafka client,
and nothing of mockbroker outside the checker.

The codec is also checked on its own: it never imports asyncio, socket, selectors or
mockbroker, statically (AST of every file under protocol/) and dynamically (importing every
module in a fresh interpreter). Only asyncio and mockbroker are asserted absent from
sys.modules there: socket and selectors are loaded indirectly by the standard library (the
crc32c package imports importlib.metadata, which imports email.utils, which imports socket).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROTOCOL = REPO / "protocol"
PACKAGE = REPO / "mockbroker"
CODEC = "kafka_protocol_codec"

# Bottom to top.
SIMULATOR_LAYERS = ["codec", "cluster", "handlers", "server", "control", "entry support",
                    "embedded", "check", "entry"]
SUBPACKAGE_LAYERS = {"cluster": "cluster", "handlers": "handlers", "server": "server",
                     "control": "control", "check": "check", "spark": "spark"}
ROOT_MODULE_LAYERS = {
    "__main__": "entry",
    "cli": "entry",
    "ctl": "entry",
    "pytest_plugin": "entry",
    "embedded": "embedded",
    "config": "entry support",
    "logs": "entry support",
    "versions": "entry support",
    "kafka_properties": "entry support",
}
ALLOWED: dict[str, set[str]] = {
    layer: set(SIMULATOR_LAYERS[:index + 1]) for index, layer in enumerate(SIMULATOR_LAYERS)}
ALLOWED["spark"] = {"spark"}

FORBIDDEN_IN_CODEC = {"asyncio", "socket", "selectors", "mockbroker"}
CODEC_FILES = sorted(p for p in PROTOCOL.rglob("*.py") if "__pycache__" not in p.parts)


# -- reading imports ----------------------------------------------------------------------------

def import_statements(tree: ast.AST) -> list[tuple[int, str, tuple[str, ...], int]]:
    """(line, module, names, level) for every import in a module: `import a.b` gives
    ("a.b", (), 0); `from .a import b, c` gives ("a", ("b", "c"), 1); importlib.import_module
    and __import__ calls with a literal name count as `import`."""
    found: list[tuple[int, str, tuple[str, ...], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, (), 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.module or "",
                          tuple(alias.name for alias in node.names), node.level))
        elif isinstance(node, ast.Call):
            func = node.func
            name = (func.attr if isinstance(func, ast.Attribute)
                    else func.id if isinstance(func, ast.Name) else "")
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.append((node.lineno, arg.value, (), 0))
    return found


def imported_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, dotted module name) of every absolute import; `from a import b` gives "a"."""
    return [(line, module) for line, module, _, level in import_statements(tree)
            if level == 0 and module]


def module_imports(name: str, is_package: bool, tree: ast.AST,
                   known: Iterable[str]) -> set[str]:
    """The modules `name` imports, as dotted names: relative imports resolved against its
    package, and `from pkg import sub` meaning the module pkg.sub when that is a module (a
    submodule's parent package is imported anyway, whatever the importer), else pkg."""
    modules = set(known)
    out: set[str] = set()
    for _, module, names, level in import_statements(tree):
        if level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[:len(base) - (level - 1)]
            module = ".".join(base + ([module] if module else []))
        if not names:
            out.add(module)
        for imported in names:
            submodule = f"{module}.{imported}"
            out.add(submodule if submodule in modules else module)
    out.discard(name)
    return out


def package_modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the mockbroker package."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = path.with_suffix("").relative_to(REPO).parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph() -> dict[str, set[str]]:
    """mockbroker module -> the mockbroker and codec modules (or packages) it imports."""
    modules = package_modules()
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[name] = {target for target in module_imports(
            name, path.name == "__init__.py", tree, modules)
            if target.split(".")[0] in ("mockbroker", CODEC)}
    return graph


def layer_of(module: str) -> str:
    """The layer of a mockbroker or codec module; KeyError for one without a layer."""
    parts = module.split(".")
    if parts[0] == CODEC:
        return "codec"
    if module == "mockbroker":
        return "entry"
    if parts[1] in SUBPACKAGE_LAYERS:
        return SUBPACKAGE_LAYERS[parts[1]]
    return ROOT_MODULE_LAYERS[parts[1]]


def layering_violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    return sorted(f"{source} ({layer_of(source)}) imports {target} ({layer_of(target)})"
                  for source, targets in graph.items() for target in targets
                  if layer_of(target) not in ALLOWED[layer_of(source)])


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


# -- the mockbroker package ---------------------------------------------------------------------

GRAPH = import_graph()


def test_every_module_has_a_layer() -> None:
    assert {"mockbroker.cli", "mockbroker.embedded", "mockbroker.spark.source",
            "mockbroker.cluster.cluster", "mockbroker.cluster.log.partition",
            "mockbroker.cluster.kraft.controller", "mockbroker.server.connection"} <= set(GRAPH)
    missing = []
    for module in GRAPH:
        try:
            layer_of(module)
        except KeyError:
            missing.append(module)
    assert not missing, f"give these modules a layer in ROOT_MODULE_LAYERS: {missing}"
    stale = {name for name in ROOT_MODULE_LAYERS if f"mockbroker.{name}" not in GRAPH}
    assert not stale, f"ROOT_MODULE_LAYERS names modules that do not exist: {stale}"


@pytest.mark.parametrize("layer", sorted(set(SIMULATOR_LAYERS[1:]) | {"spark"}))
def test_imports_go_downward_only(layer: str) -> None:
    in_layer = {name: targets for name, targets in GRAPH.items() if layer_of(name) == layer}
    assert in_layer, f"no module in layer {layer}"
    violations = layering_violations(in_layer)
    assert not violations, "imports against the layering:\n" + "\n".join(violations)


def test_cluster_model_has_no_io() -> None:
    for path in sorted((PACKAGE / "cluster").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        io = {name for _, name in imported_names(tree)
              if name.split(".")[0] in ("asyncio", "socket", "aiohttp")}
        assert not io, f"{path.name} imports {io}"


CLUSTER_SUBPACKAGES = {"client_telemetry", "configs", "groups", "kraft", "log", "persistence",
                       "producers", "quotas", "security"}


def test_cluster_subpackages_say_what_they_own() -> None:
    """The cluster model is split by subsystem; each subpackage's __init__ says what it
    owns, and imports nothing (importing one module of a subsystem loads no other)."""
    found = {p.parent.name for p in (PACKAGE / "cluster").glob("*/__init__.py")}
    assert found == CLUSTER_SUBPACKAGES
    for name in sorted(found):
        path = PACKAGE / "cluster" / name / "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        assert ast.get_docstring(tree), f"{path.relative_to(REPO)} has no docstring"
        assert not import_statements(tree), f"{path.relative_to(REPO)} imports modules"


def test_cluster_module_names_are_unique() -> None:
    """No module or subpackage of the cluster model has the name of another module of the
    project (mockbroker/, protocol/ and its generated modules): a name says which one."""
    names: dict[str, list[str]] = {}
    for root in (PACKAGE, PROTOCOL):
        for path in root.rglob("*.py"):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                names.setdefault(path.stem, []).append(path.relative_to(REPO).as_posix())
    for name in CLUSTER_SUBPACKAGES:
        names.setdefault(name, []).append(f"mockbroker/cluster/{name}/")
    clashes = {name: where for name, where in names.items()
               if len(where) > 1 and any(w.startswith("mockbroker/cluster/") for w in where)}
    assert not clashes, f"cluster modules named like other modules: {clashes}"


PURE_CHECKER = ("history", "checks", "plan", "report")
NOT_IN_PURE_CHECKER = {"asyncio", "threading", "socket", "confluent_kafka", "aiokafka",
                       "kafka", "urllib"}


@pytest.mark.parametrize("name", PURE_CHECKER)
def test_checker_model_is_pure(name: str) -> None:
    path = PACKAGE / "check" / f"{name}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = {module for _, module in imported_names(tree)}
    impure = {m for m in names if m.split(".")[0] in NOT_IN_PURE_CHECKER}
    assert not impure, f"{path.name} imports {impure}"
    outside = {m for m in GRAPH[f"mockbroker.check.{name}"]
               if m != "mockbroker.check"
               and m.removeprefix("mockbroker.check.") not in PURE_CHECKER}
    assert not outside, f"{path.name} imports {outside}"


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or through others (TYPE_CHECKING and
    function-level imports included)."""
    cycles = [sorted(c) for c in strongly_connected(GRAPH)]
    assert not cycles, f"import cycles between modules: {cycles}"


def test_the_checks_catch_violations() -> None:
    """The import reader, the layer rule and the cycle finder on made-up modules."""
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from mockbroker.control.api import ControlAPI\n"
              "def lazy():\n    from mockbroker import embedded\n"
              "from . import sibling\nfrom .. import cluster\n"
              "import importlib\nimportlib.import_module('mockbroker.spark.source')\n")
    known = ["mockbroker.embedded", "mockbroker.handlers.sibling", "mockbroker.cluster",
             "mockbroker.control.api", "mockbroker.spark.source"]
    imports = module_imports("mockbroker.handlers.fetch", False, ast.parse(source), known)
    assert set(known) <= imports
    violations = layering_violations({"mockbroker.handlers.fetch": sorted(
        i for i in imports if i in known)})
    assert [v.split(" imports ")[1] for v in violations] == [
        "mockbroker.control.api (control)", "mockbroker.embedded (embedded)",
        "mockbroker.spark.source (spark)"]
    assert layering_violations({"mockbroker.spark.options": ["kafka_protocol_codec"]})
    assert not layering_violations({"mockbroker.cli": ["mockbroker.versions", CODEC]})
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert strongly_connected(graph) == [frozenset({"a", "b", "c"})]


# -- the codec: sans-IO ---------------------------------------------------------------------

def test_codec_files_found() -> None:
    names = {p.name for p in CODEC_FILES}
    assert {"__init__.py", "api.py", "structs.py", "schema.py", "codegen.py"} <= names
    assert any(p.parent.name == "generated" for p in CODEC_FILES)


@pytest.mark.parametrize("path", CODEC_FILES, ids=lambda p: p.relative_to(PROTOCOL).as_posix())
def test_no_forbidden_imports_in_codec_source(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bad = [(line, name) for line, name in imported_names(tree)
           if name.split(".")[0] in FORBIDDEN_IN_CODEC]
    assert not bad, f"{path.relative_to(REPO)} imports {bad}"


def test_codec_ast_check_catches_violations() -> None:
    source = (
        "import asyncio\nfrom socket import socket\nimport selectors as s\n"
        "from mockbroker.cluster import x\nimport importlib\n"
        "importlib.import_module('asyncio.streams')\n__import__('socket')\n"
        "from . import sibling\n"
    )
    names = {name.split(".")[0] for _, name in imported_names(ast.parse(source))}
    assert FORBIDDEN_IN_CODEC <= names


_PROBE = """
import importlib, json, pkgutil, sys
import kafka_protocol_codec
modules = ["kafka_protocol_codec"]
for info in pkgutil.walk_packages(kafka_protocol_codec.__path__, "kafka_protocol_codec."):
    importlib.import_module(info.name)
    modules.append(info.name)
print(json.dumps({"modules": modules, "loaded": sorted(sys.modules)}))
"""


def test_no_forbidden_modules_loaded_by_the_codec_at_runtime() -> None:
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
