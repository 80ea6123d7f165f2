"""Random ids as Kafka draws them (org.apache.kafka.common.Uuid.randomUuid): 16 random bytes
whose URL-safe base64 form (22 characters, no padding) contains no "-" (so that an id can be
passed on a command line), and never the reserved zero id or the metadata topic's id (1).
Kafka's topic ids, cluster ids (kafka-storage random-uuid) and the member ids its group
coordinator assigns are all drawn this way.

The reserved ids are defined here once for mockbroker: ZERO_UUID (Uuid.ZERO_UUID, "no id": an
unset topic id, an unassigned log directory, a client without an instance id yet) is the
codec's, which needs it as the default of every uuid field; METADATA_TOPIC_ID is
Uuid.METADATA_TOPIC_ID, the id of __cluster_metadata.
"""

from __future__ import annotations

import base64
import uuid

from kafka_protocol_codec.codec_runtime import ZERO_UUID as ZERO_UUID

METADATA_TOPIC_ID = uuid.UUID(int=1)
RESERVED = frozenset({ZERO_UUID, METADATA_TOPIC_ID})
MAX_DRAWS = 1000  # about 29 % of draws contain "-": ending here is astronomically unlikely


def base64_id(value: uuid.UUID) -> str:
    """The id as Kafka prints it (Uuid.toString)."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def random_uuid() -> uuid.UUID:
    """A random id Kafka's Uuid.randomUuid could have drawn."""
    for _ in range(MAX_DRAWS):
        value = uuid.uuid4()
        if value not in RESERVED and "-" not in base64_id(value):
            return value
    raise RuntimeError(f"no Kafka-style random id in {MAX_DRAWS} draws")


def random_id() -> str:
    """A random id in Kafka's printed form (a member id the coordinator assigns, a cluster
    id)."""
    return base64_id(random_uuid())
