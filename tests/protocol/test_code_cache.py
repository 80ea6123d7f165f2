"""The persistent cache of compiled codecs (kafka_protocol_codec.code_cache): generated code,
entry points and decode-plan description, keyed by the message definition."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kafka_protocol_codec import accel, api, code_cache, extensions
from kafka_protocol_codec.schema import F
from kafka_protocol_codec.structs import Codec

BODY = {"client_software_name": "cache-test", "client_software_version": "1.0"}


def build() -> Codec:
    """A fresh codec (not the process-wide one codec_for hands out): ApiVersions v3."""
    return Codec(api(18).request, 3)


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*" + code_cache.SUFFIX))


def test_a_cached_codec_encodes_and_decodes_as_a_compiled_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(code_cache.ENV, str(tmp_path))
    first = build()  # compiles and stores
    stored = entries(tmp_path)
    assert stored
    mtimes = [p.stat().st_mtime_ns for p in stored]
    second = build()  # loads
    assert entries(tmp_path) == stored and [p.stat().st_mtime_ns for p in stored] == mtimes
    encoded = first.encode(BODY)
    assert second.encode(BODY) == encoded
    assert second.decode(encoded) == first.decode(encoded)
    monkeypatch.setenv(code_cache.ENV, code_cache.OFF)
    assert build().encode(BODY) == encoded


def test_a_corrupt_entry_is_compiled_again(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(code_cache.ENV, str(tmp_path))
    expected = build().encode(BODY)
    for entry in entries(tmp_path):
        entry.write_bytes(b"not marshal data")
    assert build().encode(BODY) == expected
    assert all(p.read_bytes() != b"not marshal data" for p in entries(tmp_path))


def test_an_entry_that_does_not_run_is_built_again(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Well-formed marshal data whose module lacks the entry points is rebuilt, not trusted."""
    monkeypatch.setenv(code_cache.ENV, str(tmp_path))
    expected = build().encode(BODY)
    message = api(18).request
    stale = code_cache.CachedCodec(compile("x = 1", "<stale>", "exec"), "parse_gone",
                                   "build_gone", ((), True, ()))
    code_cache.store(message, 3, stale)
    assert code_cache.load(message, 3) == stale
    assert build().encode(BODY) == expected
    reloaded = code_cache.load(message, 3)
    assert reloaded is not None and reloaded.parse_name != "parse_gone"


def test_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(code_cache.ENV, code_cache.OFF)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert code_cache.cache_dir() is None
    build()
    assert not list(tmp_path.rglob("*"))


def test_default_directory_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(code_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert code_cache.cache_dir() == str(tmp_path / "kafka-protocol-codec")


def test_an_unwritable_directory_only_costs_the_compile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(code_cache.ENV, str(blocker / "cache"))  # cannot be created
    assert build().encode(BODY)


def test_a_loaded_codec_has_the_same_decode_plan(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The stored description is the one the construct tree gives."""
    monkeypatch.setenv(code_cache.ENV, str(tmp_path))
    message = api(3).response  # Metadata: nested arrays, tagged fields, absent members
    built = Codec(message, 12)
    loaded = code_cache.load(message, 12)
    assert loaded is not None
    assert loaded.plan == accel.describe(built.construct)
    assert loaded.parse_name == built.construct.parse_fn_name


def test_a_changed_definition_is_another_entry(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(code_cache.ENV, str(tmp_path))
    message = api(18).request
    extended = extensions.extend_message(message, (), F(
        "cache_test_field", "int32", (3, None), default=-1, tag=999, tagged=(3, None)))
    assert code_cache.entry_name(message, 3) != code_cache.entry_name(extended, 3)
    assert code_cache.entry_name(message, 3) != code_cache.entry_name(message, 4)
    Codec(message, 3)
    assert code_cache.load(extended, 3) is None
    codec = Codec(extended, 3)
    assert codec.decode(codec.encode({**BODY, "cache_test_field": 5}))["cache_test_field"] == 5
    assert len(entries(tmp_path)) == 2


def test_codecs_from_the_cache_do_not_import_construct(tmp_path: Path) -> None:
    """A process whose codecs all come from the cache never imports construct, and the loaded
    code needs nothing the generating process set up (Metadata: fixed-width arrays, compact
    v12 and legacy v8)."""
    program = (
        "import sys\n"
        "from kafka_protocol_codec import api, codec_for\n"
        "value = {'topics': [{'name': 't', 'partitions': [{'partition_index': 0,"
        " 'replica_nodes': [1, 2, 3], 'isr_nodes': [1]}]}]}\n"
        "for version in (8, 12):\n"
        "    codec = codec_for(api(3).response, version)\n"
        "    topic = codec.decode(codec.encode(value))['topics'][0]\n"
        "    assert topic['partitions'][0]['replica_nodes'] == [1, 2, 3], topic\n"
        "print('construct' in sys.modules)\n")
    env = {**os.environ, code_cache.ENV: str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                           timeout=60, check=True, env=env)
            for _ in range(2)]
    assert [run.stdout.split() for run in runs] == [["True"], ["False"]]
