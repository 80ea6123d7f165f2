"""The CLI with security listeners, as a script in another language would use it: the READY
line names every listener with its protocol and the CA to trust; SASL users come from the
environment, mechanisms from the TOML file, and more users from the control API over HTTP
(and `mockbroker ctl`); a real client logs in with what the READY line says.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer

from tests.support.cli import http_json, start_cli, stop

TIMEOUT = 30.0


def test_cli_sasl_ssl_listener_end_to_end(tmp_path: Path) -> None:
    config = tmp_path / "mockbroker.toml"
    config.write_text('sasl-mechanisms = ["SCRAM-SHA-512", "PLAIN"]\n'
                      'listener-security-protocol-map = "INTERNAL:PLAINTEXT"\n')
    proc, fields = start_cli(
        "--brokers", "2", "--listeners", "SASL_SSL://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "--advertised-listeners", "SASL_SSL://localhost", "--config", str(config),
        env={"MOCKBROKER_SASL_USERS": "alice:alice-pw"})
    try:
        secure, internal = fields["listener.SASL_SSL"], fields["listener.INTERNAL"]
        assert secure == f"SASL_SSL://{fields['bootstrap']}"
        assert secure.startswith("SASL_SSL://localhost:") and secure.count(",") == 1
        assert internal.startswith("PLAINTEXT://127.0.0.1:")
        ca = Path(fields["ssl-ca"])
        assert ca.parent == Path(fields["ssl-dir"]) and ca.read_text().startswith(
            "-----BEGIN CERTIFICATE-----")
        control = fields["control"]

        status, added = http_json(f"{control}/add-user", "POST",
                                  {"name": "bob", "password": "bob-pw"})
        assert status == 200 and added["scram"] == {"SCRAM-SHA-256": 4096,
                                                    "SCRAM-SHA-512": 4096}
        listed = subprocess.run([sys.executable, "-m", "mockbroker", "ctl", "--url", control,
                                 "users"], capture_output=True, text=True, timeout=TIMEOUT,
                                check=True).stdout
        assert '"alice"' in listed and '"bob"' in listed

        delivered: list[object] = []
        producer = Producer({"bootstrap.servers": fields["bootstrap"],
                             "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                             "sasl.username": "bob", "sasl.password": "bob-pw",
                             "ssl.ca.location": str(ca)})
        producer.produce("cli-secure", b"payload",
                         on_delivery=lambda err, msg: delivered.append(err))
        assert producer.flush(TIMEOUT) == 0 and delivered == [None]

        status, state = http_json(f"{control}/state")
        assert status == 200
        assert [(row["name"], row["security_protocol"]) for row in state["listeners"]] == [
            ("SASL_SSL", "SASL_SSL"), ("INTERNAL", "PLAINTEXT")]
        security = state["security"]
        assert security["sasl_mechanisms"] == ["SCRAM-SHA-512", "PLAIN"]
        assert security["tls"]["ca"] == str(ca)
        assert sorted(security["users"]) == ["alice", "bob"]
        assert {a["principal"] for a in security["authentications"]} == {"User:bob"}
        status, gone = http_json(f"{control}/delete-user", "POST", {"name": "nobody"})
        assert (status, gone["error"]) == (404, "no SASL user 'nobody'")
    finally:
        stop(proc)


def test_ssl_export_dir_without_generated_tls_is_an_error(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "mockbroker", "--brokers", "1",
                             "--ssl-export-dir", str(tmp_path / "tls")],
                            capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "mockbroker: error: --ssl-export-dir: no generated TLS files (no SSL or SASL_SSL "
        "listener, or --ssl-certfile given)")
    assert not (tmp_path / "tls").exists()
