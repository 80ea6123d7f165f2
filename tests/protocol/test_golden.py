"""Byte-for-byte agreement with an independent encoder: kafka-python 3's protocol classes.

kafka-python builds its classes from its own copy of Kafka's JSON schemas and its own
encoder, so agreement here is evidence that both sides read the schemas the same way. For
each (api, version) below, realistic values (non-default, with tagged fields where the
version has them) are written once, then:

- our encoding equals kafka-python's encoding of the same logical content;
- our decoder reads kafka-python's bytes back to exactly the value (every field);
- kafka-python decodes our bytes to the same content, and re-encodes them identically;
- for some, whole frames (request header v1/v2, response header v0/v1) agree too;
- and for every (api, version, direction) both define, a few random values (Hypothesis,
  strategies.py) give identical bytes both ways.

The adapter between our values and kafka-python's objects (name matching, and its quirks:
zero UUID as None, authorized operations as bit sets) is in peer.py.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_protocol_codec import (
    api,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from kafka_protocol_codec.api import generated_messages
from kafka_protocol_codec.codec_runtime import ZERO_UUID
from kafka_protocol_codec.schema import in_range
from kafka_protocol_codec.structs import codec_for

from .peer import PEER, ApiMessage, from_peer, peer_object
from .strategies import message_values

with warnings.catch_warnings():  # kafka-python loads its schemas with deprecated importlib APIs
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatchBuilder

# ------------------------------------------------------------------ realistic values

T1 = uuid.UUID("4a1c3f8e-2b7d-4e51-9c0a-6f3e2d1b0a99")
T2 = uuid.UUID("0f9e8d7c-6b5a-4938-8271-605f4e3d2c1b")


def record_batch(n: int = 3, base_offset: int = 0, transactional: bool = False) -> bytes:
    """A real RecordBatch v2 (magic 2, CRC-32C), built by kafka-python's record builder."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=transactional,
        producer_id=4242 if transactional else -1,
        producer_epoch=3 if transactional else -1,
        base_sequence=0 if transactional else -1,
        batch_size=1 << 20,
    )
    for i in range(n):
        builder.append(
            i,
            timestamp=1_700_000_000_000 + i,
            key=f"key-{i}".encode(),
            value=f"value-{i}".encode() * 4,
            headers=[("h", b"v")],
        )
    batch = bytearray(builder.build())
    batch[0:8] = base_offset.to_bytes(8, "big")
    return bytes(batch)


BATCH = record_batch()
TXN_BATCH = record_batch(2, base_offset=100, transactional=True)


def metadata_topic(name: str, topic_id: uuid.UUID, partitions: int, version: int) -> dict[str, Any]:
    """A Metadata response topic with the fields the version carries."""
    parts = []
    for p in range(partitions):
        part = {
            "error_code": 0 if p else 9,
            "partition_index": p,
            "leader_id": p % 3,
            "replica_nodes": [p % 3, (p + 1) % 3, (p + 2) % 3],
            "isr_nodes": [p % 3, (p + 1) % 3],
        }
        if version >= 5:
            part["offline_replicas"] = [(p + 2) % 3]
        if version >= 7:
            part["leader_epoch"] = 7 + p
        parts.append(part)
    topic: dict[str, Any] = {"error_code": 0, "name": name, "partitions": parts}
    if version >= 1:
        topic["is_internal"] = name.startswith("__")
    if version >= 8:
        topic["topic_authorized_operations"] = 0x0FF8
    if version >= 10:
        topic["topic_id"] = topic_id
    return topic


BROKERS = [
    {"node_id": 0, "host": "broker-0.kafka.local", "port": 9092, "rack": "eu-west-1a"},
    {"node_id": 1, "host": "broker-1.kafka.local", "port": 9093, "rack": None},
    {"node_id": 2, "host": "10.0.0.12", "port": 19092, "rack": "eu-west-1c"},
]

METADATA_RESPONSE = {
    "throttle_time_ms": 5,
    "brokers": BROKERS,
    "cluster_id": "MkU3OEVBNTcwNTJENDM2Qk",
    "controller_id": 1,
    "topics": [
        metadata_topic("orders", T1, 3, 12),
        metadata_topic("__consumer_offsets", T2, 2, 12),
        {
            "error_code": 3,
            "name": "missing",
            "topic_id": ZERO_UUID,
            "is_internal": False,
            "partitions": [],
            "topic_authorized_operations": -2147483648,
        },
    ],
}

FETCH_RESPONSE_PARTITIONS = [
    {
        "partition_index": 0,
        "error_code": 0,
        "high_watermark": 103,
        "last_stable_offset": 100,
        "log_start_offset": 0,
        "aborted_transactions": [
            {"producer_id": 4242, "first_offset": 100},
            {"producer_id": 77, "first_offset": 90},
        ],
        "preferred_read_replica": -1,
        "records": TXN_BATCH,
    },
    {
        "partition_index": 1,
        "error_code": 0,
        "high_watermark": 3,
        "last_stable_offset": 3,
        "log_start_offset": 0,
        "aborted_transactions": None,
        "preferred_read_replica": 2,
        "records": BATCH,
    },
    {
        "partition_index": 2,
        "error_code": 74,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": [],
        "records": None,
        "diverging_epoch": {"epoch": 4, "end_offset": 55},
        "current_leader": {"leader_id": 2, "leader_epoch": 9},
        "snapshot_id": {"end_offset": 40, "epoch": 3},
    },
]

NODE_ENDPOINTS = [
    {"node_id": 2, "host": "broker-2.kafka.local", "port": 9094, "rack": None},
    {"node_id": 0, "host": "broker-0.kafka.local", "port": 9092, "rack": "r0"},
]


@dataclass
class Case:
    key: int
    version: int
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return f"{api(self.key).name}-v{self.version}"


CASES = [
    Case(
        18,
        3,
        {"client_software_name": "apache-kafka-java", "client_software_version": "3.9.0"},
        {
            "error_code": 0,
            "throttle_time_ms": 0,
            "api_keys": [
                {"api_key": k, "min_version": 0, "max_version": m}
                for k, m in ((0, 11), (1, 17), (3, 12), (18, 4))
            ],
            "supported_features": [
                {"name": "metadata.version", "min_version": 1, "max_version": 21}
            ],
            "finalized_features_epoch": 1234,
            "finalized_features": [
                {"name": "metadata.version", "max_version_level": 21, "min_version_level": 21}
            ],
            "zk_migration_ready": True,
        },
    ),
    Case(
        18,
        0,
        {},
        {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]},
    ),
    # (Not an error code here: kafka-python decodes any ApiVersions response with an error
    # as v0, which is what brokers send for UNSUPPORTED_VERSION.)
    Case(
        18,
        2,
        {},
        {
            "error_code": 0,
            "throttle_time_ms": 10,
            "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}],
        },
    ),
    Case(
        3,
        12,
        {
            "topics": [{"topic_id": ZERO_UUID, "name": "orders"}, {"topic_id": T2, "name": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": True,
        },
        METADATA_RESPONSE,
    ),
    Case(
        3,
        0,
        {"topics": [{"name": "orders"}, {"name": "payments"}]},
        {
            "brokers": [{k: b[k] for k in ("node_id", "host", "port")} for b in BROKERS],
            "topics": [metadata_topic("orders", T1, 2, 0)],
        },
    ),
    Case(
        3,
        1,
        {"topics": None},
        {"brokers": BROKERS, "controller_id": 2, "topics": [metadata_topic("orders", T1, 2, 1)]},
    ),
    Case(
        3,
        7,
        {"topics": [{"name": "orders"}], "allow_auto_topic_creation": False},
        {
            "throttle_time_ms": 1,
            "brokers": BROKERS,
            "cluster_id": None,
            "controller_id": 0,
            "topics": [metadata_topic("orders", T1, 3, 7)],
        },
    ),
    Case(
        0,
        9,
        {
            "transactional_id": "txn-1",
            "acks": -1,
            "timeout_ms": 30000,
            "topic_data": [
                {
                    "name": "orders",
                    "partition_data": [
                        {"index": 0, "records": BATCH},
                        {"index": 1, "records": TXN_BATCH},
                    ],
                }
            ],
        },
        {
            "responses": [
                {
                    "name": "orders",
                    "partition_responses": [
                        {
                            "index": 0,
                            "error_code": 0,
                            "base_offset": 1200,
                            "log_append_time_ms": -1,
                            "log_start_offset": 17,
                            "record_errors": [],
                            "error_message": None,
                        },
                        {
                            "index": 1,
                            "error_code": 87,
                            "base_offset": -1,
                            "log_append_time_ms": -1,
                            "log_start_offset": -1,
                            "record_errors": [
                                {"batch_index": 2, "batch_index_error_message": "bad ts"},
                                {"batch_index": 3, "batch_index_error_message": None},
                            ],
                            "error_message": "INVALID_RECORD",
                        },
                    ],
                }
            ],
            "throttle_time_ms": 20,
        },
    ),
    Case(
        0,
        10,
        None,
        {
            "responses": [
                {
                    "name": "orders",
                    "partition_responses": [
                        {
                            "index": 0,
                            "error_code": 6,
                            "base_offset": -1,
                            "log_start_offset": -1,
                            "record_errors": [],
                            "error_message": None,
                            "current_leader": {"leader_id": 2, "leader_epoch": 12},
                        }
                    ],
                }
            ],
            "throttle_time_ms": 0,
            "node_endpoints": NODE_ENDPOINTS,
        },
    ),
    Case(
        0,
        3,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 1500,
            "topic_data": [
                {"name": "orders", "partition_data": [{"index": 2, "records": BATCH}]},
                {"name": "logs", "partition_data": [{"index": 0, "records": None}]},
            ],
        },
        {
            "responses": [
                {
                    "name": "orders",
                    "partition_responses": [
                        {
                            "index": 2,
                            "error_code": 0,
                            "base_offset": 77,
                            "log_append_time_ms": 1_700_000,
                        }
                    ],
                }
            ],
            "throttle_time_ms": 3,
        },
    ),
    Case(
        1,
        12,
        {
            "cluster_id": "MkU3OEVBNTcwNTJENDM2Qk",
            "replica_id": -1,
            "max_wait_ms": 500,
            "min_bytes": 1,
            "max_bytes": 52428800,
            "isolation_level": 1,
            "session_id": 17,
            "session_epoch": 4,
            "topics": [
                {
                    "topic": "orders",
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": 7,
                            "fetch_offset": 100,
                            "last_fetched_epoch": 6,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1048576,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [{"topic": "old", "partitions": [3, 4]}],
            "rack_id": "eu-west-1a",
        },
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "session_id": 17,
            "responses": [{"topic": "orders", "partitions": FETCH_RESPONSE_PARTITIONS}],
        },
    ),
    Case(
        1,
        16,
        {
            "max_wait_ms": 500,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "session_id": 0,
            "session_epoch": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "topic_id": T1,
                    "partitions": [
                        {
                            "partition": 1,
                            "current_leader_epoch": 7,
                            "fetch_offset": 3,
                            "partition_max_bytes": 65536,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [{"topic_id": T2, "partitions": [0]}],
            "rack_id": "",
        },
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "session_id": 0,
            "responses": [{"topic_id": T1, "partitions": FETCH_RESPONSE_PARTITIONS}],
            "node_endpoints": NODE_ENDPOINTS,
        },
    ),
    Case(
        1,
        4,
        {
            "replica_id": -1,
            "max_wait_ms": 100,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 1,
            "topics": [
                {
                    "topic": "orders",
                    "partitions": [
                        {"partition": 0, "fetch_offset": 98, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        },
        {
            "throttle_time_ms": 0,
            "responses": [
                {
                    "topic": "orders",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "high_watermark": 103,
                            "last_stable_offset": 100,
                            "aborted_transactions": [{"producer_id": 4242, "first_offset": 100}],
                            "records": TXN_BATCH,
                        },
                        {
                            "partition_index": 1,
                            "error_code": 1,
                            "high_watermark": -1,
                            "last_stable_offset": -1,
                            "aborted_transactions": None,
                            "records": None,
                        },
                    ],
                }
            ],
        },
    ),
    Case(
        11,
        9,
        {
            "group_id": "billing",
            "session_timeout_ms": 45000,
            "rebalance_timeout_ms": 300000,
            "member_id": "consumer-1-5f3e",
            "group_instance_id": "pod-7",
            "protocol_type": "consumer",
            "protocols": [
                {"name": "cooperative-sticky", "metadata": b"\x00\x03\x00\x00\x00\x01"},
                {"name": "range", "metadata": b"\x00\x01abc"},
            ],
            "reason": "rebalance failed due to MemberIdRequiredException",
        },
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "generation_id": 12,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "leader": "consumer-1-5f3e",
            "skip_assignment": True,
            "member_id": "consumer-1-5f3e",
            "members": [
                {
                    "member_id": "consumer-1-5f3e",
                    "group_instance_id": "pod-7",
                    "metadata": b"\x00\x01meta",
                },
                {"member_id": "consumer-2-9a", "group_instance_id": None, "metadata": b""},
            ],
        },
    ),
    Case(
        11,
        5,
        {
            "group_id": "billing",
            "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 60000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
        },
        {
            "throttle_time_ms": 0,
            "error_code": 79,
            "generation_id": -1,
            "protocol_name": "",
            "leader": "",
            "member_id": "consumer-3-11",
            "members": [],
        },
    ),
    Case(
        8,
        8,
        {
            "group_id": "billing",
            "generation_id_or_member_epoch": 12,
            "member_id": "consumer-1-5f3e",
            "group_instance_id": None,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 1200,
                            "committed_leader_epoch": 7,
                            "committed_metadata": "ckpt-1",
                        },
                        {
                            "partition_index": 1,
                            "committed_offset": 3,
                            "committed_leader_epoch": -1,
                            "committed_metadata": None,
                        },
                    ],
                }
            ],
        },
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {"partition_index": 0, "error_code": 0},
                        {"partition_index": 1, "error_code": 22},
                    ],
                }
            ],
        },
    ),
    Case(
        9,
        8,
        {
            "groups": [
                {
                    "group_id": "billing",
                    "topics": [{"name": "orders", "partition_indexes": [0, 1, 2]}],
                },
                {"group_id": "audit", "topics": None},
            ],
            "require_stable": True,
        },
        {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "group_id": "billing",
                    "error_code": 0,
                    "topics": [
                        {
                            "name": "orders",
                            "partitions": [
                                {
                                    "partition_index": 0,
                                    "committed_offset": 1200,
                                    "committed_leader_epoch": 7,
                                    "metadata": "ckpt-1",
                                    "error_code": 0,
                                },
                                {
                                    "partition_index": 1,
                                    "committed_offset": -1,
                                    "committed_leader_epoch": -1,
                                    "metadata": None,
                                    "error_code": 0,
                                },
                            ],
                        }
                    ],
                },
                {"group_id": "audit", "error_code": 16, "topics": []},
            ],
        },
    ),
    Case(
        2,
        7,
        {
            "replica_id": -1,
            "isolation_level": 1,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": 7, "timestamp": -1},
                        {"partition_index": 1, "current_leader_epoch": -1, "timestamp": -3},
                    ],
                }
            ],
        },
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "timestamp": -1,
                            "offset": 1200,
                            "leader_epoch": 7,
                        },
                        {
                            "partition_index": 1,
                            "error_code": 0,
                            "timestamp": 1_700_000_000_123,
                            "offset": 17,
                            "leader_epoch": 2,
                        },
                    ],
                }
            ],
        },
    ),
    Case(
        2,
        1,
        {
            "replica_id": -1,
            "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "timestamp": -2}]}],
        },
        {
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 0}
                    ],
                }
            ]
        },
    ),
    Case(
        19,
        5,
        {
            "topics": [
                {
                    "name": "orders",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [
                        {"partition_index": 0, "broker_ids": [0, 1, 2]},
                        {"partition_index": 1, "broker_ids": [1, 2, 0]},
                    ],
                    "configs": [
                        {"name": "cleanup.policy", "value": "compact"},
                        {"name": "retention.ms", "value": None},
                    ],
                },
                {
                    "name": "logs",
                    "num_partitions": 6,
                    "replication_factor": 3,
                    "assignments": [],
                    "configs": [],
                },
            ],
            "timeout_ms": 30000,
            "validate_only": True,
        },
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": "orders",
                    "error_code": 0,
                    "error_message": None,
                    "topic_config_error_code": 29,
                    "num_partitions": 2,
                    "replication_factor": 3,
                    "configs": [
                        {
                            "name": "cleanup.policy",
                            "value": "compact",
                            "read_only": False,
                            "config_source": 1,
                            "is_sensitive": False,
                        },
                        {
                            "name": "sasl.jaas.config",
                            "value": None,
                            "read_only": True,
                            "config_source": 5,
                            "is_sensitive": True,
                        },
                    ],
                },
                {
                    "name": "logs",
                    "error_code": 36,
                    "error_message": "Topic 'logs' already exists.",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "configs": None,
                },
            ],
        },
    ),
    Case(
        10,
        4,
        {"key_type": 1, "coordinator_keys": ["txn-1", "txn-2"]},
        {
            "throttle_time_ms": 0,
            "coordinators": [
                {
                    "key": "txn-1",
                    "node_id": 2,
                    "host": "broker-2.kafka.local",
                    "port": 9094,
                    "error_code": 0,
                    "error_message": None,
                },
                {
                    "key": "txn-2",
                    "node_id": -1,
                    "host": "",
                    "port": -1,
                    "error_code": 15,
                    "error_message": "The coordinator is not available.",
                },
            ],
        },
    ),
    Case(
        10,
        1,
        {"key": "billing", "key_type": 0},
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "node_id": 1,
            "host": "broker-1.kafka.local",
            "port": 9093,
        },
    ),
    Case(
        12,
        4,
        {
            "group_id": "billing",
            "generation_id": 12,
            "member_id": "consumer-1-5f3e",
            "group_instance_id": "pod-7",
        },
        {"throttle_time_ms": 0, "error_code": 27},
    ),
    Case(
        14,
        5,
        {
            "group_id": "billing",
            "generation_id": 12,
            "member_id": "consumer-1-5f3e",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [
                {"member_id": "consumer-1-5f3e", "assignment": b"\x00\x03assign"},
                {"member_id": "consumer-2-9a", "assignment": b""},
            ],
        },
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignment": b"\x00\x03\x00\x00\x00\x01",
        },
    ),
    Case(
        32,
        4,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "orders",
                    "configuration_keys": ["retention.ms", "cleanup.policy"],
                },
                {"resource_type": 4, "resource_name": "1", "configuration_keys": None},
            ],
            "include_synonyms": True,
            "include_documentation": True,
        },
        {
            "throttle_time_ms": 0,
            "results": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": 2,
                    "resource_name": "orders",
                    "configs": [
                        {
                            "name": "retention.ms",
                            "value": "604800000",
                            "read_only": False,
                            "config_source": 5,
                            "is_sensitive": False,
                            "synonyms": [
                                {"name": "log.retention.ms", "value": "604800000", "source": 5}
                            ],
                            "config_type": 5,
                            "documentation": None,
                        },
                        {
                            "name": "ssl.key.password",
                            "value": None,
                            "read_only": True,
                            "config_source": 4,
                            "is_sensitive": True,
                            "synonyms": [],
                            "config_type": 9,
                            "documentation": "The password of the private key.",
                        },
                    ],
                }
            ],
        },
    ),
    Case(
        22,
        4,
        {
            "transactional_id": "txn-1",
            "transaction_timeout_ms": 60000,
            "producer_id": 4242,
            "producer_epoch": 3,
        },
        {"throttle_time_ms": 0, "error_code": 0, "producer_id": 4242, "producer_epoch": 4},
    ),
    Case(
        17,
        1,
        {"mechanism": "SCRAM-SHA-512"},
        {"error_code": 33, "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]},
    ),
    Case(
        36,
        2,
        {"auth_bytes": b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"},
        {
            "error_code": 0,
            "error_message": None,
            "auth_bytes": b"r=fyko+d2lbbFgONRv9qkxdawL3",
            "session_lifetime_ms": 3_600_000,
        },
    ),
    Case(
        20,
        6,
        {
            "topics": [{"name": "orders", "topic_id": ZERO_UUID}, {"name": None, "topic_id": T2}],
            "timeout_ms": 30000,
        },
        {
            "throttle_time_ms": 0,
            "responses": [
                {"name": "orders", "topic_id": T1, "error_code": 0, "error_message": None},
                {
                    "name": None,
                    "topic_id": T2,
                    "error_code": 100,
                    "error_message": "This server does not host this topic ID.",
                },
            ],
        },
    ),
    Case(
        37,
        3,
        {
            "topics": [
                {
                    "name": "orders",
                    "count": 6,
                    "assignments": [{"broker_ids": [0, 1]}, {"broker_ids": [1, 2]}],
                },
                {"name": "logs", "count": 12, "assignments": None},
            ],
            "timeout_ms": 30000,
            "validate_only": False,
        },
        {
            "throttle_time_ms": 0,
            "results": [
                {"name": "orders", "error_code": 0, "error_message": None},
                {"name": "logs", "error_code": 37, "error_message": "Number of partitions..."},
            ],
        },
    ),
    Case(
        23,
        4,
        {
            "replica_id": -1,
            "topics": [
                {
                    "topic": "orders",
                    "partitions": [
                        {"partition": 0, "current_leader_epoch": 7, "leader_epoch": 6},
                        {"partition": 1, "current_leader_epoch": -1, "leader_epoch": 2},
                    ],
                }
            ],
        },
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "topic": "orders",
                    "partitions": [
                        {"error_code": 0, "partition": 0, "leader_epoch": 6, "end_offset": 1100},
                        {"error_code": 74, "partition": 1, "leader_epoch": -1, "end_offset": -1},
                    ],
                }
            ],
        },
    ),
    Case(
        75,
        0,
        {
            "topics": [{"name": "orders"}, {"name": "logs"}],
            "response_partition_limit": 100,
            "cursor": {"topic_name": "orders", "partition_index": 2},
        },
        {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "error_code": 0,
                    "name": "orders",
                    "topic_id": T1,
                    "is_internal": False,
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": 2,
                            "leader_id": 1,
                            "leader_epoch": 8,
                            "replica_nodes": [1, 2],
                            "isr_nodes": [1],
                            "eligible_leader_replicas": [2],
                            "last_known_elr": None,
                            "offline_replicas": [],
                        }
                    ],
                    "topic_authorized_operations": 248,
                }
            ],
            "next_cursor": None,
        },
    ),
    Case(
        15,
        5,
        {"groups": ["billing", "audit"], "include_authorized_operations": True},
        {
            "throttle_time_ms": 0,
            "groups": [
                {
                    "error_code": 0,
                    "group_id": "billing",
                    "group_state": "Stable",
                    "protocol_type": "consumer",
                    "protocol_data": "range",
                    "members": [
                        {
                            "member_id": "consumer-1-5f3e",
                            "group_instance_id": "pod-7",
                            "client_id": "consumer-1",
                            "client_host": "/10.0.0.5",
                            "member_metadata": b"\x00\x01m",
                            "member_assignment": b"\x00\x01a",
                        }
                    ],
                    "authorized_operations": 0x0F,
                }
            ],
        },
    ),
    Case(
        13,
        4,
        {
            "group_id": "billing",
            "members": [{"member_id": "consumer-1-5f3e", "group_instance_id": "pod-7"}],
        },
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "members": [
                {"member_id": "consumer-1-5f3e", "group_instance_id": "pod-7", "error_code": 0}
            ],
        },
    ),
    Case(
        16,
        4,
        {"states_filter": ["Stable", "Empty"]},
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "groups": [
                {"group_id": "billing", "protocol_type": "consumer", "group_state": "Stable"}
            ],
        },
    ),
    Case(
        24,
        3,
        {
            "v3_and_below_transactional_id": "txn-1",
            "v3_and_below_producer_id": 4242,
            "v3_and_below_producer_epoch": 3,
            "v3_and_below_topics": [{"name": "orders", "partitions": [0, 1]}],
        },
        {
            "throttle_time_ms": 0,
            "results_by_topic_v3_and_below": [
                {
                    "name": "orders",
                    "results_by_partition": [
                        {"partition_index": 0, "partition_error_code": 0},
                        {"partition_index": 1, "partition_error_code": 53},
                    ],
                }
            ],
        },
    ),
    Case(
        26,
        3,
        {"transactional_id": "txn-1", "producer_id": 4242, "producer_epoch": 3, "committed": True},
        {"throttle_time_ms": 0, "error_code": 0},
    ),
    Case(
        60,
        1,
        {"include_cluster_authorized_operations": True, "endpoint_type": 2},
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "error_message": None,
            "endpoint_type": 2,
            "cluster_id": "MkU3OEVBNTcwNTJENDM2Qk",
            "controller_id": 1,
            "brokers": [{"broker_id": 1, "host": "ctl-1", "port": 9093, "rack": None}],
            "cluster_authorized_operations": 3,
        },
    ),
]

# The (api key, version) pairs that must have a golden case; the test below checks them.
REQUIRED = {(18, 3), (3, 12), (0, 9), (1, 12), (11, 9), (8, 8), (2, 7), (19, 5), (10, 4)}


def _message(key: int, kind: str) -> Any:
    """The message as generated from Kafka's schemas: api() would add the tagged-field
    extensions an application registered (mockbroker's), which the peer does not know."""
    request, response = generated_messages(key)
    return request if kind == "request" else response


def _codec(key: int, kind: str, version: int) -> Any:
    return codec_for(_message(key, kind), version)


def _project(value: Any, fields: Any) -> Any:
    """A decoded struct reduced to the generated fields (drops extension fields)."""
    if isinstance(value, list):
        return [_project(v, fields) for v in value]
    if not isinstance(value, Mapping):
        return value
    return {f.name: _project(value[f.name], f.fields) if f.fields else value[f.name]
            for f in fields}


PARAMS = [
    pytest.param(case, kind, id=f"{case.id}-{kind}")
    for case in CASES
    for kind in ("request", "response")
    if getattr(case, kind) is not None
]


def _peer_encode(obj: ApiMessage, version: int) -> bytes:
    return bytes(obj.encode(version=version))


def _assert_subset(expected: Any, actual: Any, path: str = "") -> None:
    """Every value written in a case survives (catches typos in the case's field names)."""
    if isinstance(expected, Mapping):
        assert isinstance(actual, Mapping), path
        for k, v in expected.items():
            assert k in actual, f"{path}.{k}: not a field of this message"
            _assert_subset(v, actual[k], f"{path}.{k}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), path
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _assert_subset(e, a, f"{path}[{i}]")
    else:
        assert expected == actual, path


@pytest.mark.parametrize(("case", "kind"), PARAMS)
def test_golden_body(case: Case, kind: str) -> None:
    value = getattr(case, kind)
    codec = _codec(case.key, kind, case.version)
    message = _message(case.key, kind)
    flexible = in_range(case.version, message.flexible)
    ours = codec.encode(value)
    full = codec.decode(ours)
    _assert_subset(value, full)

    peer = peer_object(case.key, kind, case.version, full)
    theirs = _peer_encode(peer, case.version)
    assert ours == theirs, f"ours:   {ours.hex()}\ntheirs: {theirs.hex()}"

    # Our decoder reads kafka-python's bytes back to the full value.
    assert codec.decode(theirs) == full
    # kafka-python reads our bytes to the same content and writes them back unchanged.
    cls = PEER[(case.key, kind)]
    decoded = cls.decode(ours, version=case.version)
    assert from_peer(decoded, message.fields, case.version, flexible) == full
    decoded._header = None
    assert _peer_encode(decoded, case.version) == ours


def test_golden_coverage() -> None:
    covered = {(c.key, c.version) for c in CASES}
    assert covered >= REQUIRED
    assert len(covered - REQUIRED) >= 8
    both = [c for c in CASES if c.request is not None and c.response is not None]
    assert len(both) >= 17
    # Tagged fields with non-default values appear in these cases.
    assert CASES[0].response and CASES[0].response["zk_migration_ready"]


# ------------------------------------------------------------------ whole frames

FRAME_CASES = [
    c
    for c in CASES
    if (c.key, c.version)
    in {(18, 3), (18, 0), (3, 1), (3, 12), (0, 3), (0, 9), (1, 12), (11, 5), (11, 9), (17, 1)}
]


@pytest.mark.parametrize(
    "case", [c for c in FRAME_CASES if c.request is not None], ids=lambda c: c.id
)
def test_golden_request_frame(case: Case) -> None:
    assert case.request is not None
    full = _codec(case.key, "request", case.version).decode(
        _codec(case.key, "request", case.version).encode(case.request)
    )
    peer = peer_object(case.key, "request", case.version, full)
    peer.with_header(correlation_id=7311, client_id="console-consumer")
    theirs = bytes(peer.encode(version=case.version, header=True))
    ours = encode_request(
        case.key, case.version, full, correlation_id=7311, client_id="console-consumer"
    )
    assert ours == theirs
    request = decode_request(theirs)
    assert (request.api_key, request.api_version, request.correlation_id, request.client_id) == (
        case.key,
        case.version,
        7311,
        "console-consumer",
    )
    # decode_request uses api(), which may carry registered extensions (default-valued here)
    assert _project(request.body, _message(case.key, "request").fields) == full
    decoded = PEER[(case.key, "request")].decode(ours, version=case.version, header=True)
    assert decoded.header.correlation_id == 7311
    assert decoded.header.client_id == "console-consumer"


@pytest.mark.parametrize(
    "case", [c for c in FRAME_CASES if c.response is not None], ids=lambda c: c.id
)
def test_golden_response_frame(case: Case) -> None:
    assert case.response is not None
    codec = _codec(case.key, "response", case.version)
    full = codec.decode(codec.encode(case.response))
    peer = peer_object(case.key, "response", case.version, full)
    peer.with_header(correlation_id=-2)
    # (encode(version=...) would try to set request_api_version on a response header)
    theirs = bytes(peer.encode(header=True))
    ours = encode_response(case.key, case.version, -2, full)
    assert ours == theirs
    response = decode_response(case.key, case.version, theirs)
    assert response.correlation_id == -2
    assert response.body == full
    decoded = PEER[(case.key, "response")].decode(ours, version=case.version, header=True)
    assert decoded.header.correlation_id == -2


def test_null_client_id_frame() -> None:
    """A null client id is a legacy null string (-1) even in request header v2."""
    peer = PEER[(18, "request")](version=3, client_software_name="x", client_software_version="1")
    peer.with_header(correlation_id=1, client_id=None)
    theirs = bytes(peer.encode(version=3, header=True))
    ours = encode_request(
        18,
        3,
        {"client_software_name": "x", "client_software_version": "1"},
        correlation_id=1,
        client_id=None,
    )
    assert ours == theirs
    assert decode_request(theirs).client_id is None


# ------------------------------------------------------------------ aiokafka, a third encoder


def test_aiokafka_metadata_v1_and_produce_v3() -> None:
    """aiokafka's hand-written structs agree for two classic non-flexible requests."""
    from aiokafka.protocol.metadata import MetadataRequest_v1
    from aiokafka.protocol.produce import ProduceRequest_v3

    assert MetadataRequest_v1(["orders", "logs"]).encode() == api(3).request_codec(1).encode(
        {"topics": [{"name": "orders"}, {"name": "logs"}]}
    )
    assert MetadataRequest_v1(None).encode() == api(3).request_codec(1).encode({"topics": None})
    theirs = ProduceRequest_v3(None, -1, 1500, [("orders", [(0, BATCH)])]).encode()
    ours = (
        api(0)
        .request_codec(3)
        .encode(
            {
                "transactional_id": None,
                "acks": -1,
                "timeout_ms": 1500,
                "topic_data": [
                    {"name": "orders", "partition_data": [{"index": 0, "records": BATCH}]}
                ],
            }
        )
    )
    assert ours == theirs


# ------------------------------------------------------------------ random values, every pair

# Every (api, version, direction) that both sides define. Excluded: ListClientMetricsResources
# (key 74), which kafka-python's newer schemas renamed to ListConfigResources and reshaped.
DIFFERENTIAL = [
    (key, version, kind)
    for (key, kind), cls in sorted(PEER.items())
    if key != 74
    for version in api(key).request.versions
    if version <= cls.max_version
]


@pytest.mark.parametrize(
    ("key", "version", "kind"),
    DIFFERENTIAL,
    ids=[f"{api(k).name}-v{v}-{kind}" for k, v, kind in DIFFERENTIAL],
)
@settings(
    max_examples=3,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_differential_random_values(key: int, version: int, kind: str, data: Any) -> None:
    """Random values (strategies.py) encode identically with kafka-python, both ways."""
    message = _message(key, kind)
    codec = _codec(key, kind, version)
    value = data.draw(message_values(message, version), label="value")
    ours = codec.encode(value)
    theirs = bytes(peer_object(key, kind, version, value).encode(version=version))
    assert ours == theirs, f"ours:   {ours.hex()}\ntheirs: {theirs.hex()}"
    assert codec.decode(theirs) == value
    if key == 18 and kind == "response" and value["error_code"] != 0:
        return  # kafka-python reads any ApiVersions response with an error as v0
    decoded = PEER[(key, kind)].decode(ours, version=version)
    flexible = in_range(version, message.flexible)
    assert from_peer(decoded, message.fields, version, flexible) == value


def test_differential_coverage() -> None:
    assert len(DIFFERENTIAL) > 450
    assert {k for k, _, _ in DIFFERENTIAL} >= {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19}
