"""ApiVersions (key 18): what this broker handles, straight from the handler registry.

An unsupported ApiVersions version is answered by the server itself (v0 layout with
UNSUPPORTED_VERSION and the full list), because it cannot be decoded at that version.
"""

from __future__ import annotations

import re
from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.controller import METADATA_VERSION
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import advertised_versions, handler

_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_version_entries(caps: dict[int, tuple[int, int]] | None) -> list[dict[str, int]]:
    return [{"api_key": key, "min_version": low, "max_version": high}
            for key, low, high in advertised_versions(caps or None)]


@handler(18, 0, 4)
def handle_api_versions(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    entries = api_version_entries(ctx.advertised)
    if ctx.api_version >= 3 and not (_SOFTWARE.match(req.client_software_name)
                                     and _SOFTWARE.match(req.client_software_version)):
        return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": entries}
    return {
        "error_code": ErrorCode.NONE,
        "api_keys": entries,
        "throttle_time_ms": 0,
        "supported_features": [{"name": "metadata.version", "min_version": 1,
                                "max_version": METADATA_VERSION}],
        "finalized_features_epoch": ctx.image.offset,
        "finalized_features": [{"name": name, "max_version_level": level,
                                "min_version_level": level}
                               for name, level in sorted(ctx.image.features.items())],
    }
