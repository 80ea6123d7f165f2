"""CLI configuration: flags, MOCKBROKER_* variables and a TOML file, in that precedence;
`--help`; one-line errors with exit code 2 for bad values from any source; exit code 1 for a
listener that cannot bind; and a real process configured from all three sources."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mockbroker.cli import build_parser, main
from mockbroker.config import ConfigError, env_name, resolve
from tests.support.rawclient import RawClient

READY_TIMEOUT = 30.0
# a valid non-default command-line text per option that takes a value
SAMPLES = {
    "brokers": ("2", 2), "host": ("127.0.0.2", "127.0.0.2"), "port": ("9500", 9500),
    "advertised_host": ("kafka", "kafka"), "advertised_port": ("19092", 19092),
    "partitions": ("4", 4), "replication_factor": ("2", 2),
    "min_insync_replicas": ("2", 2), "cluster_id": ("abc", "abc"), "data_dir": ("/var/lib/mb", "/var/lib/mb"),
    "heartbeat_interval_ms": ("250", 250), "control_port": ("8080", 8080),
    "group_consumer_heartbeat_interval_ms": ("250", 250),
    "group_consumer_session_timeout_ms": ("6000", 6000),
    "control_host": ("127.0.0.3", "127.0.0.3"), "fault_seed": ("7", 7),
    "log_level": ("debug", "DEBUG"), "kafka_version": ("3.6.1", "3.6"),
    "trace_api": ("Produce,fetch", [0, 1]), "trace_buffer": ("50", 50),
    "log_format": ("JSON", "json"), "clock": ("Manual", "manual"),
    "scenario": ("s.toml", "s.toml"), "scenario_seed": ("5", 5),
    "listeners": ("SASL_SSL://127.0.0.1:0,PLAIN://:9092", "SASL_SSL://127.0.0.1:0,PLAIN://:9092"),
    "advertised_listeners": ("SASL_SSL://localhost", "SASL_SSL://localhost"),
    "listener_security_protocol_map": ("PLAIN:PLAINTEXT", "PLAIN:PLAINTEXT"),
    "security_protocol": ("sasl_ssl", "SASL_SSL"),
    "sasl_users": ("alice:secret,bob:a:b", {"alice": "secret", "bob": "a:b"}),
    "super_users": ("User:admin;User:bob", "User:admin;User:bob"),
    "sasl_mechanisms": ("plain,SCRAM-SHA-512", ["PLAIN", "SCRAM-SHA-512"]),
    "connections_max_reauth_ms": ("60000", 60000),
    "ssl_certfile": ("broker.pem", "broker.pem"), "ssl_keyfile": ("key.pem", "key.pem"),
    "ssl_cafile": ("ca.pem", "ca.pem"), "ssl_client_auth": ("Required", "required"),
    "ssl_export_dir": ("/tls", "/tls"),
    "server_properties": ("server.properties", "server.properties"),
    "override": ("num.partitions=4", [("num.partitions", "4")]),
    "broker_racks": ("r0,r1", ("r0", "r1")),
    "replica_selector_class": ("org.apache.kafka.common.replica.RackAwareReplicaSelector",
                               "org.apache.kafka.common.replica.RackAwareReplicaSelector"),
}


def options() -> dict[str, argparse.Action]:
    return {a.dest: a for a in build_parser()._actions
            if a.option_strings and a.dest not in ("help", "config")}


def resolved(argv: list[str] | None = None, env: dict[str, str] | None = None) -> Any:
    return resolve(build_parser(), argv or [], env or {}, warn=lambda text: None)


# -- precedence ------------------------------------------------------------------------------

def test_defaults() -> None:
    args = resolved()
    assert (args.brokers, args.host, args.port, args.auto_create_topics, args.trace,
            args.trace_buffer, args.log_format, args.kafka_version, args.config) == \
        (3, "127.0.0.1", 0, True, False, 0, "pretty", None, None)


def test_flag_beats_env_beats_file_beats_default(tmp_path: Path) -> None:
    config = tmp_path / "mockbroker.toml"
    config.write_text('brokers = 5\npartitions = 6\nadvertised-host = "from-file"\n'
                      'auto_create_topics = false\ntrace-api = ["Produce", "Metadata"]\n'
                      'min-insync-replicas = "2"\n')
    env = {"MOCKBROKER_CONFIG": str(config), "MOCKBROKER_BROKERS": "4",
           "MOCKBROKER_ADVERTISED_HOST": "from-env", "MOCKBROKER_TRACE": "yes"}
    args = resolved(["--brokers", "2"], env)
    assert args.brokers == 2  # flag
    assert args.advertised_host == "from-env" and args.trace is True  # environment
    assert (args.partitions, args.auto_create_topics, args.trace_api,
            args.min_insync_replicas) == (6, False, [0, 3], 2)  # file
    assert args.heartbeat_interval_ms == 500  # default
    assert args.config == str(config)
    args = resolved(["--auto-create-topics", "--no-trace"], env)  # flags override both ways
    assert args.auto_create_topics is True and args.trace is False
    other = tmp_path / "other.toml"
    other.write_text("partitions = 9\n")
    assert resolved(["--config", str(other)], env).partitions == 9  # --config beats the env


def test_every_option_is_a_variable_and_a_file_key(tmp_path: Path) -> None:
    opts = options()
    missing = sorted(d for d, a in opts.items()
                     if d not in SAMPLES and not isinstance(a, argparse.BooleanOptionalAction)
                     and d != "extra_listeners")
    assert not missing, f"add a sample value for the new option(s) {missing}"
    for dest, action in opts.items():
        if isinstance(action, argparse.BooleanOptionalAction):
            text, expected = ("false", False) if action.default else ("true", True)
        elif dest == "extra_listeners":
            text, expected = "127.0.0.1:0", None
        else:
            text, expected = SAMPLES[dest]
        from_env = getattr(resolved([], {env_name(dest): text}), dest)
        config = tmp_path / f"{dest}.toml"
        key = dest.replace("_", "-")
        config.write_text(f"{key} = {json.dumps(text)}\n")
        from_file = getattr(resolved(["--config", str(config)]), dest)
        if expected is None:  # listener sets: compare the parsed objects
            expected = getattr(resolved([action.option_strings[0], text]), dest)
        assert from_env == expected == from_file, dest
        assert from_env != action.default, dest


def test_help_is_complete() -> None:
    result = subprocess.run([sys.executable, "-m", "mockbroker", "--help"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and result.stderr == ""
    text = " ".join(result.stdout.split())  # argparse wraps lines
    for dest, action in options().items():
        assert action.option_strings[0] in text, dest
        assert action.help, dest
        assert f"[env {env_name(dest)}]" in text, dest
    for section in ("configuration:", "Precedence: command line > environment > file >",
                    "READY bootstrap=", "exit codes:", "--config FILE", "MOCKBROKER_CONFIG"):
        assert section in text, section


# -- bad values: one line, exit code 2 ----------------------------------------------------------

@pytest.mark.parametrize(("argv", "env", "file_text", "expected"), [
    (["--brokers", "0"], {}, None, "argument --brokers: must be at least 1, got 0"),
    (["--kafka-version", "3.7"], {}, None, "unknown Kafka version '3.7'"),
    (["--trace-api", "Produce,Nope"], {}, None, "unknown API 'Nope'"),
    (["--no-such-flag"], {}, None, "unrecognized arguments: --no-such-flag"),
    ([], {"MOCKBROKER_PORT": "70000"}, None, "MOCKBROKER_PORT='70000': port must be 0-65535"),
    ([], {"MOCKBROKER_TRACE": "maybe"}, None, "MOCKBROKER_TRACE='maybe': expected true or"),
    ([], {"MOCKBROKER_LOG_FORMAT": "xml"}, None, "must be one of pretty, json"),
    ([], {}, "brokers = \"two\"\n", "brokers = 'two': expected an integer, got 'two'"),
    ([], {}, "brokers = 1.5\n", "brokers = 1.5: not a value --brokers takes"),
    ([], {}, "trace = 3\n", "trace = 3: expected true or false"),
    ([], {}, "brokerz = 3\n", "unknown key 'brokerz'"),
    ([], {}, "brokers = [\n", "not valid TOML"),
    (["--config", "/nonexistent/mockbroker.toml"], {}, None, "cannot read"),
    (["--listeners", "EXTERNAL://127.0.0.1:0"], {}, None,
     "listener EXTERNAL has no security protocol"),
    (["--listeners", "127.0.0.1:9092"], {}, None, "expected NAME://HOST:PORT"),
    (["--listeners", "SSL://127.0.0.1:0", "--advertised-listeners", "SASL_SSL://h"], {}, None,
     "advertised listener SASL_SSL is not among the listeners (SSL)"),
    ([], {"MOCKBROKER_SASL_USERS": "alice"}, None, "expected NAME:PASSWORD"),
    ([], {}, 'sasl-mechanisms = ["GSSAPI"]\n', "expected some of PLAIN, SCRAM-SHA-256"),
    (["--security-protocol", "SSL", "--ssl-certfile", "x.pem"], {}, None,
     "give both the certificate file and its key file"),
])
def test_bad_values_are_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str],
                                            argv: list[str], env: dict[str, str],
                                            file_text: str | None, expected: str) -> None:
    for name in list(os.environ):
        if name.startswith("MOCKBROKER_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if file_text is not None:
        path = tmp_path / "bad.toml"
        path.write_text(file_text)
        argv = [*argv, "--config", str(path)]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code  # argparse's own errors
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mockbroker: error: "), captured.err
    assert expected in lines[0]


def test_unknown_variables_are_a_warning() -> None:
    warnings: list[str] = []
    resolve(build_parser(), [], {"MOCKBROKER_BROKER": "3", "OTHER": "x"},
            warn=warnings.append)
    assert warnings == ["unknown environment variable MOCKBROKER_BROKER ignored"]


def test_config_error_names_its_source(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("config = 'other.toml'\n")
    with pytest.raises(ConfigError, match="unknown key 'config'"):
        resolved(["--config", str(path)])


# -- real processes ----------------------------------------------------------------------------

def _read_ready(proc: subprocess.Popen[str]) -> str:
    line: list[str] = []
    stdout = proc.stdout
    assert stdout is not None
    reader = threading.Thread(target=lambda: line.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(READY_TIMEOUT)
    return line[0] if line else ""


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKBROKER_")}
    env.update(extra)
    return env


@pytest.mark.parametrize(("flag", "who"), [("--port", "broker 0"),
                                          ("--control-port", "control API")])
def test_bind_failure_is_one_line_and_exit_1(flag: str, who: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "mockbroker", "--brokers", "1",
                                 flag, str(port)], capture_output=True, text=True,
                                timeout=60, env=_clean_env(), check=False)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{who} cannot listen on 127.0.0.1:{port}" in lines[0]
    assert "address already in use" in lines[0].lower()


def test_a_process_configured_from_flags_env_and_file(tmp_path: Path) -> None:
    config = tmp_path / "mockbroker.toml"
    config.write_text('kafka-version = "2.8"\ntrace = true\ntrace-api = ["ApiVersions"]\n'
                      "brokers = 3\n")
    env = _clean_env(MOCKBROKER_CONFIG=str(config), MOCKBROKER_BROKERS="2",
                     MOCKBROKER_LOG_FORMAT="json")
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "--brokers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        ready = _read_ready(proc)
        assert ready.startswith("READY "), ready
        fields = dict(f.split("=", 1) for f in ready.split()[1:])
        bootstrap = fields["bootstrap"].split(",")
        assert len(bootstrap) == 1  # the flag beat the environment and the file

        async def api_versions() -> dict[int, int]:
            client = await RawClient.connect(int(bootstrap[0].rsplit(":", 1)[1]))
            async with client:
                body = await client.request(18, 3, {"client_software_name": "t",
                                                    "client_software_version": "1"})
                await client.request(3, 1, {"topics": []})  # not traced (--trace-api)
            return {e.api_key: e.max_version for e in body.api_keys}

        versions = asyncio.run(api_versions())
        assert versions[3] == 11 and 65 not in versions  # 2.8, from the file
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    lines = [json.loads(line) for line in err.splitlines()]  # every line is JSON (the env)
    traced = [line for line in lines if line.get("logger") == "mockbroker.trace"]
    assert [t["api"] for t in traced] == ["ApiVersions"], lines
    assert traced[0]["client_id"] == "rawclient" and traced[0]["version"] == 3
