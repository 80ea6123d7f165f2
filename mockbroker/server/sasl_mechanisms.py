"""The server side of the SASL mechanisms: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER.

Sans-IO: each mechanism takes the client's tokens one at a time (`step`) and returns the
challenge to send back, until `complete`; a refusal raises AuthenticationFailed with the
message Kafka sends the client. Kafka sends a SaslAuthenticationException's own message
but replaces a plain SaslException's by a generic one that reveals nothing ("Authentication
failed during authentication due to invalid credentials with SASL mechanism X"); `generic`
marks the latter.

- PLAIN (RFC 4616): `authzid NUL user NUL password`, checked against the verifier of the
  receiving broker's image.
- SCRAM (RFC 5802, RFC 7677): client-first `n,[a=authzid],n=user,r=cnonce`, server-first
  with the nonce extended, the salt and iterations, client-final with the proof, which is
  checked against StoredKey; the server-final carries the server signature. User names
  escape `,` and `=` as `=2C` and `=3D`. As in Kafka, the final nonce must end with the
  server's nonce (not equal it), which librdkafka 1.x relies on.
- OAUTHBEARER (RFC 7628, KIP-255): `n,[a=authzid],^Aauth=Bearer TOKEN^A^A` with an
  unsecured JWT (alg none, empty signature), validated as Kafka's default unsecured
  validator does: the `sub` claim names the principal, `exp` is required and must lie in
  the future, `iat` (optional) must not; `scope` is optional. A refused token gets the
  JSON error status as a challenge, and the client's `^A` answer ends the exchange with
  that status as the failure message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from typing import Any

from mockbroker.cluster.security.credentials import SCRAM_MECHANISMS, ScramCredential, ScramImage

PLAIN, OAUTHBEARER = "PLAIN", "OAUTHBEARER"


class AuthenticationFailed(Exception):
    def __init__(self, message: str, *, generic: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.generic = generic


class Mechanism:
    name = ""

    def __init__(self) -> None:
        self.complete = False
        self.user: str | None = None  # the authenticated name (Kafka's principal name)
        self.expires_ms: int | None = None  # when the credential expires (OAUTHBEARER)

    def step(self, token: bytes, now_ms: int) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError


def create(name: str, store: ScramImage) -> Mechanism:
    if name == PLAIN:
        return PlainMechanism(store)
    if name in SCRAM_MECHANISMS:
        return ScramMechanism(name, store)
    if name == OAUTHBEARER:
        return OAuthBearerMechanism()
    raise ValueError(f"unknown SASL mechanism {name!r}")


class PlainMechanism(Mechanism):
    name = PLAIN

    def __init__(self, store: ScramImage) -> None:
        super().__init__()
        self.store = store

    def step(self, token: bytes, now_ms: int) -> bytes:
        parts = token.decode("utf-8", "replace").split("\0")
        if len(parts) != 3:
            raise AuthenticationFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}", generic=True)
        authzid, user, password = parts
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified",
                                       generic=True)
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified",
                                       generic=True)
        if not self.store.verify_plain(user, password):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: Client requested an "
                                       "authorization id that is different from username")
        self.user, self.complete = user, True
        return b""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise AuthenticationFailed("invalid base64 in a SCRAM message", generic=True) from None


def unescape_saslname(name: str) -> str:
    """RFC 5802 saslname: `=2C` is `,`, `=3D` is `=`; any other `=` is an error."""
    out, i = [], 0
    while i < len(name):
        if name[i] == "=":
            code = name[i + 1:i + 3]
            if code not in ("2C", "3D"):
                raise AuthenticationFailed(f"Invalid SCRAM user name {name!r}", generic=True)
            out.append("," if code == "2C" else "=")
            i += 3
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def escape_saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _attributes(text: str, what: str) -> list[tuple[str, str]]:
    """`k=v,k=v,...`; keys of extensions (Kafka's `tokenauth=true`) may be longer than the
    RFC's one letter."""
    out = []
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise AuthenticationFailed(f"Invalid SCRAM {what} message", generic=True)
        out.append((key, value))
    return out


class ScramMechanism(Mechanism):
    def __init__(self, name: str, store: ScramImage) -> None:
        super().__init__()
        self.name = name
        self.hash_name = SCRAM_MECHANISMS[name][0]
        self.store = store
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._pending_user = ""

    def step(self, token: bytes, now_ms: int) -> bytes:
        text = token.decode("utf-8", "replace")
        if self._credential is None:
            return self._client_first(text)
        if not self.complete and self.user is None:
            return self._client_final(text)
        raise AuthenticationFailed("Unexpected SCRAM message after the exchange", generic=True)

    def _client_first(self, text: str) -> bytes:
        flag, sep1, rest = text.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if flag not in ("n", "y") or not (sep1 and sep2):
            raise AuthenticationFailed("Invalid SCRAM client first message", generic=True)
        if authzid and not authzid.startswith("a="):
            raise AuthenticationFailed("Invalid SCRAM client first message", generic=True)
        attrs = _attributes(bare, "client first")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise AuthenticationFailed("Invalid SCRAM client first message", generic=True)
        user = unescape_saslname(attrs[0][1])
        credential = self.store.scram_credential(user, self.name)
        if credential is None:
            raise AuthenticationFailed("Authentication failed: Invalid user credentials",
                                       generic=True)
        if authzid and unescape_saslname(authzid[2:]) != user:
            raise AuthenticationFailed("Authentication failed: Client requested an "
                                       "authorization id that is different from username")
        self._credential, self._pending_user = credential, user
        self._gs2_header = f"{flag},{authzid},"
        self._client_first_bare = bare
        self._nonce = attrs[1][1] + secrets.token_urlsafe(24)
        self._server_first = (f"r={self._nonce},s={_b64(credential.salt)},"
                              f"i={credential.iterations}")
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        credential = self._credential
        assert credential is not None
        without_proof, sep, proof_text = text.rpartition(",p=")
        attrs = _attributes(without_proof, "client final") if sep else []
        if len(attrs) < 2 or attrs[0][0] != "c" or attrs[1][0] != "r":
            raise AuthenticationFailed("Invalid SCRAM client final message", generic=True)
        if _unb64(attrs[0][1]) != self._gs2_header.encode():
            raise AuthenticationFailed("Invalid SCRAM channel binding", generic=True)
        # Kafka checks only that the nonce ends with the server's (librdkafka 1.x sends its
        # own nonce twice), so this does too
        if not attrs[1][1].endswith(self._nonce):
            raise AuthenticationFailed("Invalid SCRAM nonce", generic=True)
        auth_message = ",".join((self._client_first_bare, self._server_first,
                                 without_proof)).encode()
        client_signature = hmac.digest(credential.stored_key, auth_message, self.hash_name)
        proof = _unb64(proof_text)
        if len(proof) != len(client_signature):
            raise AuthenticationFailed("Invalid client credentials", generic=True)
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.hash_name, client_key).digest(),
                                   credential.stored_key):
            raise AuthenticationFailed("Invalid client credentials", generic=True)
        server_signature = hmac.digest(credential.server_key, auth_message, self.hash_name)
        self.user, self.complete = self._pending_user, True
        return f"v={_b64(server_signature)}".encode()


def _b64url_json(part: str) -> Any:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        return json.loads(raw)
    except (binascii.Error, ValueError):
        return None


class OAuthBearerMechanism(Mechanism):
    name = OAUTHBEARER
    PRINCIPAL_CLAIM = "sub"

    def __init__(self) -> None:
        super().__init__()
        self._error: str | None = None

    def step(self, token: bytes, now_ms: int) -> bytes:
        if self._error is not None:
            if token == b"\x01":  # the client acknowledges our error status
                raise AuthenticationFailed(self._error)
            raise AuthenticationFailed("Invalid OAUTHBEARER message after an error",
                                       generic=True)
        text = token.decode("utf-8", "replace")
        gs2, sep, kvpairs = text.partition("\x01")
        header = gs2.split(",")
        if not sep or len(header) < 2 or header[0] not in ("n", "y"):
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message", generic=True)
        authzid = header[1][2:] if header[1].startswith("a=") else ""
        values = dict(kv.partition("=")[::2] for kv in kvpairs.split("\x01") if kv)
        scheme, _, jwt = values.get("auth", "").partition(" ")
        if scheme.lower() != "bearer" or not jwt:
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message", generic=True)
        problem, principal, expires_ms = self._validate(jwt.strip(), now_ms)
        if problem is not None:
            self._error = json.dumps({"status": "invalid_token"}, separators=(",", ":"))
            return self._error.encode()
        assert principal is not None
        if authzid and authzid != principal:
            raise AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id ({authzid}) "
                f"that is different from the token's principal name ({principal})")
        self.user, self.expires_ms, self.complete = principal, expires_ms, True
        return b""

    def _validate(self, jwt: str, now_ms: int) -> tuple[str | None, str | None, int | None]:
        """(problem, principal, expiry ms) of an unsecured JWT, as Kafka's
        OAuthBearerUnsecuredJws and its validation utilities judge it."""
        parts = jwt.split(".")
        if len(parts) != 3 or parts[2]:
            return "an unsecured JWS has three parts and an empty signature", None, None
        header, claims = _b64url_json(parts[0]), _b64url_json(parts[1])
        if not isinstance(header, dict) or not isinstance(claims, dict):
            return "the JOSE header or the claims are not JSON objects", None, None
        if header.get("alg") != "none":
            return "the JOSE header's alg must be none", None, None
        principal = claims.get(self.PRINCIPAL_CLAIM)
        if not isinstance(principal, str) or not principal.strip():
            return f"no {self.PRINCIPAL_CLAIM} claim", None, None
        expiry = claims.get("exp")
        if isinstance(expiry, bool) or not isinstance(expiry, (int, float)):
            return "no exp claim", None, None
        expires_ms = int(expiry * 1000)
        if now_ms >= expires_ms:
            return "the token has expired", None, None
        issued = claims.get("iat")
        if issued is not None:
            if isinstance(issued, bool) or not isinstance(issued, (int, float)):
                return "the iat claim is not a number", None, None
            if int(issued * 1000) > now_ms:
                return "the token was issued in the future", None, None
        scope = claims.get("scope")
        if scope is not None and not isinstance(scope, (str, list)):
            return "the scope claim is neither a string nor a list", None, None
        return None, principal, expires_ms
