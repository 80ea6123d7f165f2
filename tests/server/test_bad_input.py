"""Bad input gets Kafka's behaviour, and never disturbs other connections."""

from __future__ import annotations

import asyncio
import logging
import struct

import pytest
from kafka_protocol_codec import decode_response, encode_request
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.embedded import MockCluster
from mockbroker.handlers import advertised_versions

TIMEOUT = 5


async def _connect(mc: MockCluster) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    node = mc.cluster.brokers[0]
    return await asyncio.open_connection(node.host, node.port)


async def _send_frame(writer: asyncio.StreamWriter, payload: bytes) -> None:
    writer.write(struct.pack(">i", len(payload)) + payload)
    await writer.drain()


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))[0]
    return await asyncio.wait_for(reader.readexactly(size), TIMEOUT)


async def _assert_closed(reader: asyncio.StreamReader) -> None:
    data = await asyncio.wait_for(reader.read(100), TIMEOUT)
    assert data == b"", "the broker should have closed the connection"


async def _api_versions_ok(mc: MockCluster) -> None:
    """A fresh connection still gets a normal answer (the process is fine)."""
    reader, writer = await _connect(mc)
    await _send_frame(writer, encode_request(18, 3, {"client_software_name": "t",
                                                     "client_software_version": "1"},
                                             correlation_id=1))
    resp = decode_response(18, 3, await _read_frame(reader))
    assert resp.correlation_id == 1
    assert resp.body.error_code == ErrorCode.NONE
    writer.close()


def _header(api_key: int, version: int, correlation_id: int, client_id: str) -> bytes:
    cid = client_id.encode()
    return struct.pack(">hhih", api_key, version, correlation_id, len(cid)) + cid


async def test_unknown_api_key_closes_only_that_connection(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="mockbroker.server")
    async with MockCluster(brokers=1) as mc:
        bystander_r, bystander_w = await _connect(mc)
        reader, writer = await _connect(mc)
        await _send_frame(writer, _header(9999, 0, 7, "bad-client"))
        await _assert_closed(reader)
        lines = [r.getMessage() for r in caplog.records]
        assert any("bad-client" in m or "127.0.0.1" in m for m in lines)
        assert any("unknown or unadvertised API key" in m for m in lines)
        # the other connection is undisturbed
        await _send_frame(bystander_w, encode_request(3, 12, {"topics": []}, correlation_id=5))
        resp = decode_response(3, 12, await _read_frame(bystander_r))
        assert resp.correlation_id == 5 and len(resp.body.brokers) == 1
        bystander_w.close()


async def test_unadvertised_version_closes(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="mockbroker.server")
    async with MockCluster(brokers=1) as mc:
        reader, writer = await _connect(mc)
        await _send_frame(writer, _header(3, 13, 1, "c") + b"\x00")  # Metadata v13
        await _assert_closed(reader)
        assert any("not in advertised range" in r.getMessage() for r in caplog.records)
        await _api_versions_ok(mc)


async def test_undecodable_body_closes(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="mockbroker.server")
    async with MockCluster(brokers=1) as mc:
        reader, writer = await _connect(mc)
        # Metadata v1: topics array claims 1000 entries but no bytes follow
        await _send_frame(writer, _header(3, 1, 1, "trunc") + struct.pack(">i", 1000))
        await _assert_closed(reader)
        assert any("undecodable request" in r.getMessage() and "trunc" in r.getMessage()
                   for r in caplog.records)
        await _api_versions_ok(mc)


async def test_unsupported_api_versions_version_gets_v0_error_with_its_own_range():
    """Kafka's ApiVersionsRequest.getErrorResponse: UNSUPPORTED_VERSION in the v0 layout,
    listing only ApiVersions' range (the client retries at a version from it)."""
    async with MockCluster(brokers=1, kafka_version="all") as mc:  # every handled version
        reader, writer = await _connect(mc)
        await _send_frame(writer, struct.pack(">hhih", 18, 99, 42, 1) + b"x" + b"\x00" * 8)
        payload = await _read_frame(reader)
        resp = decode_response(18, 0, payload)
        assert resp.correlation_id == 42
        assert resp.body.error_code == ErrorCode.UNSUPPORTED_VERSION
        got = [(k.api_key, k.min_version, k.max_version) for k in resp.body.api_keys]
        assert got == [entry for entry in advertised_versions() if entry[0] == 18]
        # the connection stays usable for a retry at a supported version
        await _send_frame(writer, encode_request(18, 0, {}, correlation_id=43))
        again = decode_response(18, 0, await _read_frame(reader))
        assert again.correlation_id == 43 and again.body.error_code == ErrorCode.NONE
        writer.close()


@pytest.mark.parametrize("size", [200 * 1024 * 1024, -5])
async def test_bad_frame_size_closes(size: int, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="mockbroker.server")
    async with MockCluster(brokers=1) as mc:
        reader, writer = await _connect(mc)
        writer.write(struct.pack(">i", size))
        await writer.drain()
        await _assert_closed(reader)
        assert any("bad frame" in r.getMessage() for r in caplog.records)
        await _api_versions_ok(mc)


async def test_garbage_then_normal_clients():
    async with MockCluster(brokers=1) as mc:
        for junk in (b"\x00\x00\x00\x03abc", b"\x00\x00\x00\x08" + b"\xff" * 8,
                     b"\x00\x00\x00\x0a\x00\x03\x00\x0c" + b"\x00" * 6):
            reader, writer = await _connect(mc)
            writer.write(junk)
            await writer.drain()
            await _assert_closed(reader)
        await _api_versions_ok(mc)


async def test_requests_answered_in_order_when_pipelined():
    async with MockCluster(brokers=1) as mc:
        reader, writer = await _connect(mc)
        for cid in range(20):
            await _send_frame(writer, encode_request(3, 9 if cid % 2 else 1, {"topics": []},
                                                     correlation_id=cid))
        seen = [decode_response(3, 9 if cid % 2 else 1, await _read_frame(reader)).correlation_id
                for cid in range(20)]
        assert seen == list(range(20))
        writer.close()


def _acks_zero_produce(partitions: list[int]) -> dict[str, object]:
    """A Produce body with acks=0 and a one-record batch for each of topic t's `partitions`."""
    from kafka_protocol_codec.records import RecordSpec, build_batch

    batch = build_batch([RecordSpec(key=b"k", value=b"v", timestamp=1000)])
    return {"acks": 0, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": p, "records": batch} for p in partitions]}]}


async def _produce_then_metadata(writer: asyncio.StreamWriter, body: dict[str, object],
                                 correlation_id: int) -> None:
    """The Produce, then a Metadata request (correlation id + 1) behind it."""
    await _send_frame(writer, encode_request(0, 9, body, correlation_id=correlation_id))
    await _send_frame(writer, encode_request(3, 12, {"topics": None},
                                             correlation_id=correlation_id + 1))


async def test_acks_zero_with_an_error_closes_the_connection(caplog: pytest.LogCaptureFixture):
    """Kafka's answer to a Produce with acks=0 that failed on any partition: no response, the
    connection closed (so the producer refreshes its metadata). The partitions that succeeded
    are appended; other connections stay open."""
    async with MockCluster(brokers=1) as mc:
        mc.cluster.create_topic("t", 1, 1)
        reader, writer = await _connect(mc)
        with caplog.at_level(logging.WARNING, logger="mockbroker"):
            await _produce_then_metadata(writer, _acks_zero_produce([0, 7]), 1)
            await _assert_closed(reader)  # nothing answered, not even the Metadata after it
        assert "t-7: UNKNOWN_TOPIC_OR_PARTITION" in caplog.text
        topic = mc.cluster.image.topics["t"]
        assert mc.cluster.log(topic.topic_id, 0).log_end_offset == 1  # t-0 was appended
        writer.close()
        await _api_versions_ok(mc)


async def test_acks_zero_with_an_injected_error_closes_the_connection(
        caplog: pytest.LogCaptureFixture):
    """An error injected into a Produce partition (control API) is answered as a real one:
    with acks=0, the connection closes after the other partitions are appended."""
    async with MockCluster(brokers=1) as mc:
        mc.cluster.create_topic("t", 2, 1)
        await mc.control.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", topic="t",
                                      partition=1, count=1)
        reader, writer = await _connect(mc)
        body = _acks_zero_produce([0, 1])
        with caplog.at_level(logging.INFO, logger="mockbroker"):
            await _produce_then_metadata(writer, body, 1)
            await _assert_closed(reader)  # nothing answered, not even the Metadata after it
        assert "t-1: NOT_LEADER_OR_FOLLOWER" in caplog.text
        topic = mc.cluster.image.topics["t"]
        assert [mc.cluster.log(topic.topic_id, p).log_end_offset for p in (0, 1)] == [1, 0]
        writer.close()
        # the fault fired once: the same request on a new connection is taken silently
        reader, writer = await _connect(mc)
        await _produce_then_metadata(writer, body, 3)
        assert decode_response(3, 12, await _read_frame(reader)).correlation_id == 4
        assert [mc.cluster.log(topic.topic_id, p).log_end_offset for p in (0, 1)] == [2, 1]
        writer.close()


async def test_acks_zero_gets_no_response():
    async with MockCluster(brokers=1) as mc:
        mc.cluster.create_topic("t", 1, 1)
        reader, writer = await _connect(mc)
        await _produce_then_metadata(writer, _acks_zero_produce([0]), 1)
        resp = decode_response(3, 12, await _read_frame(reader))
        assert resp.correlation_id == 2  # the produce got no response at all
        topic = mc.cluster.image.topics["t"]
        assert mc.cluster.log(topic.topic_id, 0).log_end_offset == 1
        writer.close()
