"""A persistent cache of the code objects `dataclasses` and `namedtuple` compile, for the
CLI's start-up.

Theory of operation: every `@dataclass` has the dataclasses module generate the source of
its __init__, __repr__, __eq__ (and for frozen ones __setattr__, __delattr__, __hash__) and
compile it with `exec`; the simulator defines about a hundred dataclasses, so that compile
is a third of the time `python -m mockbroker` spends importing before READY. The generated
source is a pure function of the class definition, so the code object compiled from it is
kept on disk and later processes load it (marshal) instead of compiling, as the interpreter
does with bytecode caches (and kafka_protocol_codec.code_cache with construct's codecs).

`install()` reads the cache file once and shadows the name `exec` in the dataclasses
module's namespace (where `dataclasses._create_fn` finds the builtin) with `cached_exec`,
which runs exactly what the builtin would: a string is compiled as the builtin compiles it
(filename "<string>", no inherited __future__ flags), through the cache; anything else goes
straight to the builtin. `collections.namedtuple` (and typing.NamedTuple through it) compiles
each class's `__new__` with `eval`: the name `eval` in the collections module's namespace is
shadowed the same way by `cached_eval` (entries in "eval" mode are keyed apart). The CLI installs it for its whole process (mockbroker/__main__.py);
in an application's process `installed()` covers only the simulator's own import (the
package's lazy `MockCluster`, mockbroker/__init__.py), then dataclasses compile as before.

The cache is one marshal file, a dict from generated source to code object under the
interpreter's bytecode magic number (a changed class is a different source, another
interpreter another magic: neither meets a stale entry). One file, because opening an entry
per method cost as much as a third of what the cache saves. It is rewritten at exit when the
process compiled something new (what it had plus what it added; a file grown past
MAX_ENTRIES keeps only what this process used), to a temporary file renamed over the old,
so a reader sees a whole file or none, and two writers lose at most each other's additions.
The file is $XDG_CACHE_HOME/mockbroker/dataclasses.TAG.marshal, else
~/.cache/mockbroker/dataclasses.TAG.marshal (TAG: the interpreter's cache tag, cpython-311,
so two interpreters do not rewrite each other's file); nothing is written when the interpreter writes no
bytecode (-B, PYTHONDONTWRITEBYTECODE). Any failure (no home, a read-only disk, a corrupt
file) falls back to compiling: the cache can only save time.
"""

from __future__ import annotations

import atexit
import builtins
import collections
import contextlib
import dataclasses
import importlib.util
import marshal
import os
import sys
from collections.abc import Iterator
from types import CodeType
from typing import Any

FILENAME = "<string>"  # what the builtin exec names code it compiles from a string
EVAL_KEY = "\0eval\0"  # prefix of the key of a source compiled in "eval" mode
MAX_ENTRIES = 1024  # about twice what a CLI run defines (with aiohttp): stale ones go soon


class CompileCache:
    """The entries of one cache file: loaded once, saved when something was added."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.entries: dict[str, CodeType] = self._read() if path is not None else {}
        self.used: dict[str, CodeType] = {}
        self.added = 0

    def _read(self) -> dict[str, CodeType]:
        assert self.path is not None
        try:
            with open(self.path, "rb") as f:
                magic, entries = marshal.loads(f.read())
        except (OSError, ValueError, EOFError, TypeError):
            return {}
        if magic != importlib.util.MAGIC_NUMBER or not isinstance(entries, dict):
            return {}
        return entries

    def compile(self, source: str, mode: str = "exec") -> CodeType:
        """`compile(source, "<string>", mode)` as the builtin exec (or eval) compiles it,
        from the cache when it holds the source."""
        key = source if mode == "exec" else EVAL_KEY + source
        code = self.entries.get(key)
        if not isinstance(code, CodeType):
            # dont_inherit: compiled as the builtins compile it for dataclasses.py and
            # collections, which have no __future__ imports (this module's would stringify
            # annotations)
            code = compile(source, FILENAME, mode, dont_inherit=True)
            self.entries[key] = code
            self.added += 1
        self.used[key] = code
        return code

    def save(self) -> None:
        """Write the file if this process added entries; silently not when the disk says no."""
        if self.path is None or not self.added or sys.dont_write_bytecode:
            return
        entries = self.entries if len(self.entries) <= MAX_ENTRIES else self.used
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(temporary, "wb") as out:
                out.write(marshal.dumps((importlib.util.MAGIC_NUMBER, entries)))
            os.replace(temporary, self.path)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        self.added = 0


def cache_path() -> str | None:
    """The cache file, or None when there is no place for it."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not base:
        home = os.path.expanduser("~")
        if home == "~":  # no home directory to be found
            return None
        base = os.path.join(home, ".cache")
    tag = sys.implementation.cache_tag or "none"
    return os.path.join(base, "mockbroker", f"dataclasses.{tag}.marshal")


_cache: CompileCache | None = None


def _run_cached(run: Any, mode: str, source: Any, globals: Any, locals: Any) -> Any:
    """What the builtin `run` (exec or eval) does, called from cached_exec / cached_eval:
    with no namespaces given, those of their caller (two frames up); a str source compiled
    through the installed cache in `mode`."""
    if globals is None:  # the builtin's defaults: the caller's namespaces
        caller = sys._getframe(2)
        globals = caller.f_globals
        if locals is None:
            locals = caller.f_locals
    if isinstance(source, str) and _cache is not None:
        source = _cache.compile(source, mode)
    return run(source, globals, locals)


def cached_exec(source: Any, globals: Any = None, locals: Any = None, /) -> Any:
    """The builtin exec, with a str source compiled through the installed cache."""
    return _run_cached(builtins.exec, "exec", source, globals, locals)


def cached_eval(source: Any, globals: Any = None, locals: Any = None, /) -> Any:
    """The builtin eval, with a str source compiled through the installed cache."""
    return _run_cached(builtins.eval, "eval", source, globals, locals)


def install() -> CompileCache:
    """Let every dataclass and named tuple defined from now on in this process use the
    cache (saved at exit)."""
    global _cache
    if _cache is None:
        _cache = CompileCache(cache_path())
        atexit.register(_cache.save)
    vars(dataclasses)["exec"] = cached_exec
    vars(collections)["eval"] = cached_eval
    return _cache


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """The cache for what is defined inside (the simulator's own import, from an
    application's process): afterwards dataclasses and named tuples compile as before."""
    was = vars(dataclasses).get("exec"), vars(collections).get("eval")
    install()
    try:
        yield
    finally:
        if was[0] is None:
            vars(dataclasses).pop("exec", None)
        if was[1] is None:
            vars(collections).pop("eval", None)


def uninstall() -> None:
    """Dataclasses and named tuples defined from now on compile with the builtins again;
    the cache is saved."""
    global _cache
    vars(dataclasses).pop("exec", None)
    vars(collections).pop("eval", None)
    if _cache is not None:
        _cache.save()
        atexit.unregister(_cache.save)
        _cache = None
