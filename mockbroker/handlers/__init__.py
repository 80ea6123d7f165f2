"""Request handlers, one module per API or API family, registered with their versions.

Theory of operation: a handler is a function of (request body, RequestContext) that returns
the response body (a mapping), None for "send no response" (Produce with acks=0), or an
awaitable of either (Fetch long-polls). `@handler(api_key, low, high)` puts it in REGISTRY;
ApiVersions is built from REGISTRY, so what the broker advertises is exactly what it
handles.

Importing this package imports no handler module: it declares each one below, with the API
keys and version ranges it registers (and which of them register a PartitionShape), and a
module is imported when its entry is first read, on the first request of one of its APIs.
A module registering other ranges than declared fails at that import, and
tests/handlers/test_handler_declarations.py imports them all and compares.
"""

from __future__ import annotations

from mockbroker.handlers.registry import (
    REGISTRY,
    HandlerSpec,
    advertised_versions,
    declare,
    handler,
)

# the APIs that register a PartitionShape: Produce, Fetch, ListOffsets, Metadata,
# OffsetForLeaderEpoch
PARTITION_LEVEL = frozenset({0, 1, 2, 3, 23})

# module: {api key: (min version, max version)}
declare("produce", {0: (0, 12)}, PARTITION_LEVEL)
declare("fetch", {1: (0, 17)}, PARTITION_LEVEL)
declare("list_offsets", {2: (0, 10)}, PARTITION_LEVEL)
declare("metadata", {3: (0, 12)}, PARTITION_LEVEL)
declare("group_offsets", {8: (0, 9), 9: (0, 9)})
declare("find_coordinator", {10: (0, 6)})
declare("group_membership", {11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5)})
declare("group_admin", {15: (0, 5), 16: (0, 5), 42: (0, 2), 47: (0, 0)})
declare("sasl", {17: (0, 1), 36: (0, 2)})
declare("api_versions", {18: (0, 4)})
declare("admin_topics", {19: (0, 7), 20: (0, 6), 37: (0, 3)})
declare("delete_records", {21: (0, 2)})
declare("init_producer_id", {22: (0, 5)})
declare("offset_for_leader_epoch", {23: (0, 4)}, PARTITION_LEVEL)
declare("transactions", {24: (0, 5), 25: (0, 4), 26: (0, 5), 28: (0, 5)})
declare("txn_markers", {27: (1, 1)})
declare("acls", {29: (0, 3), 30: (0, 3), 31: (0, 3)})
declare("describe_configs", {32: (0, 4)})
declare("alter_configs", {33: (0, 2), 44: (0, 1)})
declare("log_dirs", {34: (0, 2), 35: (0, 4)})
declare("elect_leaders", {43: (0, 2)})
declare("reassignments", {45: (0, 0), 46: (0, 0)})
declare("client_quotas", {48: (0, 1), 49: (0, 1)})
declare("scram_credentials", {50: (0, 0), 51: (0, 0)})
declare("quorum", {55: (0, 2), 57: (0, 2), 80: (0, 0), 81: (0, 0)})
declare("describe_cluster", {60: (0, 1)})
declare("unregister_broker", {64: (0, 0)})
declare("txn_admin", {61: (0, 0), 65: (0, 0), 66: (0, 1)})
declare("consumer_group", {68: (0, 1), 69: (0, 0)})
declare("telemetry", {71: (0, 0), 72: (0, 0)})
declare("client_metrics", {74: (0, 0)})
declare("describe_topic_partitions", {75: (0, 0)})
declare("share_groups", {76: (0, 0), 77: (0, 0)})
declare("share_fetch", {78: (0, 0), 79: (0, 0)})

__all__ = ["REGISTRY", "HandlerSpec", "advertised_versions", "handler"]
