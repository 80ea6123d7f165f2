"""The committed protocol/generated/ is exactly what the generator makes from the schemas.

Regenerates from ../shared/kafka-message-schemas and ../shared/kafka-metadata-record-schemas
(relative to the repository), with the extensions of mockbroker/cluster/wire_extensions.py
compiled in as `make codegen` does, into a temporary folder and compares every file byte for
byte (definitions and codecs), with no file missing or extra. Skipped only when the schema folder is absent. Also checks
that no `about` prose or comment text from the schemas leaked into the output, that names
are snake_case, and that every API key 0..87 is there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from kafka_protocol_codec import api, api_keys
from kafka_protocol_codec import codegen as codegen_module
from kafka_protocol_codec.api import generated_messages
from kafka_protocol_codec.codegen import generate, load_schema, snake_case, write
from kafka_protocol_codec.generated import APIS
from kafka_protocol_codec.schema import F

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / ".." / "shared"
SCHEMAS = SHARED / "kafka-message-schemas"
RECORD_SCHEMAS = SHARED / "kafka-metadata-record-schemas"
GENERATED = REPO / "protocol" / "generated"
EXTENSIONS = REPO / "mockbroker" / "cluster" / "wire_extensions.py"

needs_schemas = pytest.mark.skipif(
    not SCHEMAS.is_dir(), reason=f"schema folder not found: {SCHEMAS}"
)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    if not SCHEMAS.is_dir():
        pytest.skip(f"schema folder not found: {SCHEMAS}")
    out = tmp_path_factory.mktemp("generated")
    record_schemas = RECORD_SCHEMAS if RECORD_SCHEMAS.is_dir() else None
    write(generate(SCHEMAS, record_schemas, out, EXTENSIONS), out)
    return _tree(out)


@needs_schemas
def test_regeneration_is_byte_identical(regenerated: dict[str, bytes]) -> None:
    committed = _tree(GENERATED)
    missing = sorted(set(regenerated) - set(committed))
    extra = sorted(set(committed) - set(regenerated))
    assert not missing, f"generated but not committed: {missing}"
    assert not extra, f"committed but not generated (stale?): {extra}"
    differing = sorted(rel for rel in committed if committed[rel] != regenerated[rel])
    assert not differing, f"committed files differ from `make codegen` output: {differing}"


@needs_schemas
def test_main_entry_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m kafka_protocol_codec.codegen` (what `make codegen` runs) gives the same."""
    out = tmp_path / "out"
    args = ["--schemas", str(SCHEMAS), "--out", str(out), "--extensions", str(EXTENSIONS)]
    if RECORD_SCHEMAS.is_dir():
        args += ["--record-schemas", str(RECORD_SCHEMAS)]
    assert codegen_module.main(args) == 0
    assert _tree(out) == _tree(GENERATED)
    assert codegen_module.main(["--schemas", str(tmp_path / "absent"), "--out", str(out)]) == 2


# ------------------------------------------------------------------ no prose carried over


def _abouts(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "about" and isinstance(value, str):
                found.append(value)
            else:
                found += _abouts(value)
    elif isinstance(node, list):
        for item in node:
            found += _abouts(item)
    return found


def _schema_files() -> list[Path]:
    files = sorted(SCHEMAS.glob("*.json"))
    if RECORD_SCHEMAS.is_dir():
        files += sorted(RECORD_SCHEMAS.glob("*.json"))
    return files


def _prose() -> set[str]:
    texts: set[str] = set()
    for path in _schema_files():
        texts.update(a for a in _abouts(load_schema(path)) if len(a) > 40)
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith("//"):
                comment = stripped.lstrip("/").strip()
                if len(comment) > 40:
                    texts.add(comment)
    return texts


@needs_schemas
def test_no_about_or_comment_prose_in_generated_files() -> None:
    prose = _prose()
    assert len(prose) > 300  # the schemas really have prose, so the check means something
    generated = "\n".join(p.read_text(encoding="utf-8") for p in sorted(GENERATED.rglob("*.py")))
    leaked = sorted(t for t in prose if t in generated)
    assert not leaked, f"schema prose leaked into generated/: {leaked[:5]}"
    # And no `about` keys or licence text anywhere.
    assert not re.search(r"\babout\b", generated)
    assert "Licensed to the Apache Software Foundation" not in generated


# ------------------------------------------------------------------ names and coverage

SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def _walk(fields: tuple[F, ...]) -> list[F]:
    out: list[F] = []
    for f in fields:
        out.append(f)
        out += _walk(f.fields)
    return out


def test_field_and_module_names_are_snake_case() -> None:
    for key in api_keys():
        spec = api(key)
        for message in (spec.request, spec.response):
            for f in _walk(message.fields):
                assert SNAKE.match(f.name), f"{message.name}: {f.name!r}"
    for path in GENERATED.rglob("*.py"):
        assert path.stem == "__init__" or SNAKE.match(path.stem), path


@needs_schemas
def test_names_follow_the_schemas() -> None:
    """Each generated field is the snake_case of the schema's field, in schema order."""
    by_name = {}
    for path in sorted(SCHEMAS.glob("*.json")):
        schema = load_schema(path)
        if schema["type"] in ("request", "response"):
            by_name[schema["name"]] = schema
    for key in api_keys():
        # api() adds registered extensions (mockbroker's tagged fields); compare the
        # messages as generated
        for message in generated_messages(key):
            schema = by_name[message.name]
            # Common structs are inlined, so walk both trees the same way.
            common = {c["name"]: c for c in schema.get("commonStructs", [])}
            expected = _names_inlined(schema, common)
            assert [f.name for f in _walk(message.fields)] == [snake_case(n) for n in expected]


def _names_inlined(node: dict[str, Any], common: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for spec in node.get("fields", []):
        names.append(spec["name"])
        element = spec["type"].removeprefix("[]")
        if "fields" in spec:
            names += _names_inlined(spec, common)
        elif element in common:
            names += _names_inlined(common[element], common)
    return names


def test_snake_case_examples() -> None:
    assert snake_case("ThrottleTimeMs") == "throttle_time_ms"
    assert snake_case("ISRNodes") == "isr_nodes"
    assert snake_case("TopicId") == "topic_id"
    assert snake_case("v3AndBelowTransactionalId") == "v3_and_below_transactional_id"
    assert snake_case("ZkMigrationReady") == "zk_migration_ready"


def test_every_api_key_present() -> None:
    assert sorted(APIS) == list(range(88))
    assert api_keys() == list(range(88))
    for key in range(88):
        spec = api(key)
        assert spec.request.api_key == key and spec.response.api_key == key
        assert spec.request.kind == "request" and spec.response.kind == "response"
        assert spec.min_version <= spec.max_version


@needs_schemas
def test_every_schema_is_generated() -> None:
    keys = set()
    for path in SCHEMAS.glob("*.json"):
        schema = json.loads(codegen_module.strip_comments(path.read_text(encoding="utf-8")))
        if "apiKey" in schema and schema["type"] in ("request", "response"):
            keys.add(int(schema["apiKey"]))
    assert keys == set(APIS)


def test_version_aliases_are_wire_identical_to_the_schema_version() -> None:
    """Produce v12 and TxnOffsetCommit v5 (Kafka 4.0, KIP-890 part 2) have no field of their
    own: a body encodes to the same bytes at the alias and at the version it aliases."""
    produce = {"transactional_id": "t", "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "a", "partition_data": [{"index": 1, "records": b"\x00" * 8}]}]}
    txn_commit = {"transactional_id": "t", "group_id": "g", "producer_id": 7,
                  "producer_epoch": 3, "generation_id": 2, "member_id": "m",
                  "group_instance_id": None, "topics": [{"name": "a", "partitions": [
                      {"partition_index": 0, "committed_offset": 9,
                       "committed_leader_epoch": 1, "committed_metadata": "x"}]}]}
    for key, (new, same_as), body in ((0, (12, 11), produce), (28, (5, 4), txn_commit)):
        spec = api(key)
        assert spec.max_version == new
        assert spec.request_codec(new).encode(body) == spec.request_codec(same_as).encode(body)
        assert spec.is_flexible(new)
        assert spec.response.versions.stop - 1 == new
