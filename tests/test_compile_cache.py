"""The CLI's persistent cache of the code dataclasses compile (mockbroker.compile_cache)."""

from __future__ import annotations

import collections
import dataclasses
import marshal
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from mockbroker import compile_cache

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    compile_cache.uninstall()  # a fresh cache object reading this test's file
    yield Path(compile_cache.cache_path() or "")
    compile_cache.uninstall()


def define() -> type:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: list[int] = dataclasses.field(default_factory=list)

    return Point


def test_cached_classes_behave_as_compiled_ones(cache_file: Path) -> None:
    cache = compile_cache.install()
    first = define()
    assert cache.added == 6  # __init__, __repr__, __eq__, __setattr__, __delattr__, __hash__
    compile_cache.uninstall()  # saves
    assert cache_file.is_file()
    cache = compile_cache.install()  # reads the file back
    second = define()
    assert cache.added == 0 and len(cache.used) == 6
    compile_cache.uninstall()
    plain = define()
    for cls in (first, second):
        point = cls(1, [2])
        assert repr(point) == repr(plain(1, [2])).replace(plain.__qualname__, cls.__qualname__)
        assert point == cls(1, [2]) and point != cls(2)
        assert hash(cls(1, ())) == hash(plain(1, ()))
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 3
        # annotations stay objects, as the builtin compiles them for dataclasses.py (this
        # test module's `from __future__ import annotations` is not inherited)
        init, plain_init = vars(cls)["__init__"], vars(plain)["__init__"]
        assert init.__annotations__ == plain_init.__annotations__
        assert init.__code__.co_filename == plain_init.__code__.co_filename


@pytest.mark.parametrize("content", [b"not marshal data", marshal.dumps(7),
                                     marshal.dumps((b"\x00\x00\r\n", {}))])
def test_a_corrupt_or_foreign_file_is_compiled_again(cache_file: Path, content: bytes) -> None:
    cache_file.parent.mkdir(parents=True)
    cache_file.write_bytes(content)
    cache = compile_cache.install()
    point = define()(1)
    assert point.x == 1 and point.y == [] and cache.added == 6
    compile_cache.uninstall()
    assert compile_cache.CompileCache(str(cache_file)).entries  # rewritten whole


def test_nothing_is_written_without_bytecode_writing(cache_file: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    compile_cache.install()
    assert define()(1).x == 1
    compile_cache.uninstall()
    assert not cache_file.parent.exists()


def test_an_unwritable_directory_only_compiles(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # mockbroker/ cannot be made in it
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    compile_cache.uninstall()
    compile_cache.install()
    try:
        assert define()(1).x == 1
    finally:
        compile_cache.uninstall()


def test_a_full_file_keeps_what_the_process_used(cache_file: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compile_cache, "MAX_ENTRIES", 3)
    cache = compile_cache.install()
    cache.entries.update({f"x = {i}": compile(f"x = {i}", "<string>", "exec")
                          for i in range(5)})
    define()
    compile_cache.uninstall()
    assert len(compile_cache.CompileCache(str(cache_file)).entries) == 6


def test_exec_keeps_the_builtins_semantics(cache_file: Path) -> None:
    compile_cache.install()
    namespace: dict[str, object] = {}
    compile_cache.cached_exec("value = 6 * 7", namespace)
    assert namespace["value"] == 42
    code = compile("other = 1", "<string>", "exec")
    compile_cache.cached_exec(code, namespace)  # a code object goes straight through
    assert namespace["other"] == 1
    local = 5
    compile_cache.cached_exec("result = local + 1")  # the caller's namespaces by default
    assert locals()["result"] == 6 and local == 5


def define_named_tuples() -> tuple[type, type]:
    class Pair(NamedTuple):
        left: int
        right: str = "r"

    return Pair, collections.namedtuple("Triple", "a b c", defaults=(3,))


def test_cached_named_tuples_behave_as_compiled_ones(cache_file: Path) -> None:
    cache = compile_cache.install()
    define_named_tuples()
    assert cache.added == 2  # one __new__ each, compiled by eval
    compile_cache.uninstall()
    cache = compile_cache.install()
    pair, triple = define_named_tuples()
    assert cache.added == 0 and len(cache.used) == 2
    assert all(key.startswith(compile_cache.EVAL_KEY) for key in cache.used)
    compile_cache.uninstall()
    assert "eval" not in vars(collections)
    plain_pair, plain_triple = define_named_tuples()
    assert pair(1) == plain_pair(1) == (1, "r") and pair(left=2, right="x") == (2, "x")
    assert repr(pair(1)) == repr(plain_pair(1)) == "Pair(left=1, right='r')"
    assert triple(1, 2) == plain_triple(1, 2) == (1, 2, 3)
    assert triple._make([4, 5, 6]).c == 6
    with pytest.raises(TypeError):
        pair()  # left has no default, as with the builtin
    assert pair.__new__.__code__.co_filename == plain_pair.__new__.__code__.co_filename


def test_eval_keeps_the_builtins_semantics(cache_file: Path) -> None:
    compile_cache.install()
    assert compile_cache.cached_eval("6 * 7", {}) == 42
    assert compile_cache.cached_eval(compile("1 + 1", "<string>", "eval")) == 2
    local = 5
    assert compile_cache.cached_eval("local + 1") == 6 and local == 5  # the caller's names
    with pytest.raises(SyntaxError):
        compile_cache.cached_eval("x = 1", {})  # a statement is not an expression


def test_the_cli_fills_the_cache(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MOCKBROKER_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    result = subprocess.run([sys.executable, "-m", "mockbroker", "--help"], env=env,
                            cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    saved = compile_cache.CompileCache(
        str(tmp_path / "mockbroker" / f"dataclasses.{sys.implementation.cache_tag}.marshal"))
    assert len(saved.entries) > 10


def test_installed_covers_only_what_is_defined_inside(cache_file: Path) -> None:
    with compile_cache.installed():
        assert vars(dataclasses)["exec"] is compile_cache.cached_exec
        assert vars(collections)["eval"] is compile_cache.cached_eval
        define()
    assert "exec" not in vars(dataclasses) and "eval" not in vars(collections)
    assert compile_cache.install().added == 6  # the same cache object, still in the process
    with compile_cache.installed():  # inside an installed process it stays installed
        pass
    assert vars(dataclasses)["exec"] is compile_cache.cached_exec


def test_the_package_imports_the_simulator_through_the_cache(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MOCKBROKER_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    probe = ("import dataclasses, mockbroker; mockbroker.MockCluster; "
             "assert 'exec' not in vars(dataclasses)")
    result = subprocess.run([sys.executable, "-c", probe], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    saved = compile_cache.CompileCache(
        str(tmp_path / "mockbroker" / f"dataclasses.{sys.implementation.cache_tag}.marshal"))
    assert len(saved.entries) > 100
