"""ApiVersions in-process: what a broker advertises is exactly what the registry handles
(the KIP-714 telemetry APIs only while client telemetry is enabled, as Kafka advertises them
only with a client-telemetry metrics reporter)."""

from __future__ import annotations

import pytest
from kafka_protocol_codec import api
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.kraft.controller import METADATA_VERSION
from mockbroker.handlers import REGISTRY, advertised_versions
from mockbroker.handlers.telemetry import TELEMETRY_APIS
from mockbroker.versions import RELEASES, api_caps
from tests.support.handlers import HandlerHarness

API_VERSIONS = 18
SOFTWARE = {"client_software_name": "handler-test", "client_software_version": "1.0"}


def registry_entries(telemetry: bool = False) -> list[dict[str, int]]:
    return [{"api_key": key, "min_version": spec.min_version, "max_version": spec.max_version}
            for key, spec in sorted(REGISTRY.items())
            if telemetry or key not in TELEMETRY_APIS]


@pytest.mark.parametrize("telemetry", [False, True])
@pytest.mark.parametrize("version", range(5))
async def test_every_broker_advertises_the_registry(harness: HandlerHarness,
                                                    version: int, telemetry: bool) -> None:
    harness.cluster.telemetry.enabled = telemetry
    body = SOFTWARE if version >= 3 else {}
    for broker in harness.cluster.brokers:
        response = await harness.call(broker, API_VERSIONS, version, body)
        assert response is not None
        assert response.error_code == ErrorCode.NONE
        assert [dict(entry) for entry in response.api_keys] == registry_entries(telemetry)


def test_registry_ranges_lie_within_the_schemas() -> None:
    """A handler never claims a version the codec cannot decode."""
    assert API_VERSIONS in REGISTRY and 0 in REGISTRY and 1 in REGISTRY
    for key, spec in REGISTRY.items():
        schema = api(key)
        assert schema.min_version <= spec.min_version <= spec.max_version <= schema.max_version


async def test_v3_features_come_from_the_metadata_log(harness: HandlerHarness) -> None:
    response = await harness.call(1, API_VERSIONS, 3, SOFTWARE)
    assert response is not None
    image = harness.cluster.brokers[1].image
    assert image.features == {"metadata.version": METADATA_VERSION, "transaction.version": 2}
    assert response.throttle_time_ms == 0
    assert [dict(f) for f in response.supported_features] == [
        {"name": "metadata.version", "min_version": 1, "max_version": METADATA_VERSION},
        {"name": "transaction.version", "min_version": 0, "max_version": 2}]
    assert response.finalized_features_epoch == image.offset
    assert [dict(f) for f in response.finalized_features] == [
        {"name": "metadata.version", "max_version_level": METADATA_VERSION,
         "min_version_level": METADATA_VERSION},
        {"name": "transaction.version", "max_version_level": 2, "min_version_level": 2}]


@pytest.mark.parametrize("field", ["client_software_name", "client_software_version"])
async def test_v3_rejects_an_illegal_software_name(harness: HandlerHarness, field: str) -> None:
    """Kafka validates both strings (letters, digits, '-', '.'; alphanumeric at both ends)
    and answers INVALID_REQUEST with no API list (ApiVersionsRequest.getErrorResponse)."""
    for bad in ("-leading", "trailing.", "sp ace", ""):
        response = await harness.call(0, API_VERSIONS, 3, {**SOFTWARE, field: bad})
        assert response is not None
        assert response.error_code == ErrorCode.INVALID_REQUEST, bad
        assert response.api_keys == []


@pytest.mark.parametrize("release", RELEASES)
async def test_emulated_release_advertises_the_capped_registry(release: str) -> None:
    caps = api_caps(release)
    capped = {key: (low, high) for key, low, high in advertised_versions(caps)}
    harness = HandlerHarness(brokers=1, advertised=capped)
    response = await harness.call(0, API_VERSIONS, capped[API_VERSIONS][1],
                                  SOFTWARE if capped[API_VERSIONS][1] >= 3 else {})
    assert response is not None
    got = {e.api_key: (e.min_version, e.max_version) for e in response.api_keys}
    assert got == capped
    for key, (low, high) in got.items():  # never beyond what the release or we support
        assert caps[key][0] <= low <= high <= caps[key][1]
        assert REGISTRY[key].min_version <= low and high <= REGISTRY[key].max_version
    assert set(got) <= set(caps) & set(REGISTRY)
    if release == "2.8":  # DescribeTransactions and ListTransactions came in 3.0 (KIP-664)
        assert 65 not in got and 66 not in got
