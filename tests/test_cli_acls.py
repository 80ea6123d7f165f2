"""The CLI with the authorizer: `--authorizer` and super users from the environment, ACLs and
quotas through `mockbroker ctl` and HTTP, and a PLAINTEXT client (User:ANONYMOUS) refused
until an ACL allows it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from confluent_kafka import KafkaError, Producer

from tests.support.cli import http_json, start_cli, stop

TIMEOUT = 30.0


def _ctl(control: str, *words: str) -> Any:
    out = subprocess.run([sys.executable, "-m", "mockbroker", "ctl", "--url", control, *words],
                         capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout
    return json.loads(out)


def _produce(bootstrap: str) -> list[KafkaError | None]:
    delivered: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10_000})
    producer.produce("cli-acl", b"v", on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(TIMEOUT)
    return delivered


def test_cli_authorizer_with_ctl_acls_and_quotas() -> None:
    proc, fields = start_cli("--brokers", "1", "--authorizer",
                             env={"MOCKBROKER_SUPER_USERS": "User:admin;User:ops"})
    try:
        control = fields["control"]
        status, acls = http_json(f"{control}/acls")
        assert status == 405  # verbs are POSTed
        acls = _ctl(control, "acls")
        assert (acls["enabled"], acls["super_users"], acls["acls"]) == (
            True, ["User:admin", "User:ops"], [])
        http_json(f"{control}/create-topic", "POST", {"topic": "cli-acl"})
        [refused] = _produce(fields["bootstrap"])
        assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        added = _ctl(control, "create-acl", "resource_type=TOPIC", "resource_name=cli-",
                     "pattern_type=PREFIXED", "principal=User:ANONYMOUS", "operation=WRITE")
        assert added["added"] is True
        assert _produce(fields["bootstrap"]) == [None]
        status, bad = http_json(f"{control}/create-acl", "POST", {
            "resource_type": "TOPIC", "resource_name": "x", "principal": "alice",
            "operation": "READ"})
        assert status == 400 and "principal" in bad["error"]
        quotas = _ctl(control, "set-quota", 'entity={"user": null}',
                      'values={"consumer_byte_rate": 4096}')
        assert quotas["entities"] == [{"entity": {"user": None},
                                       "values": {"consumer_byte_rate": 4096.0}}]
        deleted = _ctl(control, "delete-acls", "principal=User:ANONYMOUS")
        assert [a["resource_name"] for a in deleted["deleted"]] == ["cli-"]
    finally:
        stop(proc)
