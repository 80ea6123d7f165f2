"""Strict encoding (protocol/strict.py): a key no version of the message knows is an error.

The suite runs strict (tests/conftest.py); the fixture here still sets the mode explicitly
and restores it, as well as the extension registry, so each test says what it relies on.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from kafka_protocol_codec import (
    CodecError,
    api,
    codec_for,
    encode_request,
    encode_response,
    extensions,
    metadata_record,
    register_extension,
    set_strict_encoding,
    strict_encoding,
)
from kafka_protocol_codec.api import generated_messages
from kafka_protocol_codec.schema import F
from kafka_protocol_codec.strict import ENV_VAR

PRODUCE = 0
LIST_GROUPS = 16  # flexible from v3


@pytest.fixture(autouse=True)
def strict_on() -> Iterator[None]:
    was = strict_encoding()
    saved = {k: list(v) for k, v in extensions._REGISTRY.items()}
    set_strict_encoding(True)
    yield
    set_strict_encoding(was)
    extensions._REGISTRY.clear()
    extensions._REGISTRY.update(saved)
    api.cache_clear()
    metadata_record.cache_clear()


def _produce_response(**partition_extra: Any) -> dict[str, Any]:
    partition = {"index": 0, "error_code": 0, "base_offset": 42, **partition_extra}
    return {"responses": [{"name": "t", "partition_responses": [partition]}],
            "throttle_time_ms": 0}


def _error(version: int, body: dict[str, Any]) -> str:
    with pytest.raises(CodecError) as info:
        api(PRODUCE).response_codec(version).encode(body)
    return str(info.value)


def test_unknown_top_level_key_names_message_version_and_key() -> None:
    body = _produce_response()
    body["throttle_time"] = 5
    text = _error(9, body)
    assert "ProduceResponse v9" in text
    assert "'throttle_time' in ProduceResponse " in text
    assert "did you mean 'throttle_time_ms'?" in text


def test_unknown_key_in_an_array_of_structs_names_its_path() -> None:
    body = _produce_response(base_offest=7)
    text = _error(9, body)
    assert "'base_offest' in ProduceResponse.responses[0].partition_responses[0] " in text
    assert "did you mean 'base_offset'?" in text
    # the second element of an array is reported with its own index
    body = _produce_response()
    body["responses"].append({"name": "u", "partition_responses": [], "partitions": []})
    assert "'partitions' in ProduceResponse.responses[1] " in _error(3, body)


def test_unknown_key_in_a_nested_struct_and_in_a_deeper_array() -> None:
    leader = {"leader_id": 1, "leader_epohc": 3}
    text = _error(10, _produce_response(current_leader=leader))
    assert ("'leader_epohc' in ProduceResponse.responses[0].partition_responses[0]"
            ".current_leader " in text)
    errors = [{"batch_index": 0, "message": "bad"}]
    text = _error(8, _produce_response(record_errors=errors))
    assert ("'message' in ProduceResponse.responses[0].partition_responses[0]"
            ".record_errors[0] " in text)


def test_keys_known_only_at_other_versions_pass() -> None:
    # current_leader is v10+ (tagged), log_start_offset v5+, record_errors v8+: all fine at v0
    body = _produce_response(log_start_offset=3, current_leader={"leader_id": 1, "leader_epoch": 2},
                             record_errors=[{"batch_index": 0, "batch_index_error_message": None}])
    body["node_endpoints"] = [{"node_id": 1, "host": "h", "port": 1, "rack": None}]
    for version in (0, 5, 9, 11):
        wire = api(PRODUCE).response_codec(version).encode(body)
        decoded = api(PRODUCE).response_codec(version).decode(wire)
        assert decoded.responses[0].partition_responses[0].base_offset == 42


def test_null_and_decoded_values_pass() -> None:
    codec = api(PRODUCE).response_codec(11)
    decoded = codec.decode(codec.encode(_produce_response(error_message=None)))
    assert codec.decode(codec.encode(decoded)) == decoded  # a decoded Struct has every field
    request = {"transactional_id": None, "acks": -1, "timeout_ms": 5,
               "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": None}]}]}
    assert api(PRODUCE).request_codec(3).decode(api(PRODUCE).request_codec(3).encode(
        request)).topic_data[0].partition_data[0].records is None


def test_registered_extension_fields_are_known_even_to_the_plain_codec() -> None:
    with pytest.raises(CodecError, match="'note' in ListGroupsRequest "):
        codec_for(generated_messages(LIST_GROUPS)[0], 4).encode(
            {"states_filter": ["Stable"], "note": "hello"})
    # mockbroker's Produce extensions are compiled in and registered
    partition = {"index": 0, "records": None, "current_leader_epoch": 4}
    body = {"acks": 1, "timeout_ms": 1,
            "topic_data": [{"name": "t", "partition_count": 2, "partition_data": [partition]}]}
    plain = codec_for(generated_messages(PRODUCE)[0], 9)
    skipped = plain.decode(plain.encode(body))  # Kafka's own codec: keys known, not written
    assert "current_leader_epoch" not in skipped.topic_data[0].partition_data[0]
    extended = api(PRODUCE).request_codec(9)
    assert extended.decode(extended.encode(body)).topic_data[0].partition_data[0][
        "current_leader_epoch"] == 4
    # v8 carries no tagged fields, but the key is still one the message knows
    assert api(PRODUCE).request_codec(8).decode(
        api(PRODUCE).request_codec(8).encode(body)).topic_data[0].name == "t"


def test_nested_extension_field_is_known_at_its_path_only() -> None:
    epoch = F("current_leader_epoch", "int32", (9, None), default=-1, tag=16384,
              tagged=(9, None))
    register_extension(PRODUCE, "request", ("topic_data", "partition_data"), epoch)
    partition = {"index": 0, "records": None, "current_leader_epoch": 4}
    body = {"acks": 1, "timeout_ms": 1, "topic_data": [{"name": "t",
                                                         "partition_data": [partition]}]}
    codec = api(PRODUCE).request_codec(9)
    decoded = codec.decode(codec.encode(body))
    assert decoded.topic_data[0].partition_data[0].current_leader_epoch == 4
    body["topic_data"][0]["current_leader_epoch"] = 4  # right name, wrong struct
    with pytest.raises(CodecError, match=r"in ProduceRequest\.topic_data\[0\] "):
        codec.encode(body)


def test_whole_message_helpers_and_metadata_records_are_checked() -> None:
    with pytest.raises(CodecError, match=r"'topic' in MetadataRequest\.topics\[0\] "):
        encode_request(3, 12, {"topics": [{"topic": "t"}]}, correlation_id=1)
    with pytest.raises(CodecError, match="'api_key_list' in ApiVersionsResponse "):
        encode_response(18, 3, 1, {"error_code": 0, "api_key_list": []})
    record = metadata_record(2)  # TopicRecord
    assert codec_for(record, 0).encode({"name": "t", "topic_id": None}) is not None
    with pytest.raises(CodecError, match="'partitions' in TopicRecord "):
        codec_for(record, 0).encode({"name": "t", "partitions": 3})


def test_strict_off_encodes_unknown_keys_as_before() -> None:
    codec = api(PRODUCE).response_codec(9)
    partition = {"index": 0, "error_code": 0, "base_offest": 7}
    body = {"responses": [{"name": "t", "partition_responses": [partition]}]}
    set_strict_encoding(False)
    assert not strict_encoding()
    # the misspelt key is ignored and the field it meant goes out as its default
    decoded = codec.decode(codec.encode(body))
    assert decoded.responses[0].partition_responses[0].base_offset == 0
    assert codec.encode(body) == codec.encode(
        {"responses": [{"name": "t", "partition_responses": [{"index": 0, "error_code": 0}]}]})
    set_strict_encoding(True)
    with pytest.raises(CodecError, match="'base_offest'"):
        codec.encode(body)


@pytest.mark.parametrize(("value", "expected"), [
    ("1", True), ("true", True), ("ON", True), ("0", False), ("", False), (None, False)])
def test_environment_variable_is_read_at_import(value: str | None, expected: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    if value is not None:
        env[ENV_VAR] = value
    out = subprocess.run(
        [sys.executable, "-c", "import kafka_protocol_codec as k; print(k.strict_encoding())"],
        env=env, capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == str(expected)


def test_the_suite_runs_strict() -> None:
    """tests/conftest.py turns strict mode on, and exports it to subprocesses."""
    assert os.environ.get(ENV_VAR) == "1"
