"""ApiVersions (key 18): what this broker handles, straight from the handler registry.

An ApiVersions request above the advertised maximum cannot be decoded (a newer client sends
it before it knows what the broker speaks), so the connection does not close as for other
unadvertised versions: it asks `unsupported_version_answer` and sends what that returns, the
v0 layout with UNSUPPORTED_VERSION and one entry, ApiVersions' own range, which every client
can read and then retry at a version from it (Kafka's ApiVersionsRequest.getErrorResponse,
KIP-511). A v3+ request whose client software name or version Kafka's pattern refuses gets
INVALID_REQUEST with no entries. The ordinary answer leaves out the KIP-714 telemetry APIs
while client telemetry is disabled (cluster/client_telemetry/telemetry_receiver.py), as Kafka does
without a client-telemetry metrics reporter.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.kraft.controller import (
    METADATA_VERSION,
    TRANSACTION_VERSION_FEATURE,
    TRANSACTION_VERSION_LEVEL,
)
from mockbroker.cluster.kraft.features import supported_features
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import advertised_versions, handler
from mockbroker.handlers.telemetry import TELEMETRY_APIS

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.api_versions import ApiVersionsRequest

API_VERSIONS_KEY = 18
FALLBACK_VERSION = 0  # the layout an unsupported ApiVersions request is answered in
END_TXN_KEY, END_TXN_TV2_VERSION = 26, 5
_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_version_entries(caps: dict[int, tuple[int, int]] | None) -> list[dict[str, int]]:
    return [{"api_key": key, "min_version": low, "max_version": high}
            for key, low, high in advertised_versions(caps or None)]


def unsupported_version_answer(advertised: dict[int, tuple[int, int]], api_key: int,
                               api_version: int) -> tuple[int, dict[str, Any]] | None:
    """For an ApiVersions request above the advertised maximum, the (version, body) to
    answer it with; None for any other request (the connection handles it normally)."""
    versions = advertised.get(API_VERSIONS_KEY)
    if api_key != API_VERSIONS_KEY or versions is None or api_version <= versions[1]:
        return None
    own = [e for e in api_version_entries(advertised) if e["api_key"] == API_VERSIONS_KEY]
    return FALLBACK_VERSION, {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": own}


@handler(API_VERSIONS_KEY, 0, 4)
def handle_api_versions(req: ApiVersionsRequest, ctx: RequestContext) -> dict[str, Any]:
    entries = api_version_entries(ctx.advertised)
    telemetry = ctx.cluster.telemetry
    if not telemetry.enabled:  # Kafka: only with a client-telemetry metrics reporter
        entries = [e for e in entries if e["api_key"] not in TELEMETRY_APIS]
    if ctx.api_version >= 3 and not (_SOFTWARE.match(req.client_software_name)
                                     and _SOFTWARE.match(req.client_software_version)):
        return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": []}
    if ctx.api_version >= 3:  # who the client is, for KIP-714's subscription matching
        telemetry.note_client_software(ctx.client_address, req.client_software_name,
                                       req.client_software_version)
    supported = [{"name": name, "min_version": low, "max_version": high}
                 for name, (low, high) in sorted(supported_features(METADATA_VERSION).items())]
    features = dict(ctx.image.features)
    if _transactions_v2_advertised(entries):
        supported.append({"name": TRANSACTION_VERSION_FEATURE, "min_version": 0,
                          "max_version": TRANSACTION_VERSION_LEVEL})
    else:  # an emulated release before 4.0 knows no transaction.version
        features.pop(TRANSACTION_VERSION_FEATURE, None)
    return {
        "error_code": ErrorCode.NONE,
        "api_keys": entries,
        "throttle_time_ms": 0,
        "supported_features": supported,
        "finalized_features_epoch": ctx.image.offset,
        "finalized_features": [{"name": name, "max_version_level": level,
                                "min_version_level": level}
                               for name, level in sorted(features.items())],
    }


def _transactions_v2_advertised(entries: list[dict[str, int]]) -> bool:
    """transaction.version is a Kafka 4.0 feature: shown only with EndTxn v5, the version
    a v2 client needs (so --kafka-version 3.9 and older show no such feature)."""
    return any(e["api_key"] == END_TXN_KEY and e["max_version"] >= END_TXN_TV2_VERSION
               for e in entries)
