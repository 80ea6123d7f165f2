"""Strict encoding reaches the broker: a handler answering with a misspelt key fails loudly.

The suite runs with kafka_protocol_codec's strict mode on (tests/conftest.py). A handler
that returns a key its response schema does not know makes the broker log the codec's
error, naming the path and the key, and close the connection -- instead of sending the
default of the field the handler meant.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pytest
from kafka_protocol_codec import Struct, strict_encoding

from mockbroker.embedded import MockCluster
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import REGISTRY
from tests.support.rawclient import ConnectionClosed, connect_broker

HEARTBEAT = 12


def _misspelt_heartbeat(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "eror_code": 0}


async def test_a_handler_typo_closes_the_connection_and_names_the_key(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    assert strict_encoding()
    monkeypatch.setitem(REGISTRY, HEARTBEAT,
                        dataclasses.replace(REGISTRY[HEARTBEAT], func=_misspelt_heartbeat))
    body = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    async with MockCluster(brokers=1) as mc:
        async with await connect_broker(mc, 0) as client:
            with caplog.at_level(logging.ERROR, logger="mockbroker"), \
                    pytest.raises(ConnectionClosed):
                await client.request(HEARTBEAT, 4, body)
    messages = [r.getMessage() for r in caplog.records]
    assert any("unknown key 'eror_code' in HeartbeatResponse " in m
               and "did you mean 'error_code'?" in m for m in messages), messages
