"""The persistent cache of construct's compiled codec code (kafka_protocol_codec.code_cache)."""

from __future__ import annotations

from pathlib import Path

import construct.core
import pytest
from kafka_protocol_codec import api, code_cache
from kafka_protocol_codec.structs import Codec

BODY = {"client_software_name": "cache-test", "client_software_version": "1.0"}


def build() -> Codec:
    """A fresh codec (not the process-wide one codec_for hands out): ApiVersions v3."""
    return Codec(api(18).request, 3)


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.marshal"))


def test_a_cached_codec_encodes_and_decodes_as_a_compiled_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(code_cache.ENV, str(tmp_path))
    first = build()  # compiles and stores
    stored = entries(tmp_path)
    assert stored
    mtimes = [p.stat().st_mtime_ns for p in stored]
    second = build()  # loads
    assert entries(tmp_path) == stored and [p.stat().st_mtime_ns for p in stored] == mtimes
    encoded = first.encode(BODY)
    assert second.encode(BODY) == encoded
    assert second.decode(encoded) == first.decode(encoded)
    monkeypatch.setenv(code_cache.ENV, code_cache.OFF)
    assert build().encode(BODY) == encoded


def test_a_corrupt_entry_is_compiled_again(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(code_cache.ENV, str(tmp_path))
    expected = build().encode(BODY)
    for entry in entries(tmp_path):
        entry.write_bytes(b"not marshal data")
    assert build().encode(BODY) == expected
    assert all(p.read_bytes() != b"not marshal data" for p in entries(tmp_path))


def test_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(code_cache.ENV, code_cache.OFF)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert code_cache.cache_dir() is None
    build()
    assert not list(tmp_path.rglob("*"))


def test_default_directory_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(code_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert code_cache.cache_dir() == tmp_path / "kafka-protocol-codec"


def test_an_unwritable_directory_only_costs_the_compile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(code_cache.ENV, str(blocker / "cache"))  # cannot be created
    assert build().encode(BODY)


def test_compiling_restores_constructs_namespace() -> None:
    namespace = vars(construct.core)
    before = namespace.get("compile")
    with code_cache.compiling():
        assert namespace["compile"] is code_cache.cached_compile
    assert namespace.get("compile") is before


def test_other_compile_calls_go_to_the_builtin(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(code_cache.ENV, str(tmp_path))
    code = code_cache.cached_compile("1 + 1", "<expr>", "eval")
    assert eval(code) == 2
    assert not entries(tmp_path)
