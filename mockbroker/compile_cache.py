"""A persistent cache of the code objects `dataclasses` compiles, for the CLI's start-up.

Theory of operation: every `@dataclass` has the dataclasses module generate the source of
its __init__, __repr__, __eq__ (and for frozen ones __setattr__, __delattr__, __hash__) and
compile it with `exec`; the simulator defines about a hundred dataclasses, so that compile
is a third of the time `python -m mockbroker` spends importing before READY. The generated
source is a pure function of the class definition, so the code object compiled from it is
kept on disk and later processes load it (marshal) instead of compiling, as the interpreter
does with bytecode caches (and kafka_protocol_codec.code_cache with construct's codecs).

`install()` shadows the name `exec` in the dataclasses module's namespace (where
`dataclasses._create_fn` finds the builtin) with `cached_exec`, which runs exactly what the
builtin would: a string is compiled as the builtin compiles it (filename "<string>"), through
the cache; anything else goes straight to the builtin. Only the CLI installs it
(mockbroker/__main__.py): it owns its process, an embedding application owns its own.

An entry is named by the SHA-256 of the interpreter's bytecode magic number and the source,
so a changed class or interpreter never meets a stale entry. The directory is
$XDG_CACHE_HOME/mockbroker/dataclasses, else ~/.cache/mockbroker/dataclasses; nothing is
written when the interpreter writes no bytecode (-B, PYTHONDONTWRITEBYTECODE). Entries are
written to a temporary file and renamed, so a reader sees a whole entry or none. Any failure
(no home, a read-only disk, a corrupt entry) falls back to compiling: the cache can only
save time.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import hashlib
import importlib.util
import marshal
import os
import sys
from types import CodeType
from typing import Any

FILENAME = "<string>"  # what the builtin exec names code it compiles from a string


def cache_dir() -> str | None:
    """Where entries live, or None when there is no place for them."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not base:
        home = os.path.expanduser("~")
        if home == "~":  # no home directory to be found
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "mockbroker", "dataclasses")


def entry_path(directory: str, source: str) -> str:
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER + source.encode())
    return os.path.join(directory, digest.hexdigest() + ".marshal")


def load(path: str) -> CodeType | None:
    """The cached code object at `path`, or None (absent, unreadable or corrupt)."""
    try:
        with open(path, "rb") as entry:
            code = marshal.loads(entry.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def store(directory: str, path: str, code: CodeType) -> None:
    """Keep `code` at `path`; silently does nothing when the disk says no."""
    if sys.dont_write_bytecode:
        return
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(directory, exist_ok=True)
        with open(temporary, "wb") as out:
            out.write(marshal.dumps(code))
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def compile_cached(source: str, directory: str) -> CodeType:
    """`compile(source, "<string>", "exec")`, loaded from `directory` when it was kept."""
    path = entry_path(directory, source)
    code = load(path)
    if code is None:
        # dont_inherit: compiled as the builtin exec compiles it for dataclasses.py, which
        # has no __future__ imports (this module's would stringify the annotations)
        code = compile(source, FILENAME, "exec", dont_inherit=True)
        store(directory, path, code)
    return code


def cached_exec(source: Any, globals: Any = None, locals: Any = None, /) -> Any:
    """The builtin exec, with a str source compiled through the cache."""
    if globals is None:  # the builtin's defaults: the caller's namespaces
        caller = sys._getframe(1)
        globals = caller.f_globals
        if locals is None:
            locals = caller.f_locals
    directory = cache_dir() if isinstance(source, str) else None
    if directory is not None:
        source = compile_cached(source, directory)
    return builtins.exec(source, globals, locals)


def install() -> None:
    """Let every dataclass defined from now on in this process use the cache."""
    vars(dataclasses)["exec"] = cached_exec


def uninstall() -> None:
    """Dataclasses defined from now on compile with the builtin again."""
    vars(dataclasses).pop("exec", None)
