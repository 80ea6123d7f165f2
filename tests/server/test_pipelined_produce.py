"""Pipelined Produce requests over real sockets: answered in request order, and a server
close carries out no request not yet begun.

Produce requests are pipelined with other requests (Metadata, an idempotent producer's two
batches for one partition) in one write; every answer comes back in request order with the
offsets the log holds, and the records read back are exactly those sent.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from kafka_protocol_codec.api import decode_response, encode_request
from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.embedded import MockCluster
from tests.support.admin import create_topic
from tests.support.rawclient import ConnectionClosed, RawClient

PRODUCE, FETCH, METADATA = 0, 1, 3
TOPIC = "pipelined"


def produce_frame(correlation_id: int, value: bytes, *, producer_id: int = -1,
                  sequence: int = -1, version: int = 9, batches: int = 1) -> bytes:
    """`batches` > 1: as many batches of the producer, for partition 0 each."""
    partition_data = [{"index": 0, "records": build_batch(
        [RecordSpec(value=value)], producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=sequence + i if producer_id >= 0 else -1)} for i in range(batches)]
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": TOPIC, "partition_data": partition_data}]}
    frame = encode_request(PRODUCE, version, body, correlation_id=correlation_id,
                           client_id="pipelining-client")
    return struct.pack(">i", len(frame)) + frame


def metadata_frame(correlation_id: int) -> bytes:
    frame = encode_request(METADATA, 9, {"topics": [{"name": TOPIC}],
                                         "allow_auto_topic_creation": False,
                                         "include_topic_authorized_operations": False},
                           correlation_id=correlation_id, client_id="pipelining-client")
    return struct.pack(">i", len(frame)) + frame


async def read_values(client: RawClient) -> list[bytes | None]:
    body = await client.request(FETCH, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 24,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
            {"topic": TOPIC, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 24}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    records = body.responses[0].partitions[0].records
    return [r.value for b in split_batches(records) for r in decode_batch(b).records]


async def test_pipelined_answers_keep_request_order() -> None:
    async with MockCluster(brokers=1) as mc:
        port = mc.server.bound_ports[0]
        async with await RawClient.connect(port) as client:
            await create_topic(client, TOPIC, 1, 1)
            # 0-2 plain, 3 Metadata, 4 plain, 5 an idempotent producer's two batches for one
            # partition (as Kafka, only the last is written), 6-7 plain
            plan: list[tuple[int, str, bytes]] = []
            data = b""
            for corr in range(100, 108):
                kind = {103: "metadata", 105: "idempotent twice"}.get(corr, "plain")
                value = b"value-%d" % corr
                if kind == "metadata":
                    data += metadata_frame(corr)
                elif kind == "idempotent twice":
                    data += produce_frame(corr, value, producer_id=0, sequence=0, batches=2)
                else:
                    data += produce_frame(corr, value)
                plan.append((corr, kind, value))
            # of the idempotent batches the last (sequence 1, which a broker accepts from a
            # producer it does not know yet) is written, in its place
            await client.send_raw(data)
            offsets = []
            for corr, kind, _ in plan:
                frame = await client.read_frame()
                api = METADATA if kind == "metadata" else PRODUCE
                response = decode_response(api, 9, frame)
                assert response.correlation_id == corr
                if kind != "metadata":
                    for part in response.body.responses[0].partition_responses:
                        assert part.error_code == 0
                        offsets.append(part.base_offset)
            assert offsets == list(range(7))
            expected = [v for _, k, v in plan if k != "metadata"]
            assert await read_values(client) == expected


async def test_a_server_close_carries_out_no_request_not_yet_begun(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The server closes a connection (close_for_server) after a read brought requests but
    before its task begins them: none is carried out. Appending and then finding the
    connection closed would leave a request unanswered, and a client that sends it again
    would have it appended twice."""
    from mockbroker.server.frame_protocol import FrameProtocol

    async with MockCluster(brokers=1) as mc:
        port = mc.server.bound_ports[0]
        async with await RawClient.connect(port) as client:
            await create_topic(client, TOPIC, 1, 1)
            await client.send_raw(produce_frame(1, b"before"))
            await client.read_frame()
            closing: list[Any] = [info for info in mc.server.hooks.connections.values()]
            wake = FrameProtocol._wake

            def close_then_wake(self: FrameProtocol) -> None:
                while closing:  # as the server's close arriving before the task runs
                    closing.pop().close("closed by the test")
                wake(self)

            monkeypatch.setattr(FrameProtocol, "_wake", close_then_wake)
            # the task is woken for these three, and the server closes first
            await client.send_raw(produce_frame(2, b"never")
                                  + produce_frame(3, b"never either", producer_id=0,
                                                  sequence=0, batches=2)
                                  + produce_frame(4, b"nor this"))
            with pytest.raises(ConnectionClosed):
                await client.read_frame()  # closed: nothing answered
        monkeypatch.undo()
        async with await RawClient.connect(port) as reader:
            assert await read_values(reader) == [b"before"]
