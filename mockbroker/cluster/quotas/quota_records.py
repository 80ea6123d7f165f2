"""ClientQuotaRecord (KRaft metadata record 14): the client quota entities in the metadata
log, as Kafka's controller writes them (ClientQuotaControlManager) and its brokers apply
them (ClientQuotaMetadataManager).

Theory of operation: one record sets or removes one key of one entity. The controller
writes a record only for a key whose value changes (setting the same value, or removing a
key that is not set, writes nothing), all of one AlterClientQuotas entry in one atomic
group. A metadata image keeps the entities as {entity: {key: value}}; an entity whose last
key is removed disappears. Applying a record replaces the entity's dict rather than changing
it, so an image copied before (another broker's, an older one) keeps its values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mockbroker.cluster.quotas.quota_manager import Entity

CLIENT_QUOTA = 14  # ClientQuotaRecord's type id

QuotaEntities = dict[Entity, dict[str, float]]


def client_quota_records(current: Mapping[Entity, Mapping[str, float]], entity: Entity,
                         ops: Sequence[tuple[str, float | None]]) -> list[dict[str, Any]]:
    """The records that bring `entity` from `current` to `ops` applied (a value sets a key,
    None removes it); nothing for what would not change."""
    values = dict(current.get(entity, {}))
    wire_entity = [{"entity_type": t, "entity_name": n} for t, n in entity]
    records: list[dict[str, Any]] = []
    for key, value in ops:
        if value is None:
            if key not in values:
                continue
            del values[key]
            records.append({"entity": wire_entity, "key": key, "value": 0.0, "remove": True})
        elif values.get(key) != value:
            values[key] = value
            records.append({"entity": wire_entity, "key": key, "value": value,
                            "remove": False})
    return records


def apply_client_quota(entities: QuotaEntities, data: Mapping[str, Any]) -> None:
    """Apply one ClientQuotaRecord to an image's entities (copy-on-write per entity)."""
    entity: Entity = tuple(sorted((e["entity_type"], e["entity_name"])
                                  for e in data["entity"]))
    values = dict(entities.get(entity, {}))
    if data["remove"]:
        values.pop(data["key"], None)
    else:
        values[data["key"]] = float(data["value"])
    if values:
        entities[entity] = values
    else:
        entities.pop(entity, None)
