"""ApiVersions: the table, unsupported versions, and what a client learns before anything."""

from __future__ import annotations

import struct

from kafka_protocol_codec import decode_response

from tests.conformance.harness import Session
from tests.conformance.registry import case, cases

API_VERSIONS = 18
TABLE_REASON = ("mockbroker advertises Kafka 4.0's version table by default; real Kafka 4.4 "
                "advertises newer versions and APIs (the 4.4 tables are issue 26's work)")


@cases("api-versions/table", range(0, 5), api=API_VERSIONS, known=TABLE_REASON)
async def table(s: Session, version: int) -> None:
    body = {"client_software_name": "conformance", "client_software_version": "1"}
    await s.call(API_VERSIONS, version, body if version >= 3 else {})


@case("api-versions/unsupported-version", api=API_VERSIONS)
async def unsupported_version(s: Session) -> None:
    """A version above the broker's: UNSUPPORTED_VERSION (35), answered at v0 with the
    table; a client then retries at a version from it."""
    for version in (100, 32767):
        raw = await s.connection()
        client = b"conformance"
        frame = struct.pack(">hhih", API_VERSIONS, version, 77, len(client)) + client + b"\0"
        await raw.send_raw(struct.pack(">i", len(frame)) + frame)
        answer = decode_response(API_VERSIONS, 0, await raw.read_frame())  # always a v0 body
        s.observe(f"v{version}", {"correlation": answer.correlation_id,
                                  "error": answer.body.error_code,
                                  "api-keys": [(k.api_key, k.min_version)
                                               for k in answer.body.api_keys]})


@case("api-versions/bad-software-name", api=API_VERSIONS)
async def bad_software_name(s: Session) -> None:
    """ApiVersions v3 with a client software name Kafka's validation refuses:
    INVALID_REQUEST (42)."""
    await s.call(API_VERSIONS, 3, {"client_software_name": "bad name!",
                                   "client_software_version": "1.0"})
