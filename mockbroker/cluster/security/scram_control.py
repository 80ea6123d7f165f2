"""The controller's side of SASL users: Kafka's ScramControlManager, plus mockbroker's
users with a password (PLAIN verifier and both SCRAM credentials).

Theory of operation: AlterUserScramCredentials, the control API's add-user / delete-user
and the users given at start-up decide here, against the controller's image (the
credentials at the log end), which UserScramCredentialRecords and
RemoveUserScramCredentialRecords to write (credentials.py has their shape and the image
they build). One request or verb is one atomic batch, then the brokers fetch it
(`propagate`): an unpaused broker authenticates by the change at once, a paused one by the
credentials it had. With a data directory the metadata log is what keeps the users, so a
restart replays them with the rest of the metadata.

Adding a user whose credentials already match the password and iterations writes nothing:
a cluster restarted on its data directory with the same --sasl-users does not grow its
log. `mark_baseline` / `reset` (the control API's reset) bring back the users the cluster
started with by writing the records that undo every change since.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mockbroker.cluster.kraft.controller import Controller
from mockbroker.cluster.security.credentials import (
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    PLAIN_HASH,
    SCRAM_MECHANISMS,
    ScramCredential,
    ScramImage,
    credential_record,
    removal_record,
)
from mockbroker.cluster.wire_extensions import (
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    USER_SCRAM_CREDENTIAL_RECORD,
)

Records = list[tuple[int, dict[str, object]]]
PLAIN_RECORD_MECHANISM = "SCRAM-SHA-256"  # the type the verifier's records carry (SHA-256)


@dataclass(frozen=True)
class Upsertion:
    """One AlterUserScramCredentials upsertion, already validated."""

    user: str
    mechanism: str
    iterations: int
    salt: bytes
    salted_password: bytes


class UserCredentials:
    def __init__(self, controller: Controller, propagate: Callable[[], None]) -> None:
        self.controller = controller
        self.propagate = propagate
        self._baseline = ScramImage()

    # -- reading: the credentials at the log end -------------------------------------------

    @property
    def image(self) -> ScramImage:
        return self.controller.image.scram

    @property
    def scram(self) -> dict[str, dict[str, ScramCredential]]:
        return self.image.scram

    def users(self) -> list[str]:
        return self.image.users()

    def describe(self) -> dict[str, dict[str, object]]:
        return self.image.describe()

    def verify_plain(self, name: str, password: str) -> bool:
        return self.image.verify_plain(name, password)

    def scram_credential(self, name: str, mechanism: str) -> ScramCredential | None:
        return self.image.scram_credential(name, mechanism)

    # -- writing ---------------------------------------------------------------------------

    def add_user(self, name: str, password: str,
                 iterations: int = DEFAULT_ITERATIONS) -> None:
        """A user for PLAIN and both SCRAM mechanisms (replacing any credentials it had)."""
        if not name:
            raise ValueError("a user name must not be empty")
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ValueError(f"iterations must be {MIN_ITERATIONS}-{MAX_ITERATIONS}")
        if self._has_password(name, password, iterations):
            return
        records: Records = self._removals(name)
        for mechanism, (hash_name, _) in SCRAM_MECHANISMS.items():
            records.append((USER_SCRAM_CREDENTIAL_RECORD, credential_record(
                name, mechanism, ScramCredential.from_password(hash_name, password,
                                                               iterations))))
        records.append((USER_SCRAM_CREDENTIAL_RECORD, credential_record(
            name, PLAIN_RECORD_MECHANISM,
            ScramCredential.from_password(PLAIN_HASH, password, iterations), plain=True)))
        self._write(records)

    def delete_user(self, name: str) -> bool:
        """Remove every credential of `name`; False if it had none."""
        records = self._removals(name)
        self._write(records)
        return bool(records)

    def alter(self, deletions: Sequence[tuple[str, str]],
              upsertions: Sequence[Upsertion]) -> None:
        """AlterUserScramCredentials' accepted changes (user, mechanism), one batch."""
        records: Records = [(REMOVE_USER_SCRAM_CREDENTIAL_RECORD, removal_record(user, mech))
                            for user, mech in deletions]
        for u in upsertions:
            credential = ScramCredential.from_salted_password(
                SCRAM_MECHANISMS[u.mechanism][0], u.salt, u.salted_password, u.iterations)
            records.append((USER_SCRAM_CREDENTIAL_RECORD,
                            credential_record(u.user, u.mechanism, credential)))
        self._write(records)

    def mark_baseline(self) -> None:
        """What reset() brings back: the credentials as they are now (start-up's)."""
        self._baseline = self.image.copy()

    def reset(self) -> None:
        """Write the records that bring the credentials back to the baseline."""
        now, base = self.image, self._baseline
        records: Records = []
        for user in now.users():
            for mechanism, credential in now.scram.get(user, {}).items():
                if base.scram_credential(user, mechanism) != credential:
                    records.append((REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
                                    removal_record(user, mechanism)))
            if user in now.plain and base.plain.get(user) != now.plain[user]:
                records.append((REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
                                removal_record(user, PLAIN_RECORD_MECHANISM, plain=True)))
        for user in base.users():
            for mechanism, credential in base.scram.get(user, {}).items():
                if now.scram_credential(user, mechanism) != credential:
                    records.append((USER_SCRAM_CREDENTIAL_RECORD,
                                    credential_record(user, mechanism, credential)))
            if user in base.plain and now.plain.get(user) != base.plain[user]:
                records.append((USER_SCRAM_CREDENTIAL_RECORD, credential_record(
                    user, PLAIN_RECORD_MECHANISM, base.plain[user], plain=True)))
        self._write(records)

    def _has_password(self, name: str, password: str, iterations: int) -> bool:
        """Whether every credential of `name` is already this password at `iterations`."""
        image = self.image
        held = [*image.scram.get(name, {}).values()]
        if name in image.plain:
            held.append(image.plain[name])
        return (len(held) == len(SCRAM_MECHANISMS) + 1
                and all(c.iterations == iterations and c.matches_password(password)
                        for c in held))

    def _removals(self, name: str) -> Records:
        image = self.image
        records: Records = [(REMOVE_USER_SCRAM_CREDENTIAL_RECORD, removal_record(name, m))
                            for m in sorted(image.scram.get(name, {}))]
        if name in image.plain:
            records.append((REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
                            removal_record(name, PLAIN_RECORD_MECHANISM, plain=True)))
        return records

    def _write(self, records: Records) -> None:
        if records:
            self.controller.write(records)
            self.propagate()
