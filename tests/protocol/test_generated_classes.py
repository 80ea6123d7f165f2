"""The generated codec at run time: typed message classes, and nothing built or imported.

Decoded messages are instances of their message's generated class (protocol/generated/, a
TypedStruct): every field of every version in __slots__, nested structs as nested classes,
readable as a mapping too. Writers take those instances and plain dicts alike.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Mapping

import pytest
from kafka_protocol_codec import TypedStruct, api, decode_request, encode_request
from kafka_protocol_codec.generated.metadata import MetadataRequest, MetadataResponse
from kafka_protocol_codec.generated.produce import KafkaProduceRequest, ProduceRequest

PRODUCE, METADATA = 0, 3


def _produce_body() -> dict[str, object]:
    return {"transactional_id": None, "acks": 1, "timeout_ms": 5, "topic_data": [
        {"name": "t", "partition_count": 2, "partition_data": [
            {"index": 0, "records": b"abc", "current_leader_epoch": 3}]}]}


def test_decoded_requests_are_instances_of_the_generated_classes() -> None:
    request = decode_request(encode_request(PRODUCE, 9, _produce_body(), correlation_id=7))
    body = request.body
    assert type(body) is ProduceRequest
    topic = body.topic_data[0]
    assert type(topic) is ProduceRequest.TopicProduceData
    assert type(topic.partition_data[0]) is ProduceRequest.TopicProduceData.PartitionProduceData
    assert (topic.name, topic.partition_count) == ("t", 2)
    assert topic.partition_data[0].current_leader_epoch == 3
    assert bytes(topic.partition_data[0].records or b"") == b"abc"
    with pytest.raises(AttributeError):
        body.no_such_field = 1  # type: ignore[attr-defined]  # __slots__


def test_fields_a_version_lacks_hold_their_defaults() -> None:
    codec = api(METADATA).request_codec(0)  # v0: topics only
    decoded = codec.decode(codec.encode({"topics": [{"name": "t"}]}))
    assert type(decoded) is MetadataRequest
    assert decoded.allow_auto_topic_creation is True  # the schema's default
    assert decoded.topics is not None
    assert decoded.topics[0].topic_id == uuid.UUID(int=0)


def test_a_generated_struct_reads_as_a_mapping() -> None:
    body = decode_request(encode_request(PRODUCE, 9, _produce_body(), correlation_id=7)).body
    assert isinstance(body, Mapping) and isinstance(body, TypedStruct)
    assert body["acks"] == 1 and body.get("acks") == 1 and body.get("nope", 4) == 4
    assert "acks" in body and "nope" not in body
    assert list(body) == ["transactional_id", "acks", "timeout_ms", "topic_data"]
    assert dict(body)["timeout_ms"] == 5
    with pytest.raises(KeyError):
        body["nope"]
    with pytest.raises(KeyError):
        body["nope"] = 1
    body["acks"] = -1
    assert body.acks == -1
    # equal to a dict of the same items, and to an equal instance
    assert body.topic_data[0].partition_data[0] == {
        "index": 0, "records": b"abc", "current_leader_epoch": 3}
    assert body == api(PRODUCE).request_codec(9).decode(
        api(PRODUCE).request_codec(9).encode(body))
    assert body != {"acks": -1}


def test_writers_take_instances_and_dicts_alike() -> None:
    codec = api(METADATA).response_codec(12)
    value = {"throttle_time_ms": 3, "brokers": [{"node_id": 1, "host": "h", "port": 9092}],
             "cluster_id": "c", "controller_id": 1, "topics": [
                 {"error_code": 0, "name": "t", "topic_id": uuid.uuid4(), "is_internal": False,
                  "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 1,
                                  "replica_nodes": [1], "isr_nodes": [1]}]}]}
    wire = bytes(codec.encode(value))
    decoded = codec.decode(wire)
    assert type(decoded) is MetadataResponse
    assert bytes(codec.encode(decoded)) == wire
    # an instance of another generated class is read by name, missing keys as defaults
    plain = api(PRODUCE).request_codec(9)
    kafka_only = KafkaProduceRequest("x", 1, 2, [])
    assert plain.decode(bytes(plain.encode(kafka_only))).transactional_id == "x"


def test_no_construct_at_run_time() -> None:
    """Encoding and decoding import nothing of construct (the generator's dependency)."""
    code = (
        "import sys\n"
        "from kafka_protocol_codec import decode_request, decode_response, encode_request,"
        " encode_response\n"
        "for key, version in ((0, 9), (1, 12), (3, 12), (11, 9), (18, 3), (63, 1)):\n"
        "    decode_request(encode_request(key, version, {}, correlation_id=1))\n"
        "    decode_response(key, version, encode_response(key, version, 1, {}))\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'construct'], 'construct'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
