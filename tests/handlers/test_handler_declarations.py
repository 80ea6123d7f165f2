"""The handler modules' declarations (mockbroker/handlers/__init__.py) are what the modules
register: so ApiVersions, built from the declarations before any handler module is imported,
advertises exactly what the handlers handle. And the declarations are what keeps the start
from importing the handler modules: each is imported with the first request of its APIs."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import mockbroker.handlers
from mockbroker.handlers import REGISTRY, advertised_versions, handler
from mockbroker.handlers.registry import Declaration, PartitionShape, partition_shape

REPO = Path(__file__).resolve().parents[2]
LEADER_AND_ISR = 4  # an API no handler registers


def _import_every_handler_module() -> None:
    for module in pkgutil.iter_modules(mockbroker.handlers.__path__):
        importlib.import_module(f"mockbroker.handlers.{module.name}")


def test_every_declaration_is_what_its_module_registers() -> None:
    _import_every_handler_module()
    registered = dict(dict.items(REGISTRY))
    assert set(REGISTRY.declared) == {key for key, spec in registered.items()
                                      if spec.func.__module__.startswith("mockbroker.handlers.")}
    for key, declaration in REGISTRY.declared.items():
        spec = registered[key]
        assert spec.func.__module__ == declaration.module, spec.name
        assert (spec.min_version, spec.max_version) == (declaration.min_version,
                                                        declaration.max_version), spec.name
        assert (spec.partitions is not None) == declaration.partition_level, spec.name
    assert advertised_versions() == sorted(
        (key, spec.min_version, spec.max_version) for key, spec in registered.items())


PROBE = """
import json, sys
from mockbroker.handlers import REGISTRY, advertised_versions
from mockbroker.handlers.registry import partition_apis
def handler_modules():
    return sorted(m for m in sys.modules if m.startswith("mockbroker.handlers.")
                  and m != "mockbroker.handlers.registry")
out = {"after_import": handler_modules(), "advertised": advertised_versions(),
       "partition_apis": sorted(partition_apis()), "produce_in": 0 in REGISTRY,
       "keys": sorted(REGISTRY)}
out["after_lookups"] = handler_modules()
out["produce_module"] = REGISTRY[0].func.__module__
out["shape"] = REGISTRY[1].partitions is not None
out["after_reads"] = handler_modules()
print(json.dumps(out))
"""


def test_the_package_declares_without_importing_the_handlers() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=REPO, check=True,
                            capture_output=True, text=True, timeout=60)
    out = json.loads(result.stdout)
    assert out["after_import"] == [] and out["after_lookups"] == []
    declared = sorted((key, d.min_version, d.max_version)
                      for key, d in REGISTRY.declared.items())
    assert [tuple(entry) for entry in out["advertised"]] == declared
    assert out["partition_apis"] == [0, 1, 2, 3, 23]
    assert out["produce_in"] and out["keys"] == sorted(REGISTRY.declared)
    assert out["produce_module"] == "mockbroker.handlers.produce"
    assert out["shape"]
    read = set(out["after_reads"])  # and what they import (client_quotas, acks, ...)
    assert {"mockbroker.handlers.fetch", "mockbroker.handlers.produce"} <= read
    assert "mockbroker.handlers.metadata" not in read and "mockbroker.handlers.acls" not in read


def test_a_range_other_than_the_declared_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY.declared, LEADER_AND_ISR,
                        Declaration(__name__, 0, 7, partition_level=False))
    with pytest.raises(ValueError, match="declared for v0-7"):
        handler(LEADER_AND_ISR, 0, 6)(lambda body, ctx: {})
    assert not dict.__contains__(REGISTRY, LEADER_AND_ISR)


def test_a_shape_on_an_api_not_declared_partition_level_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY.declared, LEADER_AND_ISR,
                        Declaration(__name__, 0, 7, partition_level=False))
    try:
        handler(LEADER_AND_ISR, 0, 7)(lambda body, ctx: {})
        shape = PartitionShape(lambda node, version, body: [], lambda r, p, t: dict(r))
        with pytest.raises(ValueError, match="not declared partition-level"):
            partition_shape(LEADER_AND_ISR, shape)
        assert REGISTRY[LEADER_AND_ISR].partitions is None
    finally:
        dict.pop(REGISTRY, LEADER_AND_ISR, None)


def test_an_undeclared_key_is_not_in_the_table() -> None:
    assert LEADER_AND_ISR not in REGISTRY
    assert REGISTRY.get(LEADER_AND_ISR) is None
    with pytest.raises(KeyError):
        REGISTRY[LEADER_AND_ISR]


def test_every_handler_annotates_its_request_with_its_apis_generated_class() -> None:
    """So mypy checks each handler's field reads against the right message (an annotation
    naming another API's class would check the wrong fields)."""
    import inspect

    from kafka_protocol_codec.generated import APIS

    _import_every_handler_module()
    for key, spec in dict(dict.items(REGISTRY)).items():
        if not spec.func.__module__.startswith("mockbroker.handlers."):
            continue
        first = next(iter(inspect.signature(spec.func).parameters.values()))
        assert first.annotation == f"{APIS[key][0]}Request", (spec.name, first.annotation)
