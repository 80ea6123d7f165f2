"""The server's boundary: a connection depends on its listener's data, not on the listener.

Connection gets a frozen ListenerContext instead of the BrokerServer (so connection.py never
imports broker_server.py, not even for type checking), leaves framing and encoding to the
codec (no `struct` anywhere in the server package), and asks handlers.api_versions how to
answer an ApiVersions request at a version above the advertised maximum.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster import Cluster, ClusterConfig
from mockbroker.handlers import advertised_versions
from mockbroker.handlers.api_versions import unsupported_version_answer
from mockbroker.server.connection import ListenerContext
from mockbroker.server.hooks import ServerHooks

SERVER = Path(__file__).resolve().parents[2] / "mockbroker" / "server"
SERVER_FILES = sorted(SERVER.glob("*.py"))


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (TYPE_CHECKING blocks included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_server_files_found() -> None:
    assert {"connection.py", "broker_server.py", "cluster_server.py"} <= \
        {p.name for p in SERVER_FILES}


def test_connection_does_not_import_the_listener() -> None:
    imported = _imports(SERVER / "connection.py")
    assert "mockbroker.server.trace" in imported  # imported only for type checking: seen
    assert "mockbroker.server.broker_server" not in imported
    assert "mockbroker.server.cluster_server" not in imported


@pytest.mark.parametrize("path", SERVER_FILES, ids=lambda p: p.name)
def test_no_struct_packing_in_the_server(path: Path) -> None:
    assert "struct" not in _imports(path), f"{path.name} frames bytes by hand"


def test_listener_context_is_frozen_and_slotted() -> None:
    cluster = Cluster(ClusterConfig(brokers=1))
    hooks = ServerHooks()
    listener = ListenerContext(cluster, cluster.brokers[0], {18: (0, 4)}, hooks=hooks)
    with pytest.raises(dataclasses.FrozenInstanceError):
        listener.max_frame_size = 1  # type: ignore[misc]
    assert not hasattr(listener, "__dict__")
    assert listener.hooks is hooks and listener.endpoints is None
    # without hooks given, each listener gets its own empty set
    assert ListenerContext(cluster, cluster.brokers[0], {}).hooks is not hooks


ADVERTISED = {k: (lo, hi) for k, lo, hi in advertised_versions(None)}


def test_api_versions_above_the_maximum_gets_the_v0_fallback() -> None:
    top = ADVERTISED[18][1]
    answer = unsupported_version_answer(ADVERTISED, 18, top + 1)
    assert answer is not None
    version, body = answer
    assert version == 0
    assert body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
    assert body["api_keys"] == [{"api_key": 18, "min_version": ADVERTISED[18][0],
                                 "max_version": top}]


@pytest.mark.parametrize(("api_key", "version"), [(18, 0), (18, 3), (3, 99), (9999, 0)])
def test_no_fallback_for_other_requests(api_key: int, version: int) -> None:
    """Supported ApiVersions versions go to the handler; other APIs are the connection's."""
    assert unsupported_version_answer(ADVERTISED, api_key, version) is None


def test_fallback_follows_the_caps() -> None:
    capped = dict(ADVERTISED)
    capped[18] = (0, 2)  # as advertised when emulating an older Kafka release
    answer = unsupported_version_answer(capped, 18, 3)
    assert answer is not None and answer[0] == 0
    assert unsupported_version_answer(capped, 18, 2) is None
