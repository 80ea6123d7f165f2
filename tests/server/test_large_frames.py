"""Large Produce frames go through the connection's buffered read path intact.

A frame of LARGE_FRAME bytes or more is received into a buffer of its own size (see
mockbroker.server.frame_protocol.FrameProtocol and FrameReader.get_buffer); small frames
pipelined before and after it on the same connection share the read area. This checks that
every record comes back exactly, in order, and that Fetch answers carrying those batches by
reference (BufferList) are framed correctly, with the asyncio event loop of the tests.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from kafka_protocol_codec.framing import LARGE_FRAME
from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.embedded import MockCluster
from tests.support.admin import create_topic, running_cluster
from tests.support.rawclient import connect_broker

PRODUCE, FETCH = 0, 1


async def cluster_of_one() -> AsyncIterator[MockCluster]:
    async with running_cluster(brokers=1) as cluster:
        yield cluster


def produce_body(topic: str, batch: bytes) -> dict[str, object]:
    return {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


def fetch_body(topic: str, offset: int) -> dict[str, object]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 50 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                {"topic": topic, "partitions": [
                    {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                     "log_start_offset": -1, "partition_max_bytes": 8 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


async def test_large_and_small_produce_frames_pipelined_round_trip() -> None:
    values = [b"small-0", os.urandom(3 * LARGE_FRAME), b"small-1", os.urandom(LARGE_FRAME),
              os.urandom((1 << 20) - 200), b"small-2"]  # under max.message.bytes
    async for mc in cluster_of_one():
        async with await connect_broker(mc, 0) as client:
            await create_topic(client, "big", 1, 1)
            sent = [await client.send(PRODUCE, 7, produce_body(
                "big", build_batch([RecordSpec(value=v)]))) for v in values]
            offsets = []
            for correlation_id in sent:
                response = await client.receive(PRODUCE, 7, correlation_id)
                part = response.body.responses[0].partition_responses[0]
                assert part.error_code == 0
                offsets.append(part.base_offset)
            assert offsets == list(range(len(values)))
            for version in (11, 12):  # classic and compact records fields
                body = await client.request(FETCH, version, fetch_body("big", 0))
                records = body.responses[0].partitions[0].records
                got = [r.value for b in split_batches(records)
                       for r in decode_batch(b).records]
                assert got == values
