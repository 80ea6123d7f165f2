"""The CLI's persistent cache of the code dataclasses compile (mockbroker.compile_cache)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockbroker import compile_cache

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    compile_cache.install()
    try:
        yield tmp_path / "mockbroker" / "dataclasses"
    finally:
        compile_cache.uninstall()


def define() -> type:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: list[int] = dataclasses.field(default_factory=list)

    return Point


def test_cached_classes_behave_as_compiled_ones(cache: Path) -> None:
    first = define()
    entries = sorted(cache.iterdir())
    assert len(entries) == 6  # __init__, __repr__, __eq__, __setattr__, __delattr__, __hash__
    second = define()  # every method now from the cache
    assert sorted(cache.iterdir()) == entries
    compile_cache.uninstall()
    plain = define()
    for cls in (first, second):
        point = cls(1, [2])
        assert repr(point) == repr(plain(1, [2])).replace(plain.__qualname__, cls.__qualname__)
        assert point == cls(1, [2]) and point != cls(2)
        assert hash(cls(1, ())) == hash(plain(1, ()))  # type: ignore[arg-type]
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 3  # type: ignore[misc]
        # annotations stay objects, as the builtin compiles them for dataclasses.py (this
        # test module's `from __future__ import annotations` is not inherited)
        assert cls.__init__.__annotations__ == plain.__init__.__annotations__
        assert cls.__init__.__code__.co_filename == plain.__init__.__code__.co_filename


def test_a_corrupt_entry_is_compiled_again(cache: Path) -> None:
    define()
    for entry in cache.iterdir():
        entry.write_bytes(b"not marshal data")
    point = define()(1)
    assert point.x == 1 and point.y == []
    assert all(entry.read_bytes() != b"not marshal data" for entry in cache.iterdir())


def test_nothing_is_written_without_bytecode_writing(cache: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert define()(1).x == 1
    assert not cache.exists()


def test_an_unwritable_directory_only_compiles(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # mockbroker/ cannot be made in it
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    compile_cache.install()
    try:
        assert define()(1).x == 1
    finally:
        compile_cache.uninstall()


def test_exec_keeps_the_builtins_semantics(cache: Path) -> None:
    namespace: dict[str, object] = {}
    compile_cache.cached_exec("value = 6 * 7", namespace)
    assert namespace["value"] == 42
    code = compile("other = 1", "<string>", "exec")
    compile_cache.cached_exec(code, namespace)  # a code object goes straight through
    assert namespace["other"] == 1
    local = 5
    compile_cache.cached_exec("result = local + 1")  # the caller's namespaces by default
    assert locals()["result"] == 6 and local == 5


def test_the_cli_fills_the_cache(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MOCKBROKER_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    result = subprocess.run([sys.executable, "-m", "mockbroker", "--help"], env=env,
                            cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert len(list((tmp_path / "mockbroker" / "dataclasses").iterdir())) > 10
