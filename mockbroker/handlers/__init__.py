"""Request handlers, one module per API or API family, registered with their versions.

Theory of operation: a handler is a function of (request body, RequestContext) that returns
the response body (a mapping), None for "send no response" (Produce with acks=0), or an
awaitable of either (Fetch long-polls). `@handler(api_key, low, high)` puts it in REGISTRY;
ApiVersions is built from REGISTRY, so what the broker advertises is exactly what it
handles. Importing this package imports every handler module, which registers them.
"""

from __future__ import annotations

from mockbroker.handlers.registry import REGISTRY, HandlerSpec, advertised_versions, handler

# Importing the modules registers their handlers.
from mockbroker.handlers import (  # noqa: F401  isort: skip
    acls,
    admin_topics,
    alter_configs,
    api_versions,
    client_quotas,
    consumer_group,
    delete_records,
    describe_cluster,
    describe_configs,
    describe_topic_partitions,
    elect_leaders,
    fetch,
    find_coordinator,
    group_admin,
    group_membership,
    group_offsets,
    init_producer_id,
    list_offsets,
    log_dirs,
    metadata,
    offset_for_leader_epoch,
    produce,
    quorum,
    reassignments,
    sasl,
    scram_credentials,
    share_fetch,
    share_groups,
    telemetry,
    transactions,
    txn_admin,
)

__all__ = ["REGISTRY", "HandlerSpec", "advertised_versions", "handler"]
