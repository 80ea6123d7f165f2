"""Frames too short for what they start to say: the connection refuses them with the general
path's log line and a close ("undecodable request header" or "undecodable request"), alone in
a read or behind a whole request, and never lets an exception escape the connection task.

A frame of one byte once reached a check of the API key that read `frame[1]` and ended the
connection task with an IndexError ("Unhandled exception in client_connected_cb").
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kafka_protocol_codec import decode_response, encode_request
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.embedded import MockCluster

TIMEOUT = 5
HEADER = 8  # api key, version, correlation id: what every request header starts with


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _produce(version: int, correlation_id: int) -> bytes:
    """An ordinary Produce (acks=1, one batch to t-0)."""
    batch = build_batch([RecordSpec(key=b"k", value=b"v", timestamp=1000)])
    return encode_request(0, version, {
        "acks": 1, "timeout_ms": 1000, "transactional_id": None,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]},
        correlation_id=correlation_id, client_id="short")


def _metadata(correlation_id: int) -> bytes:
    return encode_request(3, 12, {"topics": None}, correlation_id=correlation_id)


def _cuts() -> list[bytes]:
    """Every frame body shorter than a whole request header and then some: zeros (API key 0,
    Produce, from two bytes on), and every prefix of a real Produce, flexible and not."""
    bodies = [bytes(n) for n in range(HEADER + 4)]
    for version in (3, 9):
        whole = _produce(version, 7)
        bodies.extend(whole[:n] for n in range(len(whole)))
    return list(dict.fromkeys(bodies))


@contextmanager
def _unhandled() -> Iterator[list[dict[str, Any]]]:
    """What reaches the loop's exception handler meanwhile (an exception escaping a task)."""
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        yield seen
    finally:
        loop.set_exception_handler(previous)


async def _answers_then_close(reader: asyncio.StreamReader) -> list[bytes] | None:
    """The whole answers read until the broker closed the connection (None: it did not
    within TIMEOUT)."""
    answers: list[bytes] = []
    try:
        async with asyncio.timeout(TIMEOUT):
            while prefix := await reader.read(4):
                size = struct.unpack(">i", prefix + await reader.readexactly(4 - len(prefix)))
                answers.append(await reader.readexactly(size[0]))
    except TimeoutError:
        return None
    except (ConnectionResetError, asyncio.IncompleteReadError):
        pass
    return answers


async def _expect_close(mc: MockCluster, payload: bytes, answered: int) -> None:
    """Send `payload` on a new connection: `answered` requests are answered, then the
    broker closes it."""
    node = mc.cluster.brokers[0]
    reader, writer = await asyncio.open_connection(node.host, node.port)
    try:
        writer.write(payload)
        await writer.drain()
        answers = await _answers_then_close(reader)
        assert answers is not None, f"still open after {payload[-40:]!r}"
        assert len(answers) == answered, payload[-40:]
    finally:
        writer.close()


def _reason(body: bytes) -> str:
    """The start of the reason the general path logs for this frame."""
    return "undecodable request header" if len(body) < HEADER else "undecodable request: "


@pytest.mark.parametrize("behind_metadata", [False, True], ids=["alone", "behind-metadata"])
async def test_short_frames_close_as_the_general_path_does(
        behind_metadata: bool, caplog: pytest.LogCaptureFixture) -> None:
    """Alone in a read, or behind a Metadata request in the same write: the general path's
    log line, a close, nothing unhandled, and the broker serves on."""
    caplog.set_level(logging.WARNING)
    async with MockCluster(brokers=1) as mc:
        mc.cluster.create_topic("t", 1, 1)
        bystander = await asyncio.open_connection(mc.cluster.brokers[0].host,
                                                  mc.cluster.brokers[0].port)
        with _unhandled() as unhandled:
            for body in _cuts():
                caplog.clear()
                lead = _framed(_metadata(1)) if behind_metadata else b""
                await _expect_close(mc, lead + _framed(body), 1 if behind_metadata else 0)
                closes = [r for r in caplog.records if "closing connection" in r.getMessage()]
                assert len(closes) == 1, (body, [r.getMessage() for r in caplog.records])
                assert getattr(closes[0], "reason", "").startswith(_reason(body)), (
                    body, closes[0].getMessage())
                assert not [r for r in caplog.records if r.levelno >= logging.ERROR], body
            assert unhandled == []
        # the other connection is undisturbed
        reader, writer = bystander
        writer.write(_framed(_metadata(5)) + _framed(_produce(9, 6)))
        meta = decode_response(3, 12, await _read(reader))
        produced = decode_response(0, 9, await _read(reader))
        assert (meta.correlation_id, produced.correlation_id) == (5, 6)
        assert produced.body.responses[0].partition_responses[0].error_code == 0
        writer.close()


async def _read(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))[0]
    return await asyncio.wait_for(reader.readexactly(size), TIMEOUT)
