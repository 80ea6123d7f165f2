"""The codec's tagged-field extension mechanism (protocol/extensions.py), on its own.

Registrations are global; the fixture restores the registry (and the caches built from it)
after each test, so nothing here leaks into other tests.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka_protocol_codec import api, codec_for, extensions, metadata_record, register_extension
from kafka_protocol_codec.api import generated_messages
from kafka_protocol_codec.extensions import ExtensionError, extend_message
from kafka_protocol_codec.schema import F

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


def test_registered_field_round_trips_and_stays_invisible_to_kafka() -> None:
    plain = codec_for(generated_messages(LIST_GROUPS)[0], 4)
    register_extension(LIST_GROUPS, "request", (), NOTE)
    extended = api(LIST_GROUPS).request_codec(4)
    assert extended is not plain  # codecs are cached per message object
    body = {"states_filter": ["Stable"], "note": "hello"}
    wire = bytes(extended.encode(body))
    assert extended.decode(wire)["note"] == "hello"
    assert "note" not in plain.decode(wire) and plain.decode(wire).states_filter == ["Stable"]
    assert extended.decode(plain.encode(body))["note"] == ""  # absent: the default
    del body["note"]
    assert bytes(extended.encode(body)) == bytes(plain.encode(body))
    # a version without tagged fields neither carries nor needs it
    assert "note" in api(LIST_GROUPS).request_codec(2).decode(
        bytes(api(LIST_GROUPS).request_codec(2).encode({})))


def test_registering_twice_is_a_no_op_and_conflicts_are_refused() -> None:
    register_extension(LIST_GROUPS, "request", (), NOTE)
    register_extension(LIST_GROUPS, "request", (), NOTE)
    assert extensions.registered(LIST_GROUPS, "request") == (
        extensions.Extension(LIST_GROUPS, "request", (), NOTE),)
    same_tag = F("other", "int32", (3, None), default=0, tag=20000, tagged=(3, None))
    same_name = F("note", "int32", (3, None), default=0, tag=20001, tagged=(3, None))
    for field in (same_tag, same_name):
        with pytest.raises(ExtensionError):
            register_extension(LIST_GROUPS, "request", (), field)


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
    quota = F("why", "string", (0, None), default="", tag=30000, tagged=(0, None))
    register_extension(14, "metadata", (), quota)  # ClientQuotaRecord
    assert metadata_record(14).fields[-1] == quota
