"""The wheel users install: build it, check what it holds, install it into a fresh virtual
environment and check the installed package there (compiled parts loaded, a broker serving).

Used by tests/test_wheel.py (a wheel built from the checkout without build isolation, in a
venv that borrows the dependencies of the development environment: seconds), by
`make wheel-check` and by `make bench` (`python -m build`, sdist then wheel, with build
isolation, into a venv that installs the dependencies from the package index: what a user gets).

    python -m tests.support.wheel --venv DIR [--extras bench] [--dist DIR]

builds, checks, installs into DIR (made anew) and checks the installed package; it prints
one line per step and exits 1, naming the problem, when a check fails.

The compiled modules expected are setup.py's COMPILED (read from its source, so nothing of
setuptools is needed to know them). Every step is a subprocess with a timeout.
"""

from __future__ import annotations

import argparse
import ast
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD_MODE_VARIABLE = "MOCKBROKER_BUILD_COMPILED"
BUILD_TIMEOUT = 900.0
INSTALL_TIMEOUT = 900.0
CHECK_TIMEOUT = 120.0


# The checkout's distributions: their source roots (each with a pyproject.toml), the folder of
# each import package, and the setup.py that lists the compiled modules. Two layouts are
# understood: today's one distribution, whose pyproject.toml maps kafka_protocol_codec to the
# folder protocol/; and the codec as its own distribution rooted at protocol/ (its package in
# protocol/kafka_protocol_codec/, the compiled modules in protocol/setup.py; README,
# "Packaging"), which mockbroker's distribution depends on.
def distribution_roots() -> list[Path]:
    """The folders `python -m build` builds, the codec's first."""
    codec = REPO / "protocol"
    return [codec, REPO] if (codec / "pyproject.toml").is_file() else [REPO]


def package_folders() -> dict[str, Path]:
    """Import package -> its folder in the checkout."""
    codec = REPO / "protocol" / "kafka_protocol_codec"
    return {"kafka_protocol_codec": codec if codec.is_dir() else REPO / "protocol",
            "mockbroker": REPO / "mockbroker"}


def compiled_setup() -> Path:
    """The setup.py holding COMPILED (its sources are relative to its folder)."""
    for root in distribution_roots():
        if (root / "setup.py").is_file() and "COMPILED" in (root / "setup.py").read_text():
            return root / "setup.py"
    raise WheelCheckFailed("no setup.py with a COMPILED list")


class WheelCheckFailed(AssertionError):
    pass


def compiled_modules() -> dict[str, str]:
    """setup.py's COMPILED: import name -> source, read from the file's syntax tree."""
    tree = ast.parse(compiled_setup().read_text())
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == "COMPILED" and node.value is not None:
            value = ast.literal_eval(node.value)
            assert isinstance(value, dict), value
            return {str(name): str(source) for name, source in value.items()}
    raise WheelCheckFailed("setup.py has no COMPILED list")


def run(argv: list[str], *, timeout: float, cwd: Path = REPO,
        env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run([str(arg) for arg in argv], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise WheelCheckFailed(f"{' '.join(map(str, argv))} took over {timeout:.0f}s") from exc
    if done.returncode != 0:
        raise WheelCheckFailed(f"{' '.join(map(str, argv))} exited {done.returncode}:\n"
                               f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done.stdout


def build_wheels(outdir: Path, *, isolated: bool) -> list[Path]:
    """The wheels of distribution_roots(), built with every compiled module required (a
    module that does not compile fails the build). isolated: `python -m build` as a release would (an sdist, then the wheel
    from it, each in a new environment with pyproject.toml's build requirements from the
    index); else the wheel straight from the checkout with this environment's setuptools and
    Cython (which reuses what `make accel` compiled in build/)."""
    shutil.rmtree(outdir, ignore_errors=True)
    roots = distribution_roots()
    for root in roots:
        argv = [sys.executable, "-m", "build", "--outdir", str(outdir)]
        if not isolated:
            argv += ["--wheel", "--no-isolation"]
        run([*argv, str(root)], timeout=BUILD_TIMEOUT,
            env={**os.environ, BUILD_MODE_VARIABLE: "require"})
    wheels = sorted(outdir.glob("*.whl"))
    if len(wheels) != len(roots):
        raise WheelCheckFailed(f"expected {len(roots)} wheel(s) in {outdir}, found {wheels}")
    return wheels


def wheel_problems(wheels: list[Path]) -> list[str]:
    """What is wrong with the wheels' contents: every module of the checkout's packages (the
    generated codec included) and py.typed present, one compiled module for this interpreter
    per COMPILED entry in a wheel with a platform tag, and no Cython or C sources."""
    names = set()
    platform_wheels = set()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            held = set(archive.namelist())
        names |= held
        if not wheel.name.removesuffix(".whl").endswith("-any"):
            platform_wheels |= held
    problems = []
    for package, folder in package_folders().items():
        for source in sorted(folder.rglob("*.py")):
            if "__pycache__" in source.parts:
                continue
            inside = f"{package}/{source.relative_to(folder).as_posix()}"
            if inside not in names:
                problems.append(f"missing {inside} (from {source.relative_to(REPO)})")
    if "kafka_protocol_codec/py.typed" not in names:
        problems.append("missing kafka_protocol_codec/py.typed")
    if not any(name.startswith("kafka_protocol_codec/generated/") for name in names):
        problems.append("no generated codec (kafka_protocol_codec/generated/)")
    compiled = compiled_modules()
    for module in compiled:
        stem = module.replace(".", "/")
        found = [name for name in names if any(
            name == stem + suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES)]
        if len(found) != 1:
            problems.append(f"compiled module {module}: expected one file for "
                            f"{sys.implementation.cache_tag}, found {found}")
        elif found[0] not in platform_wheels:
            problems.append(f"{found[0]} is in a wheel tagged for any platform")
    sources = sorted(name for name in names if name.endswith((".pyx", ".pxi", ".c")))
    if sources:
        problems.append(f"sources in the wheel: {sources}")
    return problems


def _purelib(python: Path) -> Path:
    return Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                    timeout=CHECK_TIMEOUT).strip())


def make_venv(venv: Path, wheels: list[Path], *, extras: str = "",
              borrow_dependencies: Path | None = None) -> Path:
    """A new virtual environment at `venv` (any old one removed) with the wheels installed
    (`extras` of mockbroker's); its Python. The dependencies come from the package index, or with borrow_dependencies
    from that site-packages folder: the wheel alone is installed, and a .pth file puts the
    folder after the venv's own site-packages (only as a path: the .pth files there, such as
    an editable install's, are not run), so the installed package is what imports."""
    shutil.rmtree(venv, ignore_errors=True)
    python = venv / "bin" / "python"
    requirements = [f"{wheel}[{extras}]" if extras and wheel.name.startswith("mockbroker-")
                    else str(wheel) for wheel in wheels]
    if borrow_dependencies is not None:
        run([sys.executable, "-m", "venv", "--without-pip", venv], timeout=CHECK_TIMEOUT)
        run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
             "--disable-pip-version-check", "--no-deps", "--no-index", *requirements],
            timeout=INSTALL_TIMEOUT)
        (_purelib(python) / "_borrowed_dependencies.pth").write_text(
            f"{borrow_dependencies}\n")
    else:
        run([sys.executable, "-m", "venv", venv], timeout=CHECK_TIMEOUT)
        run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             *requirements], timeout=INSTALL_TIMEOUT)
    return python


# Run by the venv's Python in isolated mode (-I: neither the checkout nor PYTHONPATH on the
# path) from an empty folder. Prints a JSON report; an assertion names what is wrong.
INSTALLED_CHECK = r"""
import importlib, importlib.machinery, json, select, socket, struct, subprocess, sys, time
from pathlib import Path

compiled = json.loads(sys.argv[1])
prefix = Path(sys.prefix).resolve()

def inside(module):
    path = Path(module.__file__).resolve()
    assert prefix in path.parents, f"{module.__name__} imported from {path}, not {prefix}"
    return str(path)

import kafka_protocol_codec, mockbroker
files = {name: inside(sys.modules[name]) for name in ("kafka_protocol_codec", "mockbroker")}
loaded = []
for name in compiled:
    module = importlib.import_module(name)
    inside(module)
    assert isinstance(module.__loader__, importlib.machinery.ExtensionFileLoader), \
        f"{name} is not the compiled module: {module.__file__}"
    loaded.append(name)

# the codec: a request encoded and decoded again
from kafka_protocol_codec import decode_request, encode_request
body = {"client_software_name": "wheel-check", "client_software_version": "1"}
request = decode_request(encode_request(18, 3, body, correlation_id=7))
assert request.correlation_id == 7 and request.body["client_software_name"] == "wheel-check", \
    request

# the console script: a one-broker cluster, asked for its API versions (v0, hand-built bytes)
script = Path(sys.executable).with_name("mockbroker")
proc = subprocess.Popen([str(script), "--brokers", "1", "--port", "0"], stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    deadline = time.monotonic() + 60
    line = ""
    while not line.startswith("READY") and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
    assert line.startswith("READY"), f"no READY line: {line!r} {proc.stderr.read()[-2000:]!r}"
    host, port = line.split()[1].removeprefix("bootstrap=").split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(struct.pack(">ihhih", 10, 18, 0, 1, -1))
        answer = b""
        while len(answer) < 4 or len(answer) < 4 + struct.unpack_from(">i", answer)[0]:
            chunk = conn.recv(65536)
            assert chunk, "the broker closed the connection"
            answer += chunk
    correlation, error, apis = struct.unpack_from(">ihi", answer, 4)
    assert (correlation, error) == (1, 0) and apis > 10, (correlation, error, apis)
finally:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=20)
print(json.dumps({"python": sys.version.split()[0], "prefix": str(prefix), "files": files,
                  "compiled": loaded, "api_versions": apis}))
"""


def check_installed(python: Path) -> dict[str, object]:
    """INSTALLED_CHECK in the venv of `python`: its report (raises when a check fails)."""
    with tempfile.TemporaryDirectory(prefix="wheel-check-") as empty:
        out = run([python, "-I", "-c", INSTALLED_CHECK, json.dumps(sorted(compiled_modules()))],
                  timeout=CHECK_TIMEOUT, cwd=Path(empty))
    report = json.loads(out.strip().splitlines()[-1])
    assert isinstance(report, dict)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, required=True, help="the venv to make (anew)")
    parser.add_argument("--dist", type=Path, default=REPO / "dist",
                        help="where the sdist and wheel go (emptied first; default dist/)")
    parser.add_argument("--extras", default="", help="extras installed with the wheel")
    args = parser.parse_args(argv)
    args.venv, args.dist = args.venv.resolve(), args.dist.resolve()
    try:
        print(f"building the sdist(s) and wheel(s) into {args.dist} (python -m build, "
              f"{BUILD_MODE_VARIABLE}=require)", flush=True)
        wheels = build_wheels(args.dist, isolated=True)
        listed = ", ".join(wheel.name for wheel in wheels)
        problems = wheel_problems(wheels)
        if problems:
            raise WheelCheckFailed(f"{listed}:\n  " + "\n  ".join(problems))
        print(f"{listed}: {', '.join(sorted(compiled_modules())) or 'no'} compiled "
              "module(s), the generated codec and py.typed", flush=True)
        print(f"installing {'them' if len(wheels) > 1 else 'it'}"
              f"{f' [{args.extras}]' if args.extras else ''} into a new venv {args.venv}",
              flush=True)
        python = make_venv(args.venv, wheels, extras=args.extras)
        report = check_installed(python)
    except WheelCheckFailed as exc:
        print(f"wheel check failed: {exc}", file=sys.stderr)
        return 1
    print(f"installed and checked: Python {report['python']}, compiled parts loaded: "
          f"{', '.join(report['compiled']) or 'none'}; a broker served "  # type: ignore[arg-type]
          f"{report['api_versions']} APIs", flush=True)
    return 0


def development_site_packages() -> Path:
    """This interpreter's site-packages: the dependencies a borrowing venv uses."""
    return Path(sysconfig.get_path("purelib"))


if __name__ == "__main__":
    sys.exit(main())
