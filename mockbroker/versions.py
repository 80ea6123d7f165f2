"""Version emulation: advertise only what a given Kafka release advertised in ApiVersions.

Theory of operation: a client picks, per API, the highest version both it and the broker
support, and it learns the broker's side from the ApiVersions response. So to let users test
their client against an older (or newer) broker, it is enough to advertise that release's
ranges: `api_caps(release)` returns {api_key: (min, max)} for `ClusterServer(api_caps=...)`,
which intersects each handled API's range with the cap and drops every API the release did
not advertise (handlers.registry.advertised_versions). Requests outside the advertised
ranges are then refused exactly like any unadvertised version (the connection closes;
ApiVersions itself answers UNSUPPORTED_VERSION in the v0 layout with the list).

Only the advertisement is emulated. Behaviour that changed between releases (error codes,
KRaft-only features, the 4.0 removal of message format v0/v1) stays mockbroker's. The
ApiVersions handler shows the `transaction.version` feature (transactions v2, KIP-890) only
when EndTxn v5 is advertised, which among the tables only 4.0's does.

Without a release, the brokers look like the newest one the schemas describe, DEFAULT_RELEASE
(4.0): its ranges cap every API it advertised, KIP-896's raised minimums included, so clients
negotiate as against a Kafka 4.0 broker (kafka-python infers 4.0). An API mockbroker handles
that the release's default answer lacks (a broker feature Kafka enables only when configured)
keeps its handled range rather than disappearing (`default_caps`), except the KIP-932 share
group APIs: Kafka 4.0 marks them latestVersionUnstable and advertises them only with
unstable.api.versions.enable=true, so they are hidden unless it is set; a request to a
hidden API closes the connection, as for any API the broker does not expose. (Whether they
then serve is another setting: without "share" among group.coordinator.rebalance.protocols
they answer UNSUPPORTED_VERSION, handlers/share_groups.py.) `ALL`
("all") advertises every version mockbroker handles, older ones included (the share group
APIs too): for clients older than KIP-896 that a Kafka 4.0 broker refuses.

The tables are each release's full ApiVersions answer, as a broker with default settings
(ZooKeeper mode for 2.8 to 3.9; KRaft for 4.0, which dropped ZooKeeper) sends it, "key:min-max"
per API. Sources, which agree for every key of 2.8, 3.0, 3.6 and 3.9:
- the request schemas (clients/src/main/resources/common/message/*Request.json) at the
  release tags 2.8.2, 3.0.2, 3.6.2 and 3.9.0 of apache/kafka: `validVersions` of the APIs
  whose `listeners` include zkBroker, less the latest version where `latestVersionUnstable`
  is set (OffsetCommit v9 in 3.6);
- the ApiVersions responses recorded from real brokers in kafka-python 3's
  kafka/protocol/broker_version_data.py (BROKER_API_VERSIONS), also the source for 4.0:
  KIP-896 raised the minimum versions (Fetch 4, ListOffsets 1, OffsetCommit 2, JoinGroup 2,
  CreateTopics 2, DeleteTopics 1, OffsetForLeaderEpoch 2, DescribeConfigs 1, ...), except
  Produce, whose 0-2 a 4.0 broker still advertises (and refuses) because of a librdkafka
  bug (KAFKA-18659). mockbroker advertises and accepts Produce 0-2 there.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

# release -> its ApiVersions answer, "key:min-max" (or "key:v" for a single version)
_TABLES: dict[str, str] = {
    "2.8": """0:0-9 1:0-12 2:0-6 3:0-11 4:0-5 5:0-3 6:0-7 7:0-3 8:0-8 9:0-7 10:0-3 11:0-7
              12:0-4 13:0-4 14:0-5 15:0-5 16:0-4 17:0-1 18:0-3 19:0-7 20:0-6 21:0-2 22:0-4
              23:0-4 24:0-3 25:0-3 26:0-3 27:0-1 28:0-3 29:0-2 30:0-2 31:0-2 32:0-4 33:0-2
              34:0-2 35:0-2 36:0-2 37:0-3 38:0-2 39:0-2 40:0-2 41:0-2 42:0-2 43:0-2 44:0-1
              45:0 46:0 47:0 48:0-1 49:0-1 50:0 51:0 56:0 57:0 60:0 61:0""",
    "3.0": """0:0-9 1:0-12 2:0-7 3:0-11 4:0-5 5:0-3 6:0-7 7:0-3 8:0-8 9:0-8 10:0-4 11:0-7
              12:0-4 13:0-4 14:0-5 15:0-5 16:0-4 17:0-1 18:0-3 19:0-7 20:0-6 21:0-2 22:0-4
              23:0-4 24:0-3 25:0-3 26:0-3 27:0-1 28:0-3 29:0-2 30:0-2 31:0-2 32:0-4 33:0-2
              34:0-2 35:0-2 36:0-2 37:0-3 38:0-2 39:0-2 40:0-2 41:0-2 42:0-2 43:0-2 44:0-1
              45:0 46:0 47:0 48:0-1 49:0-1 50:0 51:0 56:0 57:0 60:0 61:0 65:0 66:0 67:0""",
    "3.6": """0:0-9 1:0-15 2:0-8 3:0-12 4:0-7 5:0-4 6:0-8 7:0-3 8:0-8 9:0-8 10:0-4 11:0-9
              12:0-4 13:0-5 14:0-5 15:0-5 16:0-4 17:0-1 18:0-3 19:0-7 20:0-6 21:0-2 22:0-4
              23:0-4 24:0-4 25:0-3 26:0-3 27:0-1 28:0-3 29:0-3 30:0-3 31:0-3 32:0-4 33:0-2
              34:0-2 35:0-4 36:0-2 37:0-3 38:0-3 39:0-2 40:0-2 41:0-3 42:0-2 43:0-2 44:0-1
              45:0 46:0 47:0 48:0-1 49:0-1 50:0 51:0 56:0-3 57:0-1 58:0 60:0 61:0 65:0 66:0
              67:0""",
    "3.9": """0:0-11 1:0-17 2:0-9 3:0-12 4:0-7 5:0-4 6:0-8 7:0-3 8:0-9 9:0-9 10:0-6 11:0-9
              12:0-4 13:0-5 14:0-5 15:0-5 16:0-5 17:0-1 18:0-4 19:0-7 20:0-6 21:0-2 22:0-5
              23:0-4 24:0-5 25:0-4 26:0-4 27:0-1 28:0-4 29:0-3 30:0-3 31:0-3 32:0-4 33:0-2
              34:0-2 35:0-4 36:0-2 37:0-3 38:0-3 39:0-2 40:0-2 41:0-3 42:0-2 43:0-2 44:0-1
              45:0 46:0 47:0 48:0-1 49:0-1 50:0 51:0 56:0-3 57:0-1 58:0 60:0-1 61:0 65:0
              66:0-1 67:0 68:0 69:0""",
    "4.0": """0:0-12 1:4-17 2:1-10 3:0-13 8:2-9 9:1-9 10:0-6 11:2-9 12:0-4 13:0-5 14:0-5
              15:0-6 16:0-5 17:0-1 18:0-4 19:2-7 20:1-6 21:0-2 22:0-5 23:2-4 24:0-5 25:0-4
              26:0-5 27:1 28:0-5 29:1-3 30:1-3 31:1-3 32:1-4 33:0-2 34:1-2 35:1-4 36:0-2
              37:0-3 38:1-3 39:1-2 40:1-2 41:1-3 42:0-2 43:0-2 44:0-1 45:0 46:0 47:0 48:0-1
              49:0-1 50:0 51:0 55:0-2 57:0-2 60:0-2 61:0 64:0 65:0 66:0-1 68:0-1 69:0-1 74:0
              75:0 80:0 81:0""",
}

RELEASES: tuple[str, ...] = tuple(_TABLES)
# KIP-932 share groups, unstable in 4.0: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
# ShareAcknowledge (the share-state APIs between brokers mockbroker does not have)
SHARE_GROUP_APIS = frozenset({76, 77, 78, 79})
DEFAULT_RELEASE = "4.0"
ALL = "all"  # every version mockbroker handles: no cap


class UnknownKafkaVersion(ValueError):
    """A --kafka-version that has no table."""


def normalize(version: str) -> str:
    """"3.6", "3.6.2" or "v3.6" -> "3.6", "all" -> "all"; raises UnknownKafkaVersion for
    others."""
    text = version.strip().lower().removeprefix("v")
    if text == ALL:
        return ALL
    parts = text.split(".")
    release = ".".join(parts[:2])
    if len(parts) not in (2, 3) or release not in _TABLES or not all(p.isdigit() for p in parts):
        raise UnknownKafkaVersion(
            f"unknown Kafka version {version!r}; emulated releases: {', '.join(RELEASES)} "
            f"(or {ALL!r}: every version mockbroker handles)")
    return release


@cache
def _parse(release: str) -> dict[int, tuple[int, int]]:
    out: dict[int, tuple[int, int]] = {}
    for entry in _TABLES[release].split():
        key, _, span = entry.partition(":")
        low, _, high = span.partition("-")
        out[int(key)] = (int(low), int(high or low))
    return out


def api_caps(version: str) -> dict[int, tuple[int, int]]:
    """{api_key: (min, max)} that Kafka `version` advertised (a copy: callers may edit it)."""
    release = normalize(version)
    if release == ALL:
        raise UnknownKafkaVersion(f"{ALL!r} has no table: it caps nothing")
    return dict(_parse(release))


def default_caps(handled: Mapping[int, tuple[int, int]],
                 unstable_apis: bool = False) -> dict[int, tuple[int, int]]:
    """The caps without a --kafka-version: DEFAULT_RELEASE's ranges, and for the handled
    APIs that release does not advertise, their handled ranges; the unstable KIP-932 APIs
    only when `unstable_apis` (unstable.api.versions.enable=true)."""
    caps = {**handled, **_parse(DEFAULT_RELEASE)}
    if not unstable_apis:
        caps = {key: span for key, span in caps.items() if key not in SHARE_GROUP_APIS}
    return caps


def caps_for(version: str | None, handled: Mapping[int, tuple[int, int]],
             unstable_apis: bool = False) -> dict[int, tuple[int, int]] | None:
    """The ApiVersions caps for a --kafka-version (None: the default; "all": no caps)."""
    if version is None:
        return default_caps(handled, unstable_apis)
    release = normalize(version)
    return None if release == ALL else api_caps(release)
