"""The controller's side of ACLs: Kafka's AclControlManager.

Theory of operation: CreateAcls, DeleteAcls and the control API's ACL verbs decide here,
against the controller's image (the bindings at the log end), which records to write: a new
binding becomes an AccessControlEntryRecord with a random Uuid id (a binding already there,
or twice in one request, writes nothing and still succeeds, as Kafka's does); a deletion
writes one RemoveAccessControlEntryRecord per matching binding id, each filter reporting
every binding it matched before the request (overlapping filters both report a binding,
which is removed once). One request's records are one atomic batch, then the brokers fetch
them (`propagate`): an unpaused broker authorizes by the change at once, a paused one by
the bindings it had (authorizer.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from mockbroker.cluster.kraft.controller import Controller
from mockbroker.cluster.security.authorizer import (
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    AclBinding,
    AclFilter,
    entry_record,
)


class AclControl:
    def __init__(self, controller: Controller, propagate: Callable[[], None]) -> None:
        self.controller = controller
        self.propagate = propagate

    def bindings(self) -> list[AclBinding]:
        """Every binding at the log end."""
        return self.controller.image.acls.bindings()

    def create(self, bindings: Sequence[AclBinding]) -> list[bool]:
        """Write the new bindings; per binding, whether it was new."""
        existing = self.controller.image.acls
        records: list[tuple[int, dict[str, object]]] = []
        seen: set[AclBinding] = set()
        added = []
        for binding in bindings:
            new = existing.id_of(binding) is None and binding not in seen
            if new:
                seen.add(binding)
                records.append((ACCESS_CONTROL_ENTRY_RECORD,
                                entry_record(self._new_id(), binding)))
            added.append(new)
        self._write(records)
        return added

    def _new_id(self) -> uuid.UUID:
        """A random Uuid no binding has (Kafka's newAclId)."""
        taken = self.controller.image.acls.by_id
        for _ in range(100):
            acl_id = uuid.uuid4()
            if acl_id not in taken:
                return acl_id
        raise RuntimeError("no free ACL id after 100 random Uuids")

    def delete(self, filters: Sequence[AclFilter]) -> list[list[AclBinding]]:
        """Remove what the filters match; per filter, the bindings it matched."""
        existing = self.controller.image.acls
        gone: dict[uuid.UUID, None] = {}
        matched = []
        for acl_filter in filters:
            pairs = existing.matching(acl_filter)
            gone.update(dict.fromkeys(acl_id for acl_id, _ in pairs))
            matched.append([binding for _, binding in pairs])
        self._write([(REMOVE_ACCESS_CONTROL_ENTRY_RECORD, {"id": acl_id}) for acl_id in gone])
        return matched

    def reset(self) -> None:
        """Remove every binding (the control API's reset)."""
        self.delete([AclFilter()])

    def _write(self, records: list[tuple[int, dict[str, object]]]) -> None:
        if records:
            self.controller.write(records)
            self.propagate()

