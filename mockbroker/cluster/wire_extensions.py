"""mockbroker's tagged-field extensions of Kafka messages (documented in docs/extensions.md).

Theory of operation: KIP-359, KIP-253 and a draft KIP ask for fields Kafka's schemas do
not have. Each is added as a tagged field through the codec's extension mechanism
(kafka_protocol_codec.register_extension), so the generated modules stay as Kafka's schemas
made them, and peers that do not know a field never see it: a decoder skips unknown tags,
and an encoder writes a tagged field only when it differs from its default. Importing this
module registers them all; mockbroker.cluster imports it first.

- Produce request (v9+, flexible), PartitionProduceData, tag 16384: CurrentLeaderEpoch
  (KIP-359). -1 (absent): no check.
- Produce request (v9+), TopicProduceData, tag 16385: PartitionCount (KIP-253).
  -1 (absent): no check.
- BrokerHeartbeat response v1, top level, tag 16384: LowestAcknowledgedOffset (a draft
  KIP adds it as a plain v1 field; the real v1 schema has no such field).
- PartitionRecord (KRaft metadata record 3), tag 16384: PriorLeaderEpochs, the map
  prior partition -> leader epoch before the expansion that created this partition (KIP-253
  stores it in the new partition's znode; PartitionRecord is KRaft's equivalent).
- UserScramCredentialRecord (11) and RemoveUserScramCredentialRecord (22), tag 16384:
  PlainVerifier (bool, default false): the record is the user's PLAIN verifier (a PBKDF2
  hash of the password, SHA-256 as the Mechanism field says), not a SCRAM credential, so
  the users a PLAIN listener accepts (Kafka's JAAS user_NAME entries) live in the metadata
  log beside the SCRAM credentials.

Tag numbers start at 16384: far above the small tags Kafka assigns (it numbers tagged
fields from 0 per struct), so a future Kafka field will not collide with them.
"""

from __future__ import annotations

from kafka_protocol_codec import register_extension
from kafka_protocol_codec.schema import F

PRODUCE = 0
BROKER_HEARTBEAT = 63
PARTITION_RECORD = 3
USER_SCRAM_CREDENTIAL_RECORD = 11
REMOVE_USER_SCRAM_CREDENTIAL_RECORD = 22

CURRENT_LEADER_EPOCH_TAG = 16384
PARTITION_COUNT_TAG = 16385
LOWEST_ACKNOWLEDGED_OFFSET_TAG = 16384
PRIOR_LEADER_EPOCHS_TAG = 16384
PLAIN_VERIFIER_TAG = 16384

NO_CHECK = -1
FIRST_FLEXIBLE_PRODUCE = 9

CURRENT_LEADER_EPOCH = F(
    "current_leader_epoch", "int32", (FIRST_FLEXIBLE_PRODUCE, None), default=NO_CHECK,
    tag=CURRENT_LEADER_EPOCH_TAG, tagged=(FIRST_FLEXIBLE_PRODUCE, None))
PARTITION_COUNT = F(
    "partition_count", "int32", (FIRST_FLEXIBLE_PRODUCE, None), default=NO_CHECK,
    tag=PARTITION_COUNT_TAG, tagged=(FIRST_FLEXIBLE_PRODUCE, None))
LOWEST_ACKNOWLEDGED_OFFSET = F(
    "lowest_acknowledged_offset", "int64", (1, None), default=-1,
    tag=LOWEST_ACKNOWLEDGED_OFFSET_TAG, tagged=(1, None))
PRIOR_LEADER_EPOCHS = F(
    "prior_leader_epochs", "[]PriorLeaderEpoch", (0, None),
    tag=PRIOR_LEADER_EPOCHS_TAG, tagged=(0, None), fields=(
        F("partition_id", "int32", (0, None), default=-1),
        F("leader_epoch", "int32", (0, None), default=-1),
    ))

PLAIN_VERIFIER = F("plain_verifier", "bool", (0, None), default=False,
                   tag=PLAIN_VERIFIER_TAG, tagged=(0, None))


def register() -> None:
    """Register every extension (idempotent)."""
    register_extension(PRODUCE, "request", ("topic_data", "partition_data"),
                       CURRENT_LEADER_EPOCH)
    register_extension(PRODUCE, "request", ("topic_data",), PARTITION_COUNT)
    register_extension(BROKER_HEARTBEAT, "response", (), LOWEST_ACKNOWLEDGED_OFFSET)
    register_extension(PARTITION_RECORD, "metadata", (), PRIOR_LEADER_EPOCHS)
    for record_type in (USER_SCRAM_CREDENTIAL_RECORD, REMOVE_USER_SCRAM_CREDENTIAL_RECORD):
        register_extension(record_type, "metadata", (), PLAIN_VERIFIER)


register()
