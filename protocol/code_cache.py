"""A persistent cache of the code objects construct compiles for codecs.

Theory of operation: building a Codec has construct generate Python source for one message
at one version and compile it, and the compile is most of that cost (about half a
millisecond per codec). A process pays it for every codec it first uses: a simulated
cluster's first start needs seven. The generated source is a pure function of the schema,
so the code object compiled from it is kept on disk and later processes load it (marshal)
instead of compiling, as the interpreter does with bytecode caches.

An entry is named by the SHA-256 of the interpreter's bytecode magic number and the source,
so a changed schema, codec or interpreter never meets a stale entry. The directory is
$KAFKA_PROTOCOL_CODEC_CACHE, else $XDG_CACHE_HOME/kafka-protocol-codec, else
~/.cache/kafka-protocol-codec; KAFKA_PROTOCOL_CODEC_CACHE=off turns the cache off. Entries
are written to a temporary file and renamed, so a reader sees a whole entry or none. Any
failure (no home, a read-only disk, a corrupt entry) falls back to compiling: the cache can
only save time.

`compiling()` wraps a call to construct's `Construct.compile`: for its duration the name
`compile` in construct.core's namespace (where that method finds the builtin) is this
module's caching function, which answers exactly what the builtin would.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import marshal
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from types import CodeType
from typing import Any

import construct.core

ENV = "KAFKA_PROTOCOL_CODEC_CACHE"
OFF = "off"
_MISSING = object()
_LOCK = threading.RLock()  # one shadowing at a time, so each restores what it found


def cache_dir() -> Path | None:
    """Where entries live, or None when the cache is off or there is no place for it."""
    configured = os.environ.get(ENV, "")
    if configured == OFF:
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no home directory to be found
            return None
    return Path(base) / "kafka-protocol-codec"


def entry_name(source: str) -> str:
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER + source.encode())
    return digest.hexdigest() + ".marshal"


def load(directory: Path, source: str) -> CodeType | None:
    """The cached code object of `source`, or None (absent, unreadable or corrupt)."""
    try:
        data = (directory / entry_name(source)).read_bytes()
        code = marshal.loads(data)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def store(directory: Path, code: CodeType, source: str) -> None:
    """Keep `code` for `source`; silently does nothing when the disk says no."""
    import tempfile  # only on a miss: it imports shutil, which start-up avoids

    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(marshal.dumps(code))
            os.replace(temporary, directory / entry_name(source))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError:
        pass


def cached_compile(source: Any, filename: Any, mode: Any, *args: Any, **kwargs: Any) -> Any:
    """The builtin compile, through the cache for construct's own call (str source, exec
    mode, no extra arguments); anything else goes straight to the builtin."""
    directory = cache_dir() if isinstance(source, str) and mode == "exec" and filename == "" \
        and not args and not kwargs else None
    if directory is None:
        return compile(source, filename, mode, *args, **kwargs)
    code = load(directory, source)
    if code is None:
        code = compile(source, filename, mode)
        store(directory, code, source)
    return code


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """Let construct's Construct.compile (called inside) use the cache."""
    namespace = vars(construct.core)
    with _LOCK:
        previous = namespace.get("compile", _MISSING)
        namespace["compile"] = cached_compile
        try:
            yield
        finally:
            if previous is _MISSING:
                namespace.pop("compile", None)
            else:
                namespace["compile"] = previous
