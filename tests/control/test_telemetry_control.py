"""The client telemetry verbs (KIP-714) over HTTP and from `mockbroker ctl`, against the CLI
in a subprocess, with a real librdkafka producer pushing metrics."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import confluent_kafka
import pytest

from tests.control.test_ctl import ctl
from tests.support.cli import http_json, start_cli, stop

PREFIX = "org.apache.kafka.producer."


@pytest.fixture(scope="module")
def cli() -> Iterator[tuple[str, str]]:
    """(bootstrap servers, control URL) of a CLI cluster."""
    proc, fields = start_cli("--brokers", "3")
    try:
        yield fields["bootstrap"], fields["control"]
    finally:
        stop(proc)


def post(url: str, verb: str, body: object = None) -> tuple[int, object]:
    return http_json(f"{url}/{verb}", "POST", body)


def test_http_verbs_validate_and_report(cli: tuple[str, str]) -> None:
    _, url = cli
    assert post(url, "telemetry") == (200, {"enabled": False, "subscriptions": [],
                                            "clients": []})
    for bad in ({"metrics": 5}, {"metrics": ["x"], "interval_ms": 10},
                {"metrics": ["x"], "match": {"hostname": "a"}},
                {"metrics": ["x"], "match": {"client_id": "("}},
                {"metrics": ["x"], "interval_ms": "1000"}):
        status, answer = post(url, "set-telemetry-subscription", bad)
        assert status == 400 and "error" in answer, bad  # type: ignore[operator]
    status, _ = post(url, "telemetry", {"client_instance_id": "not-a-uuid"})
    assert status == 400
    status, _ = post(url, "telemetry",
                     {"client_instance_id": "00000000-0000-0000-0000-000000000001"})
    assert status == 404
    assert post(url, "delete-telemetry-subscription", {"name": "nope"})[0] == 404
    status, made = post(url, "set-telemetry-subscription",
                        {"name": "apps", "metrics": "org.apache.kafka.producer.,org.x.",
                         "interval_ms": 1000, "match": {"client_id": "app-.*"}})
    assert status == 200 and made == {"enabled": True, "subscription": {
        "name": "apps", "metrics": [PREFIX, "org.x."], "interval_ms": 1000,
        "match": {"client_id": "app-.*"}}}
    state = http_json(f"{url}/state")[1]["telemetry"]  # type: ignore[index]
    assert state["enabled"] is True and [s["name"] for s in state["subscriptions"]] == ["apps"]
    assert post(url, "delete-telemetry-subscription", {"name": "apps"}) == \
        (200, {"deleted": "apps"})
    status, waited = post(url, "wait-telemetry", {"metric": PREFIX + "x", "timeout_ms": 50})
    assert status == 408 and "to push metric" in waited["error"]  # type: ignore[index]
    assert post(url, "reset")[0] == 200
    assert post(url, "telemetry")[1] == {"enabled": False, "subscriptions": [], "clients": []}


def test_ctl_with_a_real_producer(cli: tuple[str, str]) -> None:
    bootstrap, url = cli
    code, made, _ = ctl("set-telemetry-subscription", PREFIX, "500", url=url)
    assert code == 0 and made["subscription"]["metrics"] == [PREFIX]
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap,
                                         "client.id": "ctl-telemetry"})
    try:
        producer.produce("ctl-telemetry", b"x")
        assert producer.flush(10) == 0
        code, waited, err = ctl("wait", "telemetry", PREFIX + "record.queue.time.avg",
                                "client_id=ctl-telemetry", "timeout_ms=20000", url=url)
        assert code == 0, err
        assert waited["observed"]["client_software_name"] == "confluent-kafka-python"
        code, listed, _ = ctl("telemetry", url=url)
        assert code == 0
        (client,) = listed["clients"]
        assert client["client_id"] == "ctl-telemetry"
        assert PREFIX + "record.queue.time.avg" in client["metric_names"]
        code, one, _ = ctl("telemetry", client["client_instance_id"], "history=true", url=url)
        assert code == 0 and one["clients"][0]["history"][0]["error"] == "NONE"
    finally:
        del producer
        gc.collect()
    assert ctl("reset", url=url)[0] == 0


def test_client_telemetry_flag_advertises_from_the_start() -> None:
    proc, fields = start_cli("--brokers", "1", env={"MOCKBROKER_CLIENT_TELEMETRY": "on"})
    try:
        url = fields["control"]
        assert post(url, "telemetry")[1] == {"enabled": True, "subscriptions": [],
                                             "clients": []}
        assert post(url, "reset")[0] == 200  # back to the configured default: still on
        telemetry = http_json(f"{url}/state")[1]["telemetry"]  # type: ignore[index]
        assert telemetry["enabled"] is True
    finally:
        stop(proc)
