"""SASL on a connection: Kafka's server-side authentication state machine (KIP-43, KIP-152,
KIP-368), which the connection consults for every frame of a SASL listener.

Theory of operation: a connection to a SASL_PLAINTEXT or SASL_SSL listener owns one
`SaslSession`. Before each frame is handled the connection asks `route(api_key)`:

- `NORMAL`: handle it as usual (ApiVersions before the handshake, anything once
  authenticated);
- `SESSION`: decode it and give it to `handle` (SaslHandshake, SaslAuthenticate, and a
  SaslHandshake that starts a re-authentication);
- `CLOSE`: close the connection without a response, the reason in `close_reason`;
- `REFUSE`: answer the request with its ILLEGAL_SASL_STATE error response
  (handlers.sasl.illegal_sasl_state_response, message in `refusal_message`), then close.

The states follow Kafka's SaslServerAuthenticator:

  HANDSHAKE_OR_VERSIONS --ApiVersions--> HANDSHAKE --SaslHandshake--> AUTHENTICATE
  AUTHENTICATE --SaslAuthenticate (v1 handshake) or a raw token (v0)--> COMPLETE

Before the handshake only ApiVersions (once) and SaslHandshake are accepted; any other
request, SaslAuthenticate included, closes the connection without an answer (Kafka's
SaslServerAuthenticator throws InvalidRequestException, "Unexpected Kafka request of type
X during SASL handshake.", and sends nothing; a second ApiVersions is an
IllegalStateException, likewise unanswered). During AUTHENTICATE after a v1 handshake only
SaslAuthenticate is; anything else, a second SaslHandshake included, is answered with that
API's error response carrying ILLEGAL_SASL_STATE ("Unexpected Kafka request of type X
during SASL authentication.") and the connection closes, as Kafka does. An unknown mechanism is answered UNSUPPORTED_SASL_MECHANISM
with the enabled list, then the connection closes; a failed authentication is answered
SASL_AUTHENTICATION_FAILED with Kafka's message, then closes. After a v0 handshake (old
clients, kafka-python's legacy path) the tokens come as bare size-prefixed frames, not as
requests: `expects_raw_token` says so, and `handle_raw` answers them in kind (a failure
just closes: v0 has no way to say why).

Re-authentication (KIP-368): a successful SaslAuthenticate v1+ carries
session_lifetime_ms, from connections.max.reauth.ms (0: none) and, for OAUTHBEARER, the
token's expiry, the smaller one. Once that time passes on the cluster's clock, the next
request that is not a SaslHandshake closes the connection; a SaslHandshake with the same
mechanism from a client that used SaslAuthenticate v1+ starts a re-authentication on the
same connection, which must end with the same principal.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.security.credentials import ScramImage

if TYPE_CHECKING:  # the mechanisms (json, secrets) load with the first handshake
    from mockbroker.server.sasl_mechanisms import AuthenticationFailed, Mechanism

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
RECENT_AUTHENTICATIONS = 100


class Route(enum.Enum):
    NORMAL = "normal"
    SESSION = "session"
    CLOSE = "close"
    REFUSE = "refuse"


class State(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "handshake_or_versions"
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


@dataclass
class SaslSettings:
    """What every SASL listener of a cluster shares: the enabled mechanisms, the session
    lifetime limit, and a record of recent authentications for `state`."""

    mechanisms: tuple[str, ...] = MECHANISMS
    connections_max_reauth_ms: int = 0
    authentications: deque[dict[str, Any]] = field(
        default_factory=lambda: deque(maxlen=RECENT_AUTHENTICATIONS))

    def __post_init__(self) -> None:
        unknown = [m for m in self.mechanisms if m not in MECHANISMS]
        if unknown or not self.mechanisms:
            raise ValueError(f"SASL mechanisms must be some of {', '.join(MECHANISMS)}, got "
                             f"{', '.join(self.mechanisms) or 'none'}")
        if self.connections_max_reauth_ms < 0:
            raise ValueError("connections.max.reauth.ms must not be negative")


@dataclass
class SaslReply:
    """What the SASL state machine answers a frame with: a response body (or none) and
    whether to close the connection."""

    body: dict[str, Any] | None  # the response (None: none)
    close: bool = False  # close the connection after it
    reason: str = ""


class SaslSession:
    def __init__(self, settings: SaslSettings, credentials: Callable[[], ScramImage],
                 listener: str, broker: int, peer: str, api_versions_max: int = 4) -> None:
        self.settings = settings
        self.api_versions_max = api_versions_max  # a higher one is answered, state kept
        # the credentials of the receiving broker's image as of now (it may lag the log)
        self.credentials = credentials
        self.listener = listener
        self.broker = broker
        self.peer = peer
        self.state = State.HANDSHAKE_OR_VERSIONS
        self.mechanism: Mechanism | None = None
        self.mechanism_name: str | None = None
        self.user: str | None = None  # the authenticated name
        self.expires_ms: int | None = None  # session end (KIP-368), None: never
        self.raw_tokens = False  # the handshake was v0: bare tokens, not SaslAuthenticate
        self.supports_reauth = False  # the client used SaslAuthenticate v1+
        self.reauthenticating = False
        self.close_reason = ""
        self.refusal_message = ""  # the ILLEGAL_SASL_STATE message of a REFUSE route

    @property
    def principal(self) -> str:
        return f"User:{self.user}" if self.user is not None else "User:ANONYMOUS"

    @property
    def expects_raw_token(self) -> bool:
        return self.state is State.AUTHENTICATE and self.raw_tokens

    def route(self, api_key: int, api_version: int, now_ms: int) -> Route:
        state = self.state
        if state is State.COMPLETE:
            # KIP-368 re-authentication, only for a session that expires (Kafka's
            # KafkaChannel.maybeBeginServerReauthentication); otherwise the handshake is an
            # ordinary request, answered ILLEGAL_SASL_STATE (handlers/sasl.py)
            if api_key == SASL_HANDSHAKE and self.supports_reauth \
                    and self.expires_ms is not None:
                return Route.SESSION
            if self.expires_ms is not None and now_ms > self.expires_ms:
                self.close_reason = ("the SASL session expired (KIP-368 session lifetime); "
                                     "the client must re-authenticate")
                return Route.CLOSE
            return Route.NORMAL
        if state is State.HANDSHAKE_OR_VERSIONS and api_key == API_VERSIONS:
            if api_version <= self.api_versions_max:  # else: UNSUPPORTED_VERSION, try again
                self.state = State.HANDSHAKE
            return Route.NORMAL
        if state in (State.HANDSHAKE_OR_VERSIONS, State.HANDSHAKE) \
                and api_key == SASL_HANDSHAKE:
            return Route.SESSION
        if state is State.AUTHENTICATE and api_key == SASL_AUTHENTICATE:
            return Route.SESSION
        self.state = State.FAILED
        if state is State.AUTHENTICATE:
            self.refusal_message = (f"Unexpected Kafka request of type {_api_name(api_key)} "
                                    f"during SASL authentication.")
            self.close_reason = f"ILLEGAL_SASL_STATE: {self.refusal_message}"
            return Route.REFUSE
        if state is State.HANDSHAKE and api_key == API_VERSIONS:
            self.close_reason = ("Unexpected ApiVersions request received during SASL "
                                 "authentication state HANDSHAKE_REQUEST")
        else:
            self.close_reason = (f"INVALID_REQUEST: Unexpected Kafka request of type "
                                 f"{_api_name(api_key)} during SASL handshake.")
        return Route.CLOSE

    def handle(self, api_key: int, version: int, body: Any, now_ms: int) -> SaslReply:
        if api_key == SASL_HANDSHAKE:
            return self._handshake(version, body.mechanism)
        return self._authenticate(version, bytes(body.auth_bytes), now_ms)

    def _handshake(self, version: int, mechanism: str) -> SaslReply:
        enabled = list(self.settings.mechanisms)
        if mechanism not in enabled:
            self.state = State.FAILED
            return SaslReply({"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                              "mechanisms": enabled}, close=True,
                             reason=f"UNSUPPORTED_SASL_MECHANISM: {mechanism!r}")
        if self.state is State.COMPLETE:  # KIP-368: the same mechanism again
            self.reauthenticating = True
            if mechanism != self.mechanism_name:
                self.state = State.FAILED
                return SaslReply(
                    {"error_code": ErrorCode.NONE, "mechanisms": enabled}, close=True,
                    reason=f"SASL mechanism {mechanism!r} requested by client is not "
                           f"supported for re-authentication of mechanism "
                           f"{self.mechanism_name!r}")
        from mockbroker.server.sasl_mechanisms import create

        self.mechanism_name = mechanism
        self.mechanism = create(mechanism, self.credentials())
        self.raw_tokens = version == 0
        self.state = State.AUTHENTICATE
        return SaslReply({"error_code": ErrorCode.NONE, "mechanisms": enabled})

    def _authenticate(self, version: int, token: bytes, now_ms: int) -> SaslReply:
        from mockbroker.server.sasl_mechanisms import AuthenticationFailed

        self.supports_reauth = self.supports_reauth or version > 0
        try:
            challenge = self._step(token, now_ms)
        except AuthenticationFailed as failure:
            return SaslReply({"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
                              "error_message": self._failure_message(failure),
                              "auth_bytes": b""}, close=True,
                             reason=f"SASL_AUTHENTICATION_FAILED: {failure.message}")
        lifetime = self._complete(now_ms) if self.state is State.COMPLETE else 0
        return SaslReply({"error_code": ErrorCode.NONE, "error_message": "",  # Errors.NONE's
                          "auth_bytes": challenge, "session_lifetime_ms": lifetime})

    def handle_raw(self, token: bytes, now_ms: int) -> bytes | None:
        """A bare token after a v0 handshake: the challenge to send back bare (None to close,
        the reason in close_reason)."""
        from mockbroker.server.sasl_mechanisms import AuthenticationFailed

        try:
            challenge = self._step(token, now_ms)
        except AuthenticationFailed as failure:
            self.close_reason = f"SASL_AUTHENTICATION_FAILED: {failure.message}"
            return None
        if self.state is State.COMPLETE:
            self._complete(now_ms)
        return challenge

    def _step(self, token: bytes, now_ms: int) -> bytes:
        from mockbroker.server.sasl_mechanisms import AuthenticationFailed

        mechanism = self.mechanism
        assert mechanism is not None
        try:
            challenge = mechanism.step(token, now_ms)
        except AuthenticationFailed:
            self.state = State.FAILED
            raise
        if mechanism.complete:
            if self.reauthenticating and mechanism.user != self.user:
                self.state = State.FAILED
                raise AuthenticationFailed(
                    f"Cannot change principals during re-authentication from "
                    f"{self.principal}: User:{mechanism.user}")
            self.state = State.COMPLETE
        return challenge

    def _failure_message(self, failure: AuthenticationFailed) -> str:
        if not failure.generic:
            return failure.message
        what = "re-authentication" if self.reauthenticating else "authentication"
        return (f"Authentication failed during {what} due to invalid credentials with SASL "
                f"mechanism {self.mechanism_name}")

    def _complete(self, now_ms: int) -> int:
        """Note the authenticated user and return the session lifetime (KIP-368)."""
        mechanism = self.mechanism
        assert mechanism is not None
        self.user = mechanism.user
        max_reauth = self.settings.connections_max_reauth_ms
        credential_ms = None if mechanism.expires_ms is None \
            else max(0, mechanism.expires_ms - now_ms)
        if credential_ms is None and max_reauth <= 0:
            lifetime, self.expires_ms = 0, None
        else:
            lifetime = min(v for v in (credential_ms, max_reauth if max_reauth > 0 else None)
                           if v is not None)
            self.expires_ms = now_ms + lifetime
        self.settings.authentications.append({
            "at_ms": now_ms, "broker": self.broker, "listener": self.listener,
            "peer": self.peer, "mechanism": self.mechanism_name, "principal": self.principal,
            "reauthentication": self.reauthenticating, "session_lifetime_ms": lifetime})
        self.reauthenticating = False
        return lifetime


def _api_name(key: int) -> str:
    """Kafka's ApiKeys constant (METADATA, SASL_HANDSHAKE), as its SASL errors name it."""
    from mockbroker.handlers.sasl import kafka_api_constant

    try:
        return kafka_api_constant(key)
    except Exception:
        return f"api_key={key}"
