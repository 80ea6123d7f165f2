"""Random ids as Kafka draws them (org.apache.kafka.common.Uuid.randomUuid): 16 random bytes
whose URL-safe base64 form (22 characters, no padding) contains no "-" (so that an id can be
passed on a command line), and never the reserved zero id or the metadata topic's id (1).
Kafka's topic ids, cluster ids (kafka-storage random-uuid) and the member ids its group
coordinator assigns are all drawn this way.
"""

from __future__ import annotations

import base64
import uuid

RESERVED = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})
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
