"""Static broker properties from the command line: server.properties syntax, the container
images' KAFKA_* mapping, --override and the TOML table, their precedence, and the CLI's
answers to bad values (one line, exit code 2) and unknown keys (logged, ignored).
A started CLI reports them to confluent-kafka's AdminClient with their source."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from mockbroker.cli import broker_properties, build_parser
from mockbroker.config import resolve
from mockbroker.kafka_properties import env_properties, env_to_property, parse_properties
from tests.support.cli import start_cli, stop


def test_java_properties_syntax() -> None:
    text = ("# a comment\n  ! another\n\nnum.partitions=4\nlog.dirs : /a,\\\n"
            "       /b\nbroker.rack   rack-1\nkey\\=with\\:seps = v\\tx\\u0041\n"
            "empty.value\nspaces.inside = a b  \n")
    assert parse_properties(text) == {
        "num.partitions": "4", "log.dirs": "/a,/b", "broker.rack": "rack-1",
        "key=with:seps": "v\txA", "empty.value": "", "spaces.inside": "a b  "}


@pytest.mark.parametrize(("variable", "key"), [
    ("KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS", "group.min.session.timeout.ms"),
    ("KAFKA_LISTENER_NAME_INTERNAL_SSL_KEY___PASSWORD", "listener.name.internal.ssl.key-password"),
    ("KAFKA_CONFLUENT_SUPPORT__CUSTOMER__ID", "confluent.support_customer_id"),
])
def test_environment_mapping(variable: str, key: str) -> None:
    assert env_to_property(variable) == key


def test_image_variables_are_not_properties() -> None:
    assert env_properties({"KAFKA_HEAP_OPTS": "-Xmx1G", "KAFKA_OPTS": "x", "KAFKA_": "y",
                           "KAFKA_NUM_PARTITIONS": "3", "OTHER": "z"}) == {
        "num.partitions": "3"}


def test_precedence_file_then_environment_then_override(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=2\nmessage.max.bytes=100\nlog.retention.ms=1\n")
    toml = tmp_path / "mockbroker.toml"
    toml.write_text('[override]\n"log.retention.ms" = 5\n')
    parser = build_parser()
    args = resolve(parser, ["--server-properties", str(props), "--config", str(toml),
                            "--override", "message.max.bytes=300"], environ={})
    env = {"KAFKA_NUM_PARTITIONS": "3", "KAFKA_MESSAGE_MAX_BYTES": "200"}
    # --override on the command line replaces the TOML file's table, as every flag does
    assert broker_properties(args, env) == {
        "num.partitions": "3", "message.max.bytes": "300", "log.retention.ms": "1"}
    args = resolve(parser, ["--server-properties", str(props), "--config", str(toml)],
                   environ={})
    assert broker_properties(args, env) == {
        "num.partitions": "3", "message.max.bytes": "200", "log.retention.ms": "5"}


def _run(*flags: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockbroker", *flags], capture_output=True,
                          text=True, timeout=60, env={**_base_env(), **(env or {})})


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}


@pytest.mark.parametrize(("flags", "env", "message"), [
    (["--override", "group.min.session.timeout.ms=soon"], None,
     "mockbroker: error: broker config: Invalid value soon for configuration "
     "group.min.session.timeout.ms: Not a number of type INT\n"),
    (["--override", "no-equals-sign"], None,
     "mockbroker: error: argument --override: expected key=value, got 'no-equals-sign' "
     "(see mockbroker --help)\n"),
    ([], {"KAFKA_AUTO_CREATE_TOPICS_ENABLE": "maybe"},
     "mockbroker: error: broker config: Invalid value maybe for configuration "
     "auto.create.topics.enable: Expected value to be either true or false\n"),
    (["--server-properties", "/nonexistent/server.properties"], None,
     "mockbroker: error: server properties /nonexistent/server.properties: cannot read: "
     "No such file or directory\n"),
])
def test_bad_values_are_one_line_and_exit_code_2(flags: list[str], env: dict[str, str] | None,
                                                 message: str) -> None:
    result = _run(*flags, env=env)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message)


def test_started_cli_reports_static_configs(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("# as a Kafka broker would read it\nnum.partitions=6\nunknown.key=1\n")
    proc, ready = start_cli(
        "--brokers", "1", "--server-properties", str(props),
        "--override", "group.min.session.timeout.ms=1000",
        env={"KAFKA_OFFSETS_RETENTION_MINUTES": "60"}, stderr=subprocess.PIPE)
    try:
        admin = AdminClient({"bootstrap.servers": ready["bootstrap"]})
        resource = ConfigResource(ConfigResource.Type.BROKER, "0")
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
        seen = {name: (configs[name].value, configs[name].source, configs[name].is_read_only)
                for name in ("num.partitions", "group.min.session.timeout.ms",
                             "offsets.retention.minutes", "message.max.bytes")}
        static = ConfigSource.STATIC_BROKER_CONFIG.value
        assert seen == {
            "num.partitions": ("6", static, True),
            "group.min.session.timeout.ms": ("1000", static, True),
            "offsets.retention.minutes": ("60", static, True),
            "message.max.bytes": ("1048588", ConfigSource.DEFAULT_CONFIG.value, False)}
    finally:
        stop(proc)
        assert proc.stderr is not None
        log = proc.stderr.read()
    assert "The configuration 'unknown.key' was supplied but isn't a known config." in log
