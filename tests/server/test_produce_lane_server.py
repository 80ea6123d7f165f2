"""The plain Produce lane over real sockets: answered in the read callback, in request order.

A connection waiting for bytes lets its FrameProtocol answer the plain Produce frames a read
completes right there (handlers/produce_lane.py). These tests pipeline plain Produce requests
with requests the lane must leave to the connection's task (Metadata, an idempotent
producer's two batches for one partition, a transactional id) in one write, and check that
every answer comes back in request order with the offsets the log holds; that an installed
fault or a trace turns the lane off; and that the records read back are exactly those sent.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from kafka_protocol_codec.api import decode_response, encode_request
from kafka_protocol_codec.plain_produce import parse_plain_produce
from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.embedded import MockCluster
from mockbroker.handlers.produce_lane import PlainProduceLane
from tests.support.admin import create_topic
from tests.support.rawclient import ConnectionClosed, RawClient

pytestmark = pytest.mark.skipif(parse_plain_produce is None,
                                reason="compiled plain Produce codec not built")

PRODUCE, FETCH, METADATA = 0, 1, 3
TOPIC = "lane"


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
                           client_id="lane-client")
    return struct.pack(">i", len(frame)) + frame


def metadata_frame(correlation_id: int) -> bytes:
    frame = encode_request(METADATA, 9, {"topics": [{"name": TOPIC}],
                                         "allow_auto_topic_creation": False,
                                         "include_topic_authorized_operations": False},
                           correlation_id=correlation_id, client_id="lane-client")
    return struct.pack(">i", len(frame)) + frame


def lane_of(mc: MockCluster) -> PlainProduceLane:
    lane = mc.server.produce_lane(mc.cluster.brokers[0])
    assert lane is not None
    return lane


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


async def test_pipelined_answers_keep_request_order_across_lane_and_task() -> None:
    async with MockCluster(brokers=1) as mc:
        port = mc.server.bound_ports[0]
        async with await RawClient.connect(port) as client:
            await create_topic(client, TOPIC, 1, 1)
            # 0-2 plain, 3 Metadata (the task), 4 plain, 5 an idempotent producer's two
            # batches for one partition (the task: the lane takes one per partition; as
            # Kafka, only the last is written), 6-7 plain
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
            # the idempotent batches (the last, sequence 1, a broker accepts from a producer
            # it does not know yet) go through the general path, in their place
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
        assert lane_of(mc).taken == 6  # the plain ones


async def test_faults_and_traces_turn_the_lane_off() -> None:
    async with MockCluster(brokers=1) as mc:
        port = mc.server.bound_ports[0]
        async with await RawClient.connect(port) as client:
            await create_topic(client, TOPIC, 1, 1)
            await mc.control.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=1)
            await client.send_raw(produce_frame(1, b"refused") + produce_frame(2, b"kept"))
            errors = []
            for corr in (1, 2):
                response = decode_response(PRODUCE, 9, await client.read_frame())
                assert response.correlation_id == corr
                errors.append(response.body.responses[0].partition_responses[0].error_code)
            assert errors == [6, 0]  # NOT_LEADER_OR_FOLLOWER once, then the fault is spent
            taken_before_trace = lane_of(mc).taken
            await mc.control.start_trace()
            await client.send_raw(produce_frame(3, b"traced"))
            response = decode_response(PRODUCE, 9, await client.read_frame())
            assert response.body.responses[0].partition_responses[0].error_code == 0
            traced = await mc.control.trace(api="Produce")
            assert [r["correlation_id"] for r in traced["requests"]] == [3]
            assert lane_of(mc).taken == taken_before_trace  # the traced one went the task's way
            await mc.control.stop_trace()
            await client.send_raw(produce_frame(4, b"plain again"))
            await client.read_frame()
            assert lane_of(mc).taken == taken_before_trace + 1
            assert await read_values(client) == [b"kept", b"traced", b"plain again"]


@pytest.mark.parametrize("version", [3, 7, 8, 9, 10, 11])
async def test_every_version_is_answered_by_the_lane(version: int) -> None:
    async with MockCluster(brokers=1) as mc:
        port = mc.server.bound_ports[0]
        async with await RawClient.connect(port) as client:
            await create_topic(client, TOPIC, 1, 1)
            await client.send_raw(b"".join(produce_frame(c, b"v%d" % c, version=version)
                                           for c in range(5)))
            for corr in range(5):
                response = decode_response(PRODUCE, version, await client.read_frame())
                part: Any = response.body.responses[0].partition_responses[0]
                assert (response.correlation_id, part.error_code, part.base_offset) == \
                    (corr, 0, corr)
            assert await read_values(client) == [b"v%d" % c for c in range(5)]
        assert lane_of(mc).taken == 5


async def test_a_woken_task_is_not_overtaken_by_a_later_read() -> None:
    """A read completes A (answered in the callback) and B (declined: kept for the task,
    which is woken); a second read completes C before the task runs. C must wait for the
    task too, after B: answering it in the callback would answer out of order, and a second
    declined frame would have replaced B, which then was never answered."""
    from mockbroker.server.frame_protocol import FrameProtocol

    async def never(*_args: Any) -> None:
        raise AssertionError("no connection callback in this test")

    protocol = FrameProtocol(1 << 20, never)
    answered: list[bytes] = []

    def answer_now(frame: bytes | bytearray) -> bool:
        if bytes(frame).startswith(b"plain"):
            answered.append(bytes(frame))
            return True
        return False

    protocol.answer_now = answer_now

    def frames(*bodies: bytes) -> bytes:
        return b"".join(struct.pack(">i", len(b)) + b for b in bodies)

    def receive(data: bytes) -> None:
        buffer = protocol.get_buffer(-1)
        buffer[:len(data)] = data
        protocol.buffer_updated(len(data))

    waiting = asyncio.ensure_future(protocol.data_arrived())
    await asyncio.sleep(0)  # the task now waits for bytes
    receive(frames(b"plain-A", b"other-B"))
    receive(frames(b"plain-C", b"other-D"))
    assert answered == [b"plain-A"]
    await waiting
    left = []
    while (frame := protocol.next_frame()) is not None:
        left.append(bytes(frame))
    assert left == [b"other-B", b"plain-C", b"other-D"]


async def test_the_answers_of_one_read_are_written_together() -> None:
    """The answers the read callback gives are held and written once per read, after the
    last frame it answers and before the task is woken for a frame it declines (so they go
    out ahead of that frame's answer); a read it answers nothing of writes nothing."""
    from mockbroker.server.frame_protocol import FrameProtocol

    async def never(*_args: Any) -> None:
        raise AssertionError("no connection callback in this test")

    protocol = FrameProtocol(1 << 20, never)
    held: list[bytes] = []
    writes: list[list[bytes]] = []

    def answer_now(frame: bytes | bytearray) -> bool:
        if bytes(frame).startswith(b"plain"):
            held.append(b"answer-" + bytes(frame))
            return True
        return False

    def flush_answers() -> None:
        writes.append(held[:])
        held.clear()

    protocol.answer_now = answer_now
    protocol.flush_answers = flush_answers

    def receive(*bodies: bytes) -> None:
        data = b"".join(struct.pack(">i", len(b)) + b for b in bodies)
        buffer = protocol.get_buffer(-1)
        buffer[:len(data)] = data
        protocol.buffer_updated(len(data))

    waiting = asyncio.ensure_future(protocol.data_arrived())
    await asyncio.sleep(0)
    receive(b"plain-1", b"plain-2", b"plain-3")
    assert writes == [[b"answer-plain-1", b"answer-plain-2", b"answer-plain-3"]]
    assert not waiting.done()  # all answered: the task sleeps on
    receive(b"plain-4", b"other-5", b"plain-6")
    assert writes[1:] == [[b"answer-plain-4"]]  # written before the task takes other-5
    await waiting
    assert [bytes(f) for f in iter(protocol.next_frame, None)] == [b"other-5", b"plain-6"]
    waiting = asyncio.ensure_future(protocol.data_arrived())
    await asyncio.sleep(0)
    receive(b"other-7")
    assert len(writes) == 2  # nothing answered in this read: no write
    await waiting


async def test_a_server_close_carries_out_no_request_not_yet_begun(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The server closes a connection (close_for_server) while its task has been woken for a
    Produce the read callback declined, with a plain Produce behind it: neither is carried
    out. Appending and then finding the connection closed would leave a request unanswered,
    and a client that sends it again would have it appended twice."""
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
            # a plain Produce (answered in the read callback), a Produce the lane declines
            # (an idempotent producer's two batches for one partition: the task is woken, and
            # the server closes now), another plain Produce
            await client.send_raw(produce_frame(2, b"answered")
                                  + produce_frame(3, b"never", producer_id=0, sequence=0,
                                                  batches=2)
                                  + produce_frame(4, b"never either"))
            response = decode_response(PRODUCE, 9, await client.read_frame())
            assert response.correlation_id == 2
            with pytest.raises(ConnectionClosed):
                await client.read_frame()  # closed: nothing more answered
        monkeypatch.undo()
        async with await RawClient.connect(port) as reader:
            assert await read_values(reader) == [b"before", b"answered"]
