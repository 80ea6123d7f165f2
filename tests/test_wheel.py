"""The wheel holds what the benchmarks measure, and runs installed (tests/support/wheel.py).

The wheel is built from the checkout with this environment's setuptools and Cython (no build
isolation: `make accel` already compiled setup.py's COMPILED modules in build/, so this takes
seconds) and installed alone into a new venv that borrows the development environment's
dependencies. `make wheel-check` does the same the way a release and a user would
(`python -m build` with isolation, dependencies from the index): minutes, so not here.

The build's handling of a module that cannot be compiled (setup.py, MOCKBROKER_BUILD_COMPILED)
is checked with a C compiler that always fails (CC=false), on C files Cython already made.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import wheel as w


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return w.build_wheels(tmp_path_factory.mktemp("dist"), isolated=False)


def test_compiled_modules_are_listed_with_existing_sources() -> None:
    compiled = w.compiled_modules()
    assert compiled, "setup.py COMPILED is empty"
    for module, source in compiled.items():
        assert module.startswith("kafka_protocol_codec."), module
        assert (w.compiled_setup().parent / source).is_file(), f"{module}: no {source}"


def test_the_wheel_holds_the_compiled_modules_the_codec_and_py_typed(
        built: list[Path]) -> None:
    assert w.wheel_problems(built) == []
    assert {wheel.name.split("-")[0] for wheel in built} >= {"mockbroker"}


def test_the_installed_wheel_imports_its_compiled_modules_and_serves(
        built: list[Path], tmp_path: Path) -> None:
    python = w.make_venv(tmp_path / "venv", built,
                         borrow_dependencies=w.development_site_packages())
    report = w.check_installed(python)
    assert report["compiled"] == sorted(w.compiled_modules())
    files = report["files"]
    assert isinstance(files, dict)
    for path in files.values():
        assert Path(path).is_relative_to((tmp_path / "venv").resolve()), files
    assert isinstance(report["api_versions"], int) and report["api_versions"] > 10


def _build_ext(tmp_path: Path, mode: str, compiler: str = "false"
               ) -> subprocess.CompletedProcess[str]:
    """setup.py build_ext into tmp_path with a compiler that fails (by default `false`, which
    exits 1), reusing the C files of `make accel` (build/temp.*) so that Cython has nothing
    to redo."""
    root = w.compiled_setup().parent
    temps = sorted((root / "build").glob("temp.*"))
    temp = temps[0] if temps else tmp_path / "temp"
    env = {**os.environ, "CC": compiler, "LDSHARED": compiler, w.BUILD_MODE_VARIABLE: mode}
    return subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib",
         str(tmp_path / "lib"), "--build-temp", str(temp)],
        cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_without_a_compiler_require_fails_naming_the_module(tmp_path: Path) -> None:
    done = _build_ext(tmp_path, "require")
    assert done.returncode != 0
    first = next(iter(w.compiled_modules()))
    assert f"could not compile {first}" in done.stderr
    assert f"{w.BUILD_MODE_VARIABLE}=auto" in done.stderr  # says how to fall back


def test_without_a_compiler_auto_builds_the_pure_python_package(tmp_path: Path) -> None:
    done = _build_ext(tmp_path, "auto")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "the pure Python code runs instead" in done.stderr
    for module in w.compiled_modules():
        assert module in done.stderr
    assert not list((tmp_path / "lib").rglob("*.so"))


def test_a_missing_compiler_is_named_before_any_cython_work(tmp_path: Path) -> None:
    done = _build_ext(tmp_path, "require", compiler="no-such-cc")
    assert done.returncode != 0
    assert "no C compiler: 'no-such-cc' is not installed" in done.stderr
