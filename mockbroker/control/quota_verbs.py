"""The control API's client quota verbs: set-quota, quotas.

Theory of operation: `set-quota` goes through the cluster's quota manager
(mockbroker.cluster.quotas.quota_manager) as AlterClientQuotas does: ClientQuotaRecords written by
the controller, applied by every broker that follows the metadata log (a paused broker applies
it when it catches up), so a quota set here throttles the next request to an up-to-date
broker. An entity is Kafka-shaped JSON: {"user": "alice", "client-id": null} (null: the
default entity); values are Kafka's keys, null removes one. `quotas` shows the entities at
the log's end and every broker's measurements; `reset` removes every quota (through the
log) and every measurement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.cluster.quotas.quota_manager import QuotaError, make_entity
from mockbroker.control.errors import ControlError

if TYPE_CHECKING:
    from mockbroker.cluster import Cluster


class QuotaVerbs:
    cluster: Cluster

    async def set_quota(self, entity: dict[str, str | None],
                        values: dict[str, float | None]) -> dict[str, Any]:
        """Set or remove (null) quota values of one entity, e.g. entity {"user": "alice"},
        values {"producer_byte_rate": 1024}."""
        if not isinstance(entity, dict) or not isinstance(values, dict):
            raise ControlError(400, "entity and values must be JSON objects")
        for key, value in values.items():
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, (int, float))):
                raise ControlError(400, f"{key} must be a number or null, got {value!r}")
        try:
            parsed = make_entity(dict(entity))
            self.cluster.quotas.alter(parsed, [(k, None if v is None else float(v))
                                               for k, v in values.items()])
        except QuotaError as exc:
            raise ControlError(400, str(exc)) from None
        return quotas_json(self.cluster)

    async def quotas(self) -> dict[str, Any]:
        """Quota entities, bytes and request time recorded, throttled responses, the
        last throttle of each (user, client-id, quota) and whether it is still running, and
        the controller mutation quotas' (KIP-599) buckets and refusals."""
        return quotas_json(self.cluster)


def quotas_json(cluster: Cluster) -> dict[str, Any]:
    return {**cluster.quotas.to_json(),
            "controller_mutations": cluster.mutation_quotas.to_json()}


VERBS = {"set-quota": "set_quota", "quotas": "quotas"}
