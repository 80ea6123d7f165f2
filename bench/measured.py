"""What a benchmark measured: the installed wheel or the checkout, with or without the codec's
compiled parts. Every benchmark `make bench` runs prints statement() first and puts it
beside its figures.

`make bench` builds the wheel from the checkout (`python -m build`), installs it into a new
virtual environment (build/bench-venv, with the `bench` extra: the peers) and runs the
benchmarks with that environment's Python, so they measure what `pip install` gives a user.
Run with the development environment's Python (`.venv/bin/python bench/X.py`) they measure
the checkout (its editable install and the modules `make accel` compiled in place), and say so.

The mockbroker processes a benchmark starts must import the same package as the benchmark:
child_env() gives them an environment in which the checkout cannot shadow the installed
package (the checkout's root holds the folder `mockbroker/`, which `python -m` from the
checkout, or the checkout on PYTHONPATH, would otherwise import first).
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.metadata
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _compiled_modules() -> list[str]:
    """setup.py's COMPILED list (the modules the package build compiles), from its source:
    protocol/setup.py once the codec is its own distribution, else the checkout's."""
    for setup in (REPO / "protocol" / "setup.py", REPO / "setup.py"):
        if not setup.is_file():
            continue
        for node in ast.parse(setup.read_text()).body:
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and node.target.id == "COMPILED" and node.value is not None):
                return sorted(ast.literal_eval(node.value))
    return []


def installed() -> bool:
    """True when mockbroker is imported from an installed wheel, not from the checkout (whose
    folder may hold the venv: build/bench-venv)."""
    import mockbroker

    return Path(mockbroker.__file__).resolve().parent != REPO / "mockbroker"


def _codec_in_checkout() -> bool:
    import kafka_protocol_codec

    folder = Path(kafka_protocol_codec.__file__).resolve().parent
    return folder in (REPO / "protocol", REPO / "protocol" / "kafka_protocol_codec")


def compiled_parts() -> dict[str, bool]:
    """Each module setup.py compiles: True when it imports as a compiled module and the codec
    may use it (KAFKA_PROTOCOL_CODEC_PURE=1 asks the codec for pure Python only)."""
    if os.environ.get("KAFKA_PROTOCOL_CODEC_PURE", "") not in ("", "0"):
        return dict.fromkeys(_compiled_modules(), False)
    out = {}
    for name in _compiled_modules():
        try:
            module = importlib.import_module(name)
        except ImportError:
            out[name] = False
            continue
        out[name] = isinstance(getattr(module, "__loader__", None),
                               importlib.machinery.ExtensionFileLoader)
    return out


def statement() -> str:
    """One line: what this process measures."""
    import kafka_protocol_codec

    import mockbroker

    version = importlib.metadata.version("mockbroker")
    if installed():
        prefix = Path(sys.prefix).resolve()
        venv = prefix.relative_to(REPO) if REPO in prefix.parents else prefix
        where = f"the installed wheel (mockbroker {version} in the venv {venv})"
    else:
        where = f"the checkout ({Path(mockbroker.__file__).resolve().parent.parent})"
    parts = compiled_parts()
    loaded = [name.rsplit(".", 1)[-1] for name, ok in parts.items() if ok]
    missing = [name.rsplit(".", 1)[-1] for name, ok in parts.items() if not ok]
    compiled = (f"compiled parts loaded: {', '.join(loaded) or 'none'}"
                + (f"; pure Python instead of: {', '.join(missing)}" if missing else ""))
    assert _codec_in_checkout() != installed(), (
        f"mockbroker ({mockbroker.__file__}) and kafka_protocol_codec "
        f"({kafka_protocol_codec.__file__}): one installed, one from the checkout")
    return f"Measured: {where}, Python {sys.version.split()[0]}; {compiled}."


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a Python process the benchmark starts (a broker, a timed import):
    measuring the installed wheel, PYTHONSAFEPATH=1 (neither the working directory nor the
    script's folder goes first on the path) and the checkout off PYTHONPATH; measuring the
    checkout, the checkout first on PYTHONPATH, as before."""
    env = dict(os.environ if env is None else env)
    path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and Path(p).resolve() != REPO]
    if installed():
        env["PYTHONSAFEPATH"] = "1"
    else:
        path.insert(0, str(REPO))
    if path:
        env["PYTHONPATH"] = os.pathsep.join(path)
    else:
        env.pop("PYTHONPATH", None)
    return env


def use_checkout_modules() -> None:
    """Make the checkout's own helpers (tests.support, ...) importable without letting its
    `mockbroker/` folder shadow the installed package: the checkout goes last on the path."""
    if str(REPO) not in sys.path:
        sys.path.append(str(REPO))


if __name__ == "__main__":  # `python bench/measured.py`: the statement, and as JSON
    print(statement())
    print(json.dumps({"installed": installed(), "compiled": compiled_parts()}))
