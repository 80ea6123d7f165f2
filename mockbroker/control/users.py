"""The control API's SASL user verbs: add-user, delete-user, users.

Theory of operation: users live in the metadata log (mockbroker.cluster.security.scram_control
writes their UserScramCredentialRecords through the controller, as AlterUserScramCredentials
does), so a user added here can authenticate on the next connection to any broker whose
metadata is not paused and shows up in DescribeUserScramCredentials at once; `users`
shows the credentials at the log end. Passwords are
salted on arrival (PBKDF2, 4096 iterations by default, as Kafka's minimum) and never kept.
`reset` brings back the users the cluster started with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.cluster.security.credentials import (
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
)
from mockbroker.control.errors import ControlError

if TYPE_CHECKING:
    from mockbroker.cluster import Cluster


class UserVerbs:
    cluster: Cluster

    async def add_user(self, name: str, password: str,
                       iterations: int = DEFAULT_ITERATIONS) -> dict[str, Any]:
        """Add (or replace) a SASL user for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512."""
        for field, value in (("name", name), ("password", password)):
            if not isinstance(value, str) or not value:
                raise ControlError(400, f"{field} must be a non-empty string, got {value!r}")
        if isinstance(iterations, bool) or not isinstance(iterations, int) \
                or not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ControlError(400, f"iterations must be an integer {MIN_ITERATIONS}-"
                                    f"{MAX_ITERATIONS}, got {iterations!r}")
        replaced = name in self.cluster.credentials.users()
        self.cluster.credentials.add_user(name, password, iterations)
        return {"user": name, "replaced": replaced,
                **self.cluster.credentials.describe()[name]}

    async def delete_user(self, name: str) -> dict[str, Any]:
        """Remove every credential of a SASL user (its open connections stay)."""
        if not isinstance(name, str) or not self.cluster.credentials.delete_user(name):
            raise ControlError(404, f"no SASL user {name!r}")
        return {"deleted": name}

    async def users(self) -> dict[str, Any]:
        """The SASL users: PLAIN or not, and SCRAM mechanisms with their iterations."""
        return {"users": self.cluster.credentials.describe()}
