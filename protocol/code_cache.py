"""A persistent cache of compiled codecs: generated code, entry points and decode plan.

Theory of operation: building a Codec builds the construct tree of one message at one
version, has it emit Python source (constructs.generate_module) and compiles it; for the
compiled decode plans (accel.py) it also reads the tree. All of that is a pure function of the
message definition and the version, and costs a process a millisecond or more per codec (a
simulated cluster's first start needs seven), most of it importing construct and building
and compiling. So the result is kept on disk: the code object (marshal), the names of the
parser and builder in it, and the plan's description. A later process loads the entry and
never builds the tree, nor imports construct, for that codec.

An entry is named by the SHA-256 of the message definition (its repr: every field, version
range and default, extensions included), the version, and a fingerprint of what turns a
definition into code: the interpreter's bytecode magic number, the source of the modules
that build codecs (structs, constructs, accel, this one) and construct's version. A changed
schema, codec, construct or interpreter never meets a stale entry. The directory is
$KAFKA_PROTOCOL_CODEC_CACHE, else $XDG_CACHE_HOME/kafka-protocol-codec, else
~/.cache/kafka-protocol-codec; KAFKA_PROTOCOL_CODEC_CACHE=off turns the cache off. Entries
are written to a temporary file and renamed, so a reader sees a whole entry or none. Any
failure (no home, a read-only disk, a corrupt entry, a missing source file) falls back to
building: the cache can only save time.
"""

from __future__ import annotations

import contextlib
import marshal
import os
from types import CodeType
from typing import Any, NamedTuple

ENV = "KAFKA_PROTOCOL_CODEC_CACHE"
OFF = "off"
SUFFIX = ".codec"
_FORMAT = 1  # of an entry's tuple; part of every entry
_BUILDERS = ("structs.py", "constructs.py", "accel.py", "code_cache.py")
_fingerprint: bytes | None = None


class CachedCodec(NamedTuple):
    """What a Codec needs of its generated code: the compiled module, its entry points and
    the compiled decode plan's description (accel.describe)."""

    code: CodeType
    parse_name: str
    build_name: str
    plan: Any


def cache_dir() -> str | None:
    """Where entries live, or None when the cache is off or there is no place for it."""
    configured = os.environ.get(ENV, "")
    if configured == OFF:
        return None
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not base:
        home = os.path.expanduser("~")
        if home == "~":  # no home directory to be found
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "kafka-protocol-codec")


def _construct_version() -> bytes:
    """construct's version.py, read without importing construct."""
    import importlib.util

    spec = importlib.util.find_spec("construct")
    if spec is None or not spec.submodule_search_locations:
        raise OSError("construct not found")
    with open(os.path.join(next(iter(spec.submodule_search_locations)), "version.py"), "rb") as f:
        return f.read()


def fingerprint() -> bytes:
    """The digest of what turns a definition into code (see the module docstring)."""
    global _fingerprint
    if _fingerprint is None:
        import hashlib
        import importlib.util

        digest = hashlib.sha256(importlib.util.MAGIC_NUMBER + bytes([_FORMAT]))
        here = os.path.dirname(os.path.abspath(__file__))
        for name in _BUILDERS:
            with open(os.path.join(here, name), "rb") as f:
                digest.update(f.read())
        digest.update(_construct_version())
        _fingerprint = digest.digest()
    return _fingerprint


def entry_name(message: object, version: int) -> str:
    import hashlib

    digest = hashlib.sha256(fingerprint())
    digest.update(f"{version}\n{message!r}".encode())
    return digest.hexdigest() + SUFFIX


def _entry_path(message: object, version: int) -> str | None:
    directory = cache_dir()
    if directory is None:
        return None
    try:
        return os.path.join(directory, entry_name(message, version))
    except OSError:  # a builder's source cannot be read: no fingerprint, no cache
        return None


def load(message: object, version: int) -> CachedCodec | None:
    """The cached codec of `message` at `version`, or None (absent, unreadable, corrupt)."""
    path = _entry_path(message, version)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            entry = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if (not isinstance(entry, tuple) or len(entry) != 5 or entry[0] != _FORMAT
            or not isinstance(entry[1], CodeType) or not isinstance(entry[2], str)
            or not isinstance(entry[3], str) or not isinstance(entry[4], tuple)):
        return None
    return CachedCodec(entry[1], entry[2], entry[3], entry[4])


def store(message: object, version: int, codec: CachedCodec) -> None:
    """Keep `codec` for `message` at `version`; silently does nothing when the disk says no
    (or the plan's description is not plain data)."""
    path = _entry_path(message, version)
    if path is None:
        return
    import tempfile  # only on a miss: it imports shutil, which start-up avoids

    try:
        data = marshal.dumps((_FORMAT, *codec))
    except ValueError:
        return
    try:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError:
        pass
