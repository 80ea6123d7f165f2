"""SASL users: SCRAM credentials (salted, as Kafka stores them) and PLAIN verifiers.

Theory of operation: Kafka keeps a SCRAM credential per user and mechanism as salt,
iterations, StoredKey and ServerKey (RFC 5802), never the password;
AlterUserScramCredentials hands it the salted password, from which the keys follow. The
store here does the same. A user configured with a password (the CLI's --sasl-users, the
control API's add-user) gets a credential for both SCRAM mechanisms and a PLAIN verifier, a
PBKDF2 hash of the password with its own salt (Kafka's PLAIN users live in its JAAS file;
mockbroker keeps no password in memory either). AlterUserScramCredentials changes SCRAM
credentials only.

With a data directory, `on_change` (set by the cluster) saves the store after every change.

`reset()` (the control API's reset) brings back the users the cluster started with, so a
test that adds or removes users leaves the next one the configured set.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass

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


class CredentialStore:
    def __init__(self) -> None:
        self.scram: dict[str, dict[str, ScramCredential]] = {}  # user -> mechanism -> cred
        self.plain: dict[str, ScramCredential] = {}  # user -> verifier of the password
        self._baseline: tuple[dict[str, dict[str, ScramCredential]],
                              dict[str, ScramCredential]] = ({}, {})
        self.on_change: Callable[[CredentialStore], None] | None = None

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    def add_user(self, name: str, password: str,
                 iterations: int = DEFAULT_ITERATIONS) -> None:
        """A user for PLAIN and both SCRAM mechanisms (replacing any credentials it had)."""
        if not name:
            raise ValueError("a user name must not be empty")
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ValueError(f"iterations must be {MIN_ITERATIONS}-{MAX_ITERATIONS}")
        self.scram[name] = {mechanism: ScramCredential.from_password(hash_name, password,
                                                                     iterations)
                            for mechanism, (hash_name, _) in SCRAM_MECHANISMS.items()}
        self.plain[name] = ScramCredential.from_password("sha256", password, iterations)
        self._changed()

    def delete_user(self, name: str) -> bool:
        """Remove every credential of `name`; False if it had none."""
        found = name in self.scram or name in self.plain
        self.scram.pop(name, None)
        self.plain.pop(name, None)
        if found:
            self._changed()
        return found

    def verify_plain(self, name: str, password: str) -> bool:
        verifier = self.plain.get(name)
        return verifier is not None and verifier.matches_password(password)

    def scram_credential(self, name: str, mechanism: str) -> ScramCredential | None:
        return self.scram.get(name, {}).get(mechanism)

    def upsert_scram(self, name: str, mechanism: str, iterations: int, salt: bytes,
                     salted: bytes) -> None:
        hash_name = SCRAM_MECHANISMS[mechanism][0]
        self.scram.setdefault(name, {})[mechanism] = ScramCredential.from_salted_password(
            hash_name, salt, salted, iterations)
        self._changed()

    def delete_scram(self, name: str, mechanism: str) -> bool:
        by_mechanism = self.scram.get(name)
        if by_mechanism is None or mechanism not in by_mechanism:
            return False
        del by_mechanism[mechanism]
        if not by_mechanism:
            del self.scram[name]
        self._changed()
        return True

    def users(self) -> list[str]:
        return sorted(set(self.scram) | set(self.plain))

    def describe(self) -> dict[str, dict[str, object]]:
        """JSON-ready: per user, PLAIN or not and its SCRAM mechanisms with iterations."""
        return {name: {"plain": name in self.plain,
                       "scram": {m: c.iterations
                                 for m, c in sorted(self.scram.get(name, {}).items())}}
                for name in self.users()}

    def mark_baseline(self) -> None:
        """What reset() brings back: the credentials as they are now (start-up's)."""
        self._baseline = ({n: dict(c) for n, c in self.scram.items()}, dict(self.plain))

    def reset(self) -> None:
        scram, plain = self._baseline
        self.scram = {n: dict(c) for n, c in scram.items()}
        self.plain = dict(plain)
        self._changed()
