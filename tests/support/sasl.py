"""The client side of SASL for wire tests: SCRAM (RFC 5802) and unsecured JWTs (KIP-255).

Real clients hide the exchange; these helpers let a test send each message itself and check
the broker's answers, including the server signature of SCRAM's final message.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from mockbroker.server.sasl_mechanisms import escape_saslname

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class ScramClient:
    def __init__(self, mechanism: str, user: str, password: str,
                 nonce: str = "fyko+d2lbbFgONRv9qkxdawL") -> None:
        self.hash_name = HASHES[mechanism]
        self.user, self.password, self.nonce = user, password, nonce
        self.client_first_bare = f"n={escape_saslname(user)},r={nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self.client_first_bare}".encode()

    def final(self, server_first: bytes, prefix: str = "") -> bytes:
        """The client-final message; `prefix` goes before the echoed nonce (librdkafka 1.x
        sends its own nonce again there)."""
        fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
        assert fields["r"].startswith(self.nonce) and len(fields["r"]) > len(self.nonce)
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        salted = hashlib.pbkdf2_hmac(self.hash_name, self.password.encode(), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", self.hash_name)
        stored_key = hashlib.new(self.hash_name, client_key).digest()
        without_proof = f"c=biws,r={prefix}{fields['r']}"
        auth_message = f"{self.client_first_bare},{server_first.decode()},{without_proof}"
        signature = hmac.digest(stored_key, auth_message.encode(), self.hash_name)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", self.hash_name)
        self.server_signature = hmac.digest(server_key, auth_message.encode(), self.hash_name)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def check_server_final(self, server_final: bytes) -> bool:
        return server_final == b"v=" + base64.b64encode(self.server_signature)


def _b64url(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def unsecured_jwt(claims: dict[str, Any], alg: str = "none") -> str:
    return f"{_b64url({'alg': alg})}.{_b64url(claims)}."


def oauthbearer_initial(token: str, authzid: str = "") -> bytes:
    header = f"n,a={authzid}," if authzid else "n,,"
    return f"{header}\x01auth=Bearer {token}\x01\x01".encode()
