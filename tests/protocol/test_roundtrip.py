"""Round trips for every API key, every version, both directions; metadata records, data
types and headers; and the header-version rule.

Each (api, version, direction) is its own test with a few Hypothesis examples, so a failure
names the message and version and the whole set stays fast.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_protocol_codec import (
    CodecError,
    api,
    api_keys,
    codec_for,
    data_type,
    decode_request,
    decode_response,
    default_struct,
    encode_request,
    encode_response,
    metadata_record,
    request_header_version,
    response_header_version,
)
from kafka_protocol_codec.generated import headers
from kafka_protocol_codec.generated.data import DATA_TYPES
from kafka_protocol_codec.generated.metadata_records import METADATA_RECORDS
from kafka_protocol_codec.schema import Message, in_range

from .strategies import message_values

# ROUNDTRIP_EXAMPLES=200 for a deeper (slow) run.
FEW = settings(
    max_examples=int(os.environ.get("ROUNDTRIP_EXAMPLES", "3")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

API_VERSIONS = [(key, version) for key in api_keys() for version in api(key).request.versions]


def _id(key: int, version: int) -> str:
    return f"{api(key).name}-v{version}"


def _roundtrip(message: Message, version: int, value: dict[str, Any]) -> bytes:
    codec = codec_for(message, version)
    encoded = codec.encode(value)
    decoded = codec.decode(encoded)
    assert decoded == value
    assert codec.encode(decoded) == encoded
    return encoded


@pytest.mark.parametrize(("key", "version"), API_VERSIONS, ids=[_id(k, v) for k, v in API_VERSIONS])
@FEW
@given(data=st.data())
def test_request_roundtrip(key: int, version: int, data: st.DataObject) -> None:
    spec = api(key)
    value = data.draw(message_values(spec.request, version), label="body")
    body = _roundtrip(spec.request, version, value)
    client_id = data.draw(st.none() | st.text(max_size=8), label="client_id")
    frame = encode_request(key, version, value, correlation_id=12345, client_id=client_id)
    assert frame.endswith(body)
    request = decode_request(frame)
    assert (request.api_key, request.api_version) == (key, version)
    assert request.correlation_id == 12345
    # Request header v0 carries no client id.
    assert request.client_id == (client_id if request_header_version(key, version) else "")
    assert request.body == value


@pytest.mark.parametrize(("key", "version"), API_VERSIONS, ids=[_id(k, v) for k, v in API_VERSIONS])
@FEW
@given(data=st.data())
def test_response_roundtrip(key: int, version: int, data: st.DataObject) -> None:
    spec = api(key)
    value = data.draw(message_values(spec.response, version), label="body")
    body = _roundtrip(spec.response, version, value)
    frame = encode_response(key, version, -7, value)
    assert frame.endswith(body)
    response = decode_response(key, version, frame)
    assert response.correlation_id == -7
    assert response.body == value


@pytest.mark.parametrize(("key", "version"), API_VERSIONS, ids=[_id(k, v) for k, v in API_VERSIONS])
def test_defaults_roundtrip(key: int, version: int) -> None:
    """An empty mapping encodes as all defaults and decodes to the default struct."""
    for message in (api(key).request, api(key).response):
        codec = codec_for(message, version)
        assert codec.decode(codec.encode({})) == default_struct(message.fields)


RECORD_VERSIONS = [(t, v) for t in sorted(METADATA_RECORDS) for v in metadata_record(t).versions]


@pytest.mark.parametrize(
    ("record_type", "version"),
    RECORD_VERSIONS,
    ids=[f"{METADATA_RECORDS[t][0]}-v{v}" for t, v in RECORD_VERSIONS],
)
@FEW
@given(data=st.data())
def test_metadata_record_roundtrip(record_type: int, version: int, data: st.DataObject) -> None:
    message = metadata_record(record_type)
    _roundtrip(message, version, data.draw(message_values(message, version)))


DATA_VERSIONS = [(n, v) for n in sorted(DATA_TYPES) for v in data_type(n).versions]


@pytest.mark.parametrize(
    ("name", "version"), DATA_VERSIONS, ids=[f"{n}-v{v}" for n, v in DATA_VERSIONS]
)
@FEW
@given(data=st.data())
def test_data_type_roundtrip(name: str, version: int, data: st.DataObject) -> None:
    message = data_type(name)
    _roundtrip(message, version, data.draw(message_values(message, version)))


def test_every_metadata_record_and_data_type_covered() -> None:
    assert len(METADATA_RECORDS) >= 20
    assert {"ConsumerProtocolSubscription", "ConsumerProtocolAssignment"} <= set(DATA_TYPES)
    assert all(metadata_record(t).versions for t in METADATA_RECORDS)


# ----------------------------------------------------------------------------- headers


@pytest.mark.parametrize("version", [0, 1, 2])
@settings(max_examples=25, deadline=None, database=None)
@given(data=st.data())
def test_request_header_roundtrip(version: int, data: st.DataObject) -> None:
    _roundtrip(
        headers.REQUEST_HEADER, version, data.draw(message_values(headers.REQUEST_HEADER, version))
    )


@pytest.mark.parametrize("version", [0, 1])
@settings(max_examples=25, deadline=None, database=None)
@given(data=st.data())
def test_response_header_roundtrip(version: int, data: st.DataObject) -> None:
    _roundtrip(
        headers.RESPONSE_HEADER,
        version,
        data.draw(message_values(headers.RESPONSE_HEADER, version)),
    )


def test_request_header_layouts() -> None:
    base = {
        "request_api_key": 3,
        "request_api_version": 12,
        "correlation_id": 7,
        "client_id": "abc",
    }
    fixed = b"\x00\x03\x00\x0c\x00\x00\x00\x07"
    assert codec_for(headers.REQUEST_HEADER, 0).encode(base) == fixed
    # v1 and v2: client_id stays a legacy (int16-length) nullable string; v2 adds tags.
    assert codec_for(headers.REQUEST_HEADER, 1).encode(base) == fixed + b"\x00\x03abc"
    assert codec_for(headers.REQUEST_HEADER, 2).encode(base) == fixed + b"\x00\x03abc\x00"
    null = dict(base, client_id=None)
    assert codec_for(headers.REQUEST_HEADER, 2).encode(null) == fixed + b"\xff\xff\x00"
    assert codec_for(headers.RESPONSE_HEADER, 0).encode({"correlation_id": 7}) == b"\0\0\0\x07"
    assert codec_for(headers.RESPONSE_HEADER, 1).encode({"correlation_id": 7}) == b"\0\0\0\x07\0"


def _expected_header_versions(key: int, version: int) -> tuple[int, int]:
    flexible = in_range(version, api(key).request.flexible)
    request = 2 if flexible else 1
    response = 1 if flexible else 0
    if key == 7 and version == 0:  # ControlledShutdown v0
        request = 0
    if key == 18:  # ApiVersions: the client reads it before it knows the broker's versions
        response = 0
    return request, response


@pytest.mark.parametrize(("key", "version"), API_VERSIONS, ids=[_id(k, v) for k, v in API_VERSIONS])
def test_header_version_rule(key: int, version: int) -> None:
    request_v, response_v = _expected_header_versions(key, version)
    assert request_header_version(key, version) == request_v
    assert response_header_version(key, version) == response_v
    # The frames really use those header layouts.
    frame = encode_request(key, version, {}, correlation_id=99, client_id="c")
    header = codec_for(headers.REQUEST_HEADER, request_v).encode(
        {
            "request_api_key": key,
            "request_api_version": version,
            "correlation_id": 99,
            "client_id": "c",
        }
    )
    assert frame == header + api(key).request_codec(version).encode({})
    response = encode_response(key, version, 99, {})
    assert response == (
        codec_for(headers.RESPONSE_HEADER, response_v).encode({"correlation_id": 99})
        + api(key).response_codec(version).encode({})
    )


def test_header_rule_special_cases() -> None:
    assert request_header_version(7, 0) == 0  # ControlledShutdown v0
    assert request_header_version(7, 1) == 1
    assert request_header_version(7, 3) == 2
    for version in api(18).request.versions:
        assert response_header_version(18, version) == 0
    assert request_header_version(18, 3) == 2
    assert request_header_version(18, 2) == 1
    assert (request_header_version(3, 9), response_header_version(3, 9)) == (2, 1)
    assert (request_header_version(3, 8), response_header_version(3, 8)) == (1, 0)


def test_controlled_shutdown_v0_frame() -> None:
    frame = encode_request(7, 0, {"broker_id": 5}, correlation_id=1, client_id="ignored")
    assert frame == b"\x00\x07\x00\x00\x00\x00\x00\x01" + b"\x00\x00\x00\x05"
    request = decode_request(frame)
    assert request.body.broker_id == 5
    assert request.client_id == ""


def test_api_versions_response_header_is_v0_even_when_flexible() -> None:
    body = {
        "error_code": 0,
        "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}],
        "throttle_time_ms": 0,
    }
    frame = encode_response(18, 3, 5, body)
    # No tagged-field byte after the correlation id; the flexible body follows directly.
    assert frame[:4] == b"\x00\x00\x00\x05"
    assert frame[4:] == api(18).response_codec(3).encode(body)
    assert decode_response(18, 3, frame).body.api_keys[0].max_version == 4


def test_uuid_and_tagged_values_survive() -> None:
    """A concrete flexible case with a UUID, a nullable struct and tagged fields."""
    topic_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    body = {
        "throttle_time_ms": 1,
        "error_code": 0,
        "error_message": None,
        "member_id": "m",
        "member_epoch": 3,
        "heartbeat_interval_ms": 500,
        "assignment": {"topic_partitions": [{"topic_id": topic_id, "partitions": [0, 1]}]},
    }
    codec = api(68).response_codec(0)
    decoded = codec.decode(codec.encode(body))
    assert decoded.assignment.topic_partitions[0].topic_id == topic_id
    assert decoded.assignment.topic_partitions[0].partitions == [0, 1]
    assert codec.decode(codec.encode(dict(body, assignment=None))).assignment is None


# ----------------------------------------------------------------------------- limits


def test_legacy_string_length_limit() -> None:
    codec = api(17).request_codec(1)  # SaslHandshake v1: mechanism is a legacy string
    longest = "x" * 0x7FFF
    assert codec.decode(codec.encode({"mechanism": longest})).mechanism == longest
    with pytest.raises(CodecError):
        codec.encode({"mechanism": longest + "x"})


def test_compact_string_length_limit() -> None:
    """Java clients fail to read a compact string longer than 32767 bytes ("string field ...
    had invalid length"), so the encoder refuses to write one, as for legacy strings."""
    codec = api(36).response_codec(2)  # SaslAuthenticate v2: error_message is compact
    longest = "x" * 0x7FFF
    assert codec.decode(codec.encode({"error_message": longest})).error_message == longest
    with pytest.raises(CodecError):
        codec.encode({"error_message": longest + "x"})
