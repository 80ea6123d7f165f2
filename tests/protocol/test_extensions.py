"""The codec's tagged-field extension mechanism (protocol/extensions.py), on its own:
extensions compiled in by the generator, and the registry they seed.

Registrations are global; the fixture restores the registry (and the caches built from it)
after each test, so nothing here leaks into other tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_protocol_codec import (
    api,
    codec_for,
    codegen,
    extensions,
    metadata_record,
    register_extension,
)
from kafka_protocol_codec.api import generated_messages
from kafka_protocol_codec.extensions import ExtensionError, extend_message
from kafka_protocol_codec.schema import F

SCHEMAS = Path(__file__).resolve().parents[2] / ".." / "shared" / "kafka-message-schemas"
PRODUCE = 0
LIST_GROUPS = 16  # flexible from v3; no tagged fields of its own in the request
NOTE = F("note", "string", (3, None), default="", tag=20000, tagged=(3, None))


@pytest.fixture(autouse=True)
def restore_registry() -> Iterator[None]:
    saved = {k: list(v) for k, v in extensions._REGISTRY.items()}
    yield
    extensions._REGISTRY.clear()
    extensions._REGISTRY.update(saved)
    api.cache_clear()
    metadata_record.cache_clear()


def _compile(schema: str, field: F) -> dict[str, Any]:
    """What `make codegen` makes of a request schema with `field` added to its top level
    (the generated module's namespace)."""
    path = SCHEMAS / f"{schema}.json"
    if not path.is_file():
        pytest.skip(f"schema not found: {path}")
    converted = codegen.convert(codegen.load_schema(path))
    extended = extend_message(codegen.to_message(converted), (), field)
    source = codegen.render_module("", [("REQUEST", converted, extended)])
    namespace: dict[str, Any] = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # a test: the generator's output
    return namespace


def test_compiled_field_round_trips_and_stays_invisible_to_kafka() -> None:
    """An extension compiled in by the generator: its codecs carry the field, Kafka's skip it."""
    generated = _compile("ListGroupsRequest", NOTE)
    read, write = generated["REQUEST_CODECS"][4]
    read_kafka, write_kafka = generated["REQUEST_KAFKA_CODECS"][4]
    plain = codec_for(generated_messages(LIST_GROUPS)[0], 4)

    def encode(fn: Any, body: dict[str, Any]) -> bytes:
        out = bytearray()
        fn(body, out)
        return bytes(out)

    body = {"states_filter": ["Stable"], "note": "hello"}
    wire = encode(write, body)
    assert read(wire, 0)[0]["note"] == "hello"
    skipped = read_kafka(wire, 0)[0]
    assert "note" not in skipped and skipped.states_filter == ["Stable"]
    assert plain.decode(wire) == skipped  # the committed codec is Kafka's for ListGroups
    assert read(encode(write_kafka, body), 0)[0]["note"] == ""  # absent: the default
    del body["note"]
    assert encode(write, body) == encode(write_kafka, body) == bytes(plain.encode(body))
    # a version without tagged fields neither carries nor needs it
    read2, write2 = generated["REQUEST_CODECS"][2]
    assert read2(encode(write2, {}), 0)[0]["note"] == ""


def test_compiled_in_extensions_are_registered_and_others_refused() -> None:
    """generated/extensions.py seeds the registry: registering one of them again is a no-op;
    a field that was not compiled in cannot be registered at run time."""
    compiled = extensions.registered(PRODUCE, "request")
    assert {(e.path, e.field.name) for e in compiled} == {
        (("topic_data", "partition_data"), "current_leader_epoch"),
        (("topic_data",), "partition_count")}
    for ext in compiled:
        register_extension(ext.api_key, ext.kind, ext.path, ext.field)
    assert extensions.registered(PRODUCE, "request") == compiled
    with pytest.raises(ExtensionError, match="not compiled into the generated codecs"):
        register_extension(LIST_GROUPS, "request", (), NOTE)
    assert extensions.registered(LIST_GROUPS, "request") == ()


def test_conflicts_are_refused() -> None:
    [epoch] = [e for e in extensions.registered(PRODUCE, "request")
               if e.field.name == "current_leader_epoch"]
    path = epoch.path
    same_tag = F("other", "int32", (9, None), default=0, tag=16384, tagged=(9, None))
    same_name = F("current_leader_epoch", "int32", (9, None), default=0, tag=20001,
                  tagged=(9, None))
    for field in (same_tag, same_name):
        with pytest.raises(ExtensionError):
            register_extension(PRODUCE, "request", path, field)


@pytest.mark.parametrize(("path", "field", "why"), [
    ((), F("x", "int32", (3, None), default=0), "only tagged"),
    ((), F("x", "int32", (0, None), default=0, tag=9, tagged=(0, None)), "not flexible"),
    ((), F("x", "int32", (3, None), default=0, tag=9, tagged=(4, None)), "must equal"),
    (("nope",), NOTE, "no field"),
    (("states_filter",), NOTE, "not a struct"),
])
def test_bad_extensions(path: tuple[str, ...], field: F, why: str) -> None:
    with pytest.raises(ExtensionError, match=why):
        register_extension(LIST_GROUPS, "request", path, field)


def test_nested_paths_and_metadata_records() -> None:
    request, _ = generated_messages(0)
    extended = extend_message(request, ("topic_data", "partition_data"), F(
        "x", "int32", (9, None), default=-1, tag=30000, tagged=(9, None)))
    [topic] = [f for f in extended.fields if f.name == "topic_data"]
    [partition] = [f for f in topic.fields if f.name == "partition_data"]
    assert partition.fields[-1].name == "x"
    assert request.fields != extended.fields  # pure: the generated message is untouched
    # PartitionRecord carries mockbroker's compiled-in PriorLeaderEpochs
    assert metadata_record(3).fields[-1].name == "prior_leader_epochs"
