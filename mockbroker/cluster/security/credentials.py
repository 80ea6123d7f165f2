"""SASL users: SCRAM credentials (salted, as Kafka stores them) and PLAIN verifiers, as
records of the metadata log and the image they build.

Theory of operation: Kafka keeps a SCRAM credential per user and mechanism as salt,
iterations, StoredKey and ServerKey (RFC 5802), never the password;
AlterUserScramCredentials hands it the salted password, from which the keys follow. In KRaft
the controller writes each as a UserScramCredentialRecord (RemoveUserScramCredentialRecord
drops one) and every broker authenticates by the credentials of its own metadata image
(`ScramImage`, Kafka's ScramImage), so a broker with paused metadata still knows the old
ones. A user configured with a password (the CLI's --sasl-users, the control API's
add-user) gets a credential for both SCRAM mechanisms and a PLAIN verifier, a PBKDF2 hash
of the password with its own salt (Kafka's PLAIN users live in its JAAS file; mockbroker
keeps no password anywhere). The verifier is a UserScramCredentialRecord too, marked by
mockbroker's tagged field PlainVerifier (wire_extensions.py), so the metadata log is the
one place every credential is kept, with or without a data directory.
AlterUserScramCredentials changes SCRAM credentials only. The controller's side (who writes
which records) is scram_control.py.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Any

from mockbroker.cluster.wire_extensions import (
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    USER_SCRAM_CREDENTIAL_RECORD,
)

# mechanism name -> (hashlib name, the int8 Kafka's ScramMechanism uses on the wire)
SCRAM_MECHANISMS: dict[str, tuple[str, int]] = {
    "SCRAM-SHA-256": ("sha256", 1),
    "SCRAM-SHA-512": ("sha512", 2),
}
MECHANISM_BY_TYPE = {kind: name for name, (_, kind) in SCRAM_MECHANISMS.items()}
MIN_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations for both SHA-256 and SHA-512
MAX_ITERATIONS = 16384  # AlterUserScramCredentials refuses more
DEFAULT_ITERATIONS = MIN_ITERATIONS
SALT_BYTES = 32


@dataclass(frozen=True)
class ScramCredential:
    """A SCRAM credential as Kafka stores it (RFC 5802): salt, iterations and the derived
    keys, never the password."""

    hash_name: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_salted_password(cls, hash_name: str, salt: bytes, salted_password: bytes,
                             iterations: int) -> ScramCredential:
        client_key = hmac.digest(salted_password, b"Client Key", hash_name)
        server_key = hmac.digest(salted_password, b"Server Key", hash_name)
        return cls(hash_name, salt, iterations, hashlib.new(hash_name, client_key).digest(),
                   server_key)

    @classmethod
    def from_password(cls, hash_name: str, password: str, iterations: int = DEFAULT_ITERATIONS,
                      salt: bytes | None = None) -> ScramCredential:
        salt = os.urandom(SALT_BYTES) if salt is None else salt
        return cls.from_salted_password(hash_name, salt, salted_password(
            hash_name, password, salt, iterations), iterations)

    def matches_password(self, password: str) -> bool:
        """Whether `password` yields this credential (PLAIN's check against the stored hash)."""
        other = ScramCredential.from_salted_password(
            self.hash_name, self.salt,
            salted_password(self.hash_name, password, self.salt, self.iterations),
            self.iterations)
        return hmac.compare_digest(other.stored_key, self.stored_key)


def salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(Normalize(password), salt, i): PBKDF2 with HMAC of the hash."""
    return hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)


# KRaft metadata record types of the SCRAM family (Kafka's metadata record schemas)
SCRAM_RECORD_TYPES = frozenset({USER_SCRAM_CREDENTIAL_RECORD,
                                REMOVE_USER_SCRAM_CREDENTIAL_RECORD})
PLAIN_HASH = "sha256"  # the PLAIN verifier's hash (its records name SCRAM-SHA-256's type)


def credential_record(user: str, mechanism: str, credential: ScramCredential,
                      plain: bool = False) -> dict[str, Any]:
    """The UserScramCredentialRecord of one credential (`plain`: the PLAIN verifier)."""
    return {"name": user, "mechanism": SCRAM_MECHANISMS[mechanism][1],
            "salt": credential.salt, "stored_key": credential.stored_key,
            "server_key": credential.server_key, "iterations": credential.iterations,
            "plain_verifier": plain}


def removal_record(user: str, mechanism: str, plain: bool = False) -> dict[str, Any]:
    """The RemoveUserScramCredentialRecord of one credential."""
    return {"name": user, "mechanism": SCRAM_MECHANISMS[mechanism][1], "plain_verifier": plain}


class ScramImage:
    """The credentials of one metadata image. Mutated only by `apply` (log order); `copy`
    for a new image."""

    def __init__(self) -> None:
        self.scram: dict[str, dict[str, ScramCredential]] = {}  # user -> mechanism -> cred
        self.plain: dict[str, ScramCredential] = {}  # user -> verifier of the password

    def copy(self) -> ScramImage:
        other = ScramImage()
        other.scram = {user: dict(by_mechanism) for user, by_mechanism in self.scram.items()}
        other.plain = dict(self.plain)
        return other

    def apply(self, record_type: int, data: dict[str, Any]) -> None:
        """Apply one record of the SCRAM family."""
        user = data["name"]
        mechanism = MECHANISM_BY_TYPE.get(data["mechanism"])
        if mechanism is None:
            return  # a mechanism this broker does not know (Kafka's UNKNOWN): ignored
        plain = bool(data.get("plain_verifier"))
        if record_type == USER_SCRAM_CREDENTIAL_RECORD:
            credential = ScramCredential(
                PLAIN_HASH if plain else SCRAM_MECHANISMS[mechanism][0], bytes(data["salt"]),
                data["iterations"], bytes(data["stored_key"]), bytes(data["server_key"]))
            if plain:
                self.plain[user] = credential
            else:
                self.scram.setdefault(user, {})[mechanism] = credential
        elif record_type == REMOVE_USER_SCRAM_CREDENTIAL_RECORD:
            if plain:
                self.plain.pop(user, None)
                return
            by_mechanism = self.scram.get(user)
            if by_mechanism is not None:
                by_mechanism.pop(mechanism, None)
                if not by_mechanism:
                    del self.scram[user]

    def verify_plain(self, name: str, password: str) -> bool:
        verifier = self.plain.get(name)
        return verifier is not None and verifier.matches_password(password)

    def scram_credential(self, name: str, mechanism: str) -> ScramCredential | None:
        return self.scram.get(name, {}).get(mechanism)

    def users(self) -> list[str]:
        return sorted(set(self.scram) | set(self.plain))

    def describe(self) -> dict[str, dict[str, object]]:
        """JSON-ready: per user, PLAIN or not and its SCRAM mechanisms with iterations."""
        return {name: {"plain": name in self.plain,
                       "scram": {m: c.iterations
                                 for m, c in sorted(self.scram.get(name, {}).items())}}
                for name in self.users()}
