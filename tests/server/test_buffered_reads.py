"""Connections receive into the FrameReader's own buffers on every loop and listener.

mockbroker.server.frame_protocol.FrameProtocol is a BufferedProtocol and no asyncio.Protocol,
so uvloop's transports, like asyncio's, call get_buffer/buffer_updated instead of handing
over bytes (data_received), over TLS too, and every request reaches the connection as a
bytearray of its own. Each scenario runs an in-process cluster on a fresh uvloop loop and on
asyncio's own, pipelines small and large Produce frames, reads every record back, and checks
the protocol's side of StreamWriter (drain, wait_closed) and a client's half-close.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import ssl
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest
from kafka_protocol_codec.framing import LARGE_FRAME, FrameTooLarge
from kafka_protocol_codec.record_batches import split_batches
from kafka_protocol_codec.records import RecordSpec, build_batch, decode_batch

from mockbroker.embedded import MockCluster
from mockbroker.server.connection import Connection
from mockbroker.server.frame_protocol import FrameProtocol
from tests.support.admin import create_topic
from tests.support.rawclient import RawClient

PRODUCE, FETCH, API_VERSIONS = 0, 1, 18
SCENARIO_TIMEOUT = 60.0
Scenario = Callable[[], Coroutine[Any, Any, None]]


@pytest.fixture(params=["uvloop", "asyncio"])
def run_on_loop(request: pytest.FixtureRequest) -> Iterator[Callable[[Scenario], None]]:
    """Run a scenario on a fresh loop of the kind asked for; nothing may reach the loop's
    exception handler."""
    factory: Callable[[], asyncio.AbstractEventLoop] = (
        importlib.import_module("uvloop").new_event_loop if request.param == "uvloop"
        else asyncio.new_event_loop)

    def run(scenario: Scenario) -> None:
        unhandled: list[dict[str, Any]] = []
        loop = factory()
        loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
        try:
            loop.run_until_complete(asyncio.wait_for(scenario(), SCENARIO_TIMEOUT))
        finally:
            loop.close()
        assert not unhandled, [(c.get("message"), repr(c.get("exception"))) for c in unhandled]

    yield run


@pytest.fixture
def received(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """What the broker's protocols and connections were handed: reads as bytes objects
    (data_received), reads into buffers (buffer_updated), and the frames' types."""
    seen: dict[str, list[Any]] = {"data_received": [], "buffer_updated": [], "frames": []}
    data_received, buffer_updated = FrameProtocol.data_received, FrameProtocol.buffer_updated
    handle_frame = Connection.handle_frame

    def on_data(self: FrameProtocol, data: Any) -> None:
        seen["data_received"].append(len(data))
        data_received(self, data)

    def on_buffer(self: FrameProtocol, nbytes: int) -> None:
        seen["buffer_updated"].append(nbytes)
        buffer_updated(self, nbytes)

    async def on_frame(self: Connection, frame: Any, span: Any = None) -> None:
        seen["frames"].append(type(frame))
        await handle_frame(self, frame, span)

    monkeypatch.setattr(FrameProtocol, "data_received", on_data)
    monkeypatch.setattr(FrameProtocol, "buffer_updated", on_buffer)
    monkeypatch.setattr(Connection, "handle_frame", on_frame)
    return seen


def produce_body(topic: str, batch: bytes) -> dict[str, Any]:
    return {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


def fetch_body(topic: str) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 64 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                {"topic": topic, "partitions": [
                    {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                     "log_start_offset": -1, "partition_max_bytes": 64 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def client_context(ca: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False  # the generated certificate names localhost; we dial 127.0.0.1
    return context


async def produce_and_read_back(mc: MockCluster, context: ssl.SSLContext | None) -> None:
    values = [b"small-0", os.urandom(3 * LARGE_FRAME), b"small-1"] + \
        [os.urandom(20_000) for _ in range(40)] + [os.urandom((1 << 20) - 200)] * 12
    port = mc.server.bound_ports[0]
    async with await RawClient.connect(port, ssl=context) as client:
        await create_topic(client, "reads", 1, 1)
        sent = [await client.send(PRODUCE, 7, produce_body(
            "reads", build_batch([RecordSpec(value=v)]))) for v in values]
        for offset, correlation_id in enumerate(sent):
            part = (await client.receive(PRODUCE, 7, correlation_id)).body \
                .responses[0].partition_responses[0]
            assert (part.error_code, part.base_offset) == (0, offset)
        # about 12 MiB in one answer: more than the write high water, so the connection
        # drains while the client reads
        body = await client.request(FETCH, 12, fetch_body("reads"), timeout=30.0)
        records = body.responses[0].partitions[0].records
        assert [r.value for b in split_batches(records) for r in decode_batch(b).records] \
            == values


@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "tls"])
def test_reads_go_into_our_buffers(run_on_loop: Callable[[Scenario], None], tls: bool,
                                   received: dict[str, list[Any]]) -> None:
    async def scenario() -> None:
        listeners = {"listeners": "SSL://127.0.0.1:0"} if tls else {}
        async with MockCluster(brokers=1, **listeners) as mc:  # type: ignore[arg-type]
            context = None
            if tls:
                assert mc.tls_files is not None and mc.tls_files.ca is not None
                context = client_context(mc.tls_files.ca)
            await produce_and_read_back(mc, context)

    run_on_loop(scenario)
    assert received["data_received"] == []
    assert sum(received["buffer_updated"]) > 12 << 20  # every produced byte
    assert received["frames"] and set(received["frames"]) == {bytearray}


def test_a_half_closed_client_still_gets_its_answer(
        run_on_loop: Callable[[Scenario], None]) -> None:
    """The end of a client's stream (eof_received) keeps the connection open for the answer
    to what it sent before; then the broker closes."""
    async def scenario() -> None:
        async with MockCluster(brokers=1) as mc:
            client = await RawClient.connect(mc.server.bound_ports[0])
            async with client:
                correlation_id = await client.send(API_VERSIONS, 3, {
                    "client_software_name": "half", "client_software_version": "1"})
                client.writer.write_eof()
                response = await client.receive(API_VERSIONS, 3, correlation_id)
                assert response.body.error_code == 0
                assert await client.is_closed()

    run_on_loop(scenario)


class _Transport(asyncio.Transport):
    """Records what the protocol asks of its transport."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        self.calls.append("pause_reading")

    def resume_reading(self) -> None:
        self.calls.append("resume_reading")

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        self.calls.append("close")


def test_drain_waits_for_resume_writing_and_fails_once_lost() -> None:
    async def scenario() -> None:
        connected: list[asyncio.StreamWriter] = []

        async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            connected.append(writer)

        protocol = FrameProtocol(1 << 20, accept)
        protocol.connection_made(_Transport())
        await asyncio.sleep(0)  # the connection callback runs as a task
        writer = connected[0]
        await writer.drain()  # not paused: returns at once
        protocol.pause_writing()
        drain = asyncio.ensure_future(writer.drain())
        await asyncio.sleep(0)
        assert not drain.done()
        protocol.resume_writing()
        await asyncio.wait_for(drain, 5.0)
        protocol.pause_writing()
        drain = asyncio.ensure_future(writer.drain())
        await asyncio.sleep(0)
        closed = asyncio.ensure_future(writer.wait_closed())
        protocol.connection_lost(ConnectionResetError("reset by peer"))
        with pytest.raises(ConnectionResetError, match="reset by peer"):
            await asyncio.wait_for(drain, 5.0)
        with pytest.raises(ConnectionResetError):
            await asyncio.wait_for(closed, 5.0)
        with pytest.raises(ConnectionResetError, match="Connection lost"):
            await writer.drain()

    asyncio.run(scenario())


def test_reading_pauses_over_the_high_water_and_resumes_when_taken() -> None:
    async def scenario() -> None:
        async def accept(_reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
            return None

        protocol = FrameProtocol(1 << 20, accept)
        transport = _Transport()
        protocol.connection_made(transport)
        frame = (1000).to_bytes(4, "big") + bytes(1000)
        fed = 0
        while "pause_reading" not in transport.calls and fed < 10_000:
            target = protocol.get_buffer(-1)
            chunk = frame * (len(target) // len(frame))
            target[:len(chunk)] = chunk
            protocol.buffer_updated(len(chunk))
            fed += 1
        assert transport.calls == ["pause_reading"]
        assert protocol.frames.buffered > 4 << 20
        taken = 0
        while protocol.next_frame() is not None:
            taken += 1
        assert transport.calls == ["pause_reading", "resume_reading"]
        assert taken * len(frame) > 4 << 20 and protocol.frames.buffered == 0

    asyncio.run(scenario())


def test_a_bad_frame_stops_reading_for_good_after_the_frames_before_it() -> None:
    """The frames before a bad size prefix are still handed out, but reading never resumes:
    the transport would ask the poisoned reader for a buffer, which raises."""
    async def scenario() -> None:
        async def accept(_reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
            return None

        protocol = FrameProtocol(1000, accept)
        transport = _Transport()
        protocol.connection_made(transport)
        data = ((3).to_bytes(4, "big") + b"abc") * 2 + (5000).to_bytes(4, "big")
        target = protocol.get_buffer(-1)
        target[:len(data)] = data
        protocol.buffer_updated(len(data))
        assert transport.calls == ["pause_reading"]
        assert protocol.next_frame() == b"abc" and protocol.next_frame() == b"abc"
        with pytest.raises(FrameTooLarge):
            protocol.next_frame()
        assert transport.calls == ["pause_reading"]

    asyncio.run(scenario())
