"""Finalized features (KIP-584) and the controller quorum as clients can see them (KIP-595).

Theory of operation: the only feature mockbroker finalizes is metadata.version, whose level
lives in the metadata log as a FeatureLevelRecord (the first record the controller writes,
at ClusterConfig.metadata_version, as `kafka-storage format --release-version` would) and in
every broker's image; ApiVersions (v3+) reports the image's levels as finalized features and
SUPPORTED_FEATURES as supported ones. UpdateFeatures decides a change here, as Kafka's
FeatureControlManager does: an upgrade within the supported range writes a new
FeatureLevelRecord; the same level is a no-op; a level outside the range, a downgrade
without a downgrade type, a "downgrade" to a higher level, a safe metadata.version downgrade
(metadata might be lost) or an unsafe one (not supported) and any feature name the
controller does not support are INVALID_UPDATE_VERSION with Kafka's wording. Another
supported feature (transaction.version, when the emulated release has it) is downgraded
like any level change, with a downgrade type.
When brokers close client connections after a change: feature_renegotiation.py.

The quorum: one voter, the toy controller (CONTROLLER_NODE_ID, an isolated controller that
no client connects to, so it has no listener; a static voter, so with the zero directory id
as Kafka reports it at kraft.version 0), leader of epoch Controller.epoch; its high
watermark is the metadata log's end offset. The brokers are observers whose log end offset
is the offset after the last one they acknowledged in a heartbeat
(cluster/kraft/heartbeat_rounds.py).
"""

from __future__ import annotations

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.cluster_errors import ClusterError
from mockbroker.cluster.kafka_uuid import ZERO_UUID

METADATA_VERSION_FEATURE = "metadata.version"
MIN_METADATA_VERSION = 1  # 3.0-IV1, the first KRaft metadata.version
CONTROLLER_NODE_ID = 3000
# a voter of a static quorum (controller.quorum.voters, kraft.version 0) has no directory id:
# Kafka reports the zero id for it (kafka-metadata-quorum shows AAAAAAAAAAAAAAAAAAAAAA)
CONTROLLER_DIRECTORY_ID = ZERO_UUID
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def supported_features(max_metadata_version: int) -> dict[str, tuple[int, int]]:
    """Feature name -> (min, max) level this broker and controller support."""
    return {METADATA_VERSION_FEATURE: (MIN_METADATA_VERSION, max_metadata_version)}


def check_feature_update(finalized: dict[str, int], supported: dict[str, tuple[int, int]],
                         name: str, level: int, upgrade_type: int) -> bool:
    """Whether the update changes anything (False: already at that level); raises
    INVALID_UPDATE_VERSION for what Kafka's controller refuses."""
    def invalid(reason: str) -> ClusterError:
        return ClusterError(ErrorCode.INVALID_UPDATE_VERSION,
                            f"Invalid update version {level} for feature {name}. {reason}")

    if name not in supported:
        raise invalid(f"Local controller {CONTROLLER_NODE_ID} does not support this feature.")
    low, high = supported[name]
    if level < low or level > high:
        raise invalid(f"Local controller {CONTROLLER_NODE_ID} only supports versions "
                      f"{low}-{high}")
    current = finalized.get(name, 0)
    if level == current:
        return False
    if level > current and upgrade_type != UPGRADE:
        raise invalid("Can't downgrade to a newer version.")
    if level < current:
        if upgrade_type == UPGRADE:
            raise invalid("Can't downgrade the version of this feature without setting the "
                          "upgrade type to either safe or unsafe downgrade.")
        if name != METADATA_VERSION_FEATURE:  # another feature's level simply changes
            return True
        if upgrade_type == UNSAFE_DOWNGRADE:
            raise ClusterError(ErrorCode.INVALID_UPDATE_VERSION,
                               "Unsafe metadata downgrade is not supported in this version.")
        raise ClusterError(ErrorCode.INVALID_UPDATE_VERSION,
                           f"Invalid metadata.version {level}. Refusing to perform the "
                           "requested downgrade because it might delete metadata "
                           "information.")
    return True
