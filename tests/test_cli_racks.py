"""The fetch-from-follower options (KIP-392): --broker-racks and --replica-selector-class as
flags, MOCKBROKER_* variables and TOML keys, the broker.rack / replica.selector.class
properties, and what a started broker reports (racks in Metadata, broker.rack in
DescribeConfigs, both in the control API's state)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mockbroker.cli import build_parser
from mockbroker.cluster.log.read_replicas import RACK_AWARE_SELECTOR
from mockbroker.config import resolve
from tests.support.cli import http_json, start_cli, stop


def test_flags_environment_and_toml(tmp_path: Path) -> None:
    defaults = build_parser().parse_args([])
    assert (defaults.broker_racks, defaults.replica_selector_class) == ((), "")
    args = build_parser().parse_args(["--broker-racks", "r0,,r2",
                                      "--replica-selector-class", RACK_AWARE_SELECTOR])
    assert (args.broker_racks, args.replica_selector_class) == (("r0", "", "r2"),
                                                                RACK_AWARE_SELECTOR)
    from_env = resolve(build_parser(), [], {"MOCKBROKER_BROKER_RACKS": "a,b"})
    assert from_env.broker_racks == ("a", "b")
    toml = tmp_path / "mock.toml"
    toml.write_text(f'broker-racks = ["east", "west", "east"]\n'
                    f'replica-selector-class = "{RACK_AWARE_SELECTOR}"\n')
    from_file = resolve(build_parser(), ["--config", str(toml)], {})
    assert (from_file.broker_racks, from_file.replica_selector_class) == (
        ("east", "west", "east"), RACK_AWARE_SELECTOR)


def test_an_unknown_selector_class_is_refused() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--replica-selector-class", "com.example.Nearest"])


def test_started_cli_reports_racks() -> None:
    proc, ready = start_cli("--broker-racks", "r0,r1,r2", "--override",
                            f"replica.selector.class={RACK_AWARE_SELECTOR}",
                            stderr=subprocess.PIPE)
    try:
        status, state = http_json(ready["control"] + "/state")
        assert status == 200
        assert [b["rack"] for b in state["brokers"]] == ["r0", "r1", "r2"]
        from confluent_kafka.admin import AdminClient, ConfigResource

        admin = AdminClient({"bootstrap.servers": ready["bootstrap"]})
        brokers = admin.list_topics(timeout=30).brokers
        assert sorted(brokers) == [0, 1, 2]
        resource = ConfigResource(ConfigResource.Type.BROKER, "2")
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
        assert (configs["broker.rack"].value, configs["replica.selector.class"].value) == (
            "r2", RACK_AWARE_SELECTOR)
    finally:
        stop(proc)


def test_more_racks_than_brokers_is_exit_code_2() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mockbroker", "--brokers", "2", "--broker-racks", "a,b,c"],
        capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (2, "")
    assert "3 broker racks given for 2 brokers" in result.stderr
