"""The package build's compiled parts: the one list of Cython modules, and how they are built.

Everything else about the distribution is declared in pyproject.toml; this file only adds
the extension modules, because setuptools reads ``ext_modules`` from setup.py alone. The
same build serves every way the project is built:

- ``python -m build`` (sdist, then a wheel from it): a platform wheel holding one compiled
  module per entry of COMPILED next to the package's Python code (``make wheel``);
- ``pip install .`` and the editable install of ``make venv``;
- ``make accel``: ``setup.py build_ext --inplace``, the compiled modules next to their
  sources in the checkout (protocol/).

Each compiled module has a pure Python twin that runs when the module is absent (the codec
imports it through kafka_protocol_codec.native.import_native). A source may be a ``.pyx``
or a Cython "pure Python mode" ``.py``: the ``.py`` file is then both the fallback and the
source of the compiled module, and Python imports the compiled one first when both are there.

What happens when a module cannot be compiled (no C compiler, no Python headers, no Cython)
is chosen by MOCKBROKER_BUILD_COMPILED:

- ``auto`` (the default): the failure is reported in the build's output, the build goes on,
  and the result runs the pure Python code. The compiled parts are a speed-up with identical
  behaviour, so a user on a platform without a published wheel and without a compiler still
  gets a working (slower) install, as with msgpack, PyYAML or aiohttp.
- ``require``: the build fails, naming the module and the cause. The project's own builds
  use it (``make accel``, ``make wheel``, ``make bench``, ``make wheel-check``), so what the
  tests and the benchmarks measure is never silently the fallback.
- ``no``: nothing is compiled; the wheel is pure Python (``py3-none-any``).
"""

from __future__ import annotations

import os
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The codec's compiled modules: import name -> source (relative to this file). The one list:
# the package build, `make accel` and the wheel's check (tests/test_wheel.py) all read it.
COMPILED: dict[str, str] = {
    "kafka_protocol_codec.record_walk": "protocol/record_walk.py",  # + record_walk.pxd
}
# Cython's directives for every module (a module's own header comment may add more).
CYTHON_DIRECTIVES = {"language_level": "3"}

MODES = ("auto", "require", "no")
ENVIRONMENT = "MOCKBROKER_BUILD_COMPILED"


def build_mode() -> str:
    mode = os.environ.get(ENVIRONMENT, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise SystemExit(f"{ENVIRONMENT}={mode!r}: expected one of {', '.join(MODES)}")
    return mode


class CompileFailed(Exception):
    pass


class build_cython_ext(build_ext):
    """build_ext that turns each source into C with Cython first (the C files go to the
    build's temporary folder, never into the checkout), and applies the build mode to a
    module that cannot be built."""

    def run(self) -> None:
        self.failed: list[str] = []
        super().run()
        if self.failed:
            print("\n" + "\n".join(
                f"WARNING: {line}" for line in [
                    f"{ENVIRONMENT}=auto: not compiled, the pure Python code runs instead:",
                    *self.failed,
                    f"({ENVIRONMENT}=require makes this an error)"]) + "\n", file=sys.stderr)

    def build_extension(self, ext: Extension) -> None:
        try:
            self._find_compiler()
            self._cythonize(ext)
            super().build_extension(ext)
        except Exception as exc:  # a compiler, header or Cython failure: the mode decides
            reason = f"{ext.name}: {type(exc).__name__}: {exc}"
            if build_mode() == "require":
                raise CompileFailed(
                    f"could not compile {reason}\n({ENVIRONMENT}=require; with a C compiler, "
                    "the Python headers and Cython this builds, or set "
                    f"{ENVIRONMENT}=auto to fall back to pure Python)") from exc
            self.failed.append(reason)

    def _find_compiler(self) -> None:
        """Fail at once, before Cython's work, when the C compiler is not installed."""
        command = getattr(self.compiler, "compiler_so", None)  # Unix compilers have one
        if command and shutil.which(command[0]) is None:
            raise CompileFailed(f"no C compiler: {command[0]!r} is not installed")

    def _cythonize(self, ext: Extension) -> None:
        try:
            from Cython.Build import cythonize
        except ImportError as exc:
            raise CompileFailed("Cython is not installed (a build requirement in "
                                "pyproject.toml)") from exc
        # the source as listed (setuptools turns .pyx into .c names when Cython is absent)
        ext.sources = [ext.cython_source]  # type: ignore[attr-defined]
        (converted,) = cythonize([ext], compiler_directives=CYTHON_DIRECTIVES,
                                 build_dir=self.build_temp, quiet=True, force=self.force,
                                 include_path=[self._declarations(ext)])
        ext.sources = converted.sources


    def _declarations(self, ext: Extension) -> str:
        """A folder where Cython finds the .pxd files of the module's package under the
        package's import name. Cython looks up a module's declarations (a pure Python mode
        module's C types, record_walk.pxd) by its full name, kafka_protocol_codec.record_walk,
        and the package's sources are in protocol/: without this copy it finds none and
        compiles the .py as untyped Python objects."""
        package, _, _ = ext.name.rpartition(".")
        source = ext.cython_source  # type: ignore[attr-defined]
        source_dir = os.path.dirname(os.path.abspath(source))
        root = os.path.join(os.path.abspath(self.build_temp), "pxd")
        target = os.path.join(root, *package.split("."))
        os.makedirs(target, exist_ok=True)
        for name in ["__init__.pxd"] + sorted(f for f in os.listdir(source_dir)
                                             if f.endswith(".pxd")):
            declared = os.path.join(source_dir, name)
            if os.path.isfile(declared):
                shutil.copyfile(declared, os.path.join(target, name))
            elif name == "__init__.pxd":
                open(os.path.join(target, name), "w").close()  # marks the package
        return root


def extensions() -> list[Extension]:
    if build_mode() == "no":
        return []
    here = os.path.dirname(os.path.abspath(__file__))
    missing = [source for source in COMPILED.values()
               if not os.path.isfile(os.path.join(here, source))]
    if missing:  # the list is stale: an error in every mode, never a silent fallback
        raise SystemExit(f"setup.py COMPILED names sources that do not exist: {missing}")
    built = []
    for name, source in COMPILED.items():
        ext = Extension(name, [source])
        ext.cython_source = source  # type: ignore[attr-defined]
        built.append(ext)
    return built


if __name__ == "__main__":
    setup(ext_modules=extensions(), cmdclass={"build_ext": build_cython_ext})
