"""The request trace: records with the decoded fields, the log lines (text and JSON, filtered
by API), the control API's trace verbs (Python and GET /trace), and tracing off.

Requests are sent with the raw codec client, so each test knows exactly what went over the
wire (API, version, correlation id, client id) and can compare the records with it.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import struct
import urllib.error
import urllib.request
from typing import Any

import pytest
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker import logs
from mockbroker.control import ControlError
from mockbroker.embedded import MockCluster
from mockbroker.server.trace import Tracer
from tests.support.rawclient import connect_broker

PRODUCE, METADATA, API_VERSIONS, LIST_OFFSETS = 0, 3, 18, 2
TOPIC = "traced"


def produce_body(acks: int = -1, partition: int = 0) -> dict[str, Any]:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 5000,
            "topic_data": [{"name": TOPIC, "partition_data": [
                {"index": partition, "records": build_batch([RecordSpec(value=b"v")])}]}]}


def metadata_body() -> dict[str, Any]:
    return {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}


async def test_records_carry_the_decoded_fields() -> None:
    async with MockCluster(brokers=3, trace_buffer=100) as mc:
        await mc.control.create_topic(TOPIC, partitions=1)
        leader = mc.cluster.image.partition(TOPIC, 0).leader
        await mc.control.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=1)
        async with await connect_broker(mc, leader, client_id="tracer-test") as client:
            await client.request(METADATA, 12, metadata_body())
            await client.request(PRODUCE, 9, produce_body())  # the injected error
            await client.request(PRODUCE, 9, produce_body())
        result = await mc.control.trace()
    assert result["enabled"] and result["buffer"] == 100 and result["last_seq"] == 3
    metadata, failed, ok = result["requests"]
    assert [r["seq"] for r in result["requests"]] == [1, 2, 3]
    assert (metadata["api"], metadata["api_key"], metadata["version"]) == ("Metadata", 3, 12)
    assert (metadata["correlation_id"], failed["correlation_id"], ok["correlation_id"]) == \
        (1, 2, 3)
    for record in (metadata, failed, ok):
        assert record["client_id"] == "tracer-test" and record["broker"] == leader
        assert record["peer"].startswith("127.0.0.1:") and record["topics"] == [TOPIC]
        assert 0 <= record["latency_ms"] < 5000 and record["outcome"] == "ok"
    assert failed["errors"] == {"NOT_LEADER_OR_FOLLOWER": 1} and ok["errors"] == {}
    assert metadata["errors"] == {}


async def test_outcomes_other_than_an_answer() -> None:
    async with MockCluster(brokers=1, trace_buffer=100) as mc:
        await mc.control.create_topic(TOPIC, partitions=1)
        async with await connect_broker(mc, 0) as client:  # acks=0: no response
            await client.send(PRODUCE, 9, produce_body(acks=0))
            await client.request(API_VERSIONS, 0)
        await mc.control.inject_error("ListOffsets", "disconnect", count=1)
        async with await connect_broker(mc, 0) as client:
            await client.send(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0,
                                                "topics": []})
            assert await client.is_closed()
        async with await connect_broker(mc, 0) as client:  # unadvertised version
            header = struct.pack(">hhih", METADATA, 99, 5, 1) + b"x"
            await client.send_raw(struct.pack(">i", len(header)) + header)
            assert await client.is_closed()
        async with await connect_broker(mc, 0) as client:  # ApiVersions too new
            header = struct.pack(">hhih", API_VERSIONS, 99, 6, 1) + b"x" + bytes(8)
            await client.send_raw(struct.pack(">i", len(header)) + header)
            await client.read_frame()
        for _ in range(100):  # the closes are noted when the connections end
            records = (await mc.control.trace())["requests"]
            if len(records) == 5:
                break
            await asyncio.sleep(0.01)
    produce, versions, dropped, closed, too_new = records
    assert (produce["api"], produce["outcome"]) == ("Produce", "no response")
    assert versions["outcome"] == "ok"
    assert (dropped["api"], dropped["outcome"]) == ("ListOffsets", "injected disconnect")
    assert closed["api"] == "Metadata" and closed["outcome"].startswith(
        "closed: version not in advertised range")
    assert too_new["errors"] == {"UNSUPPORTED_VERSION": 1}


async def test_tail_filters_and_since() -> None:
    tracer = Tracer(3)
    async with MockCluster(brokers=1) as mc:
        mc.server.hooks.trace = tracer
        async with await connect_broker(mc, 0) as client:
            for _ in range(2):
                await client.request(API_VERSIONS, 0)
                await client.request(METADATA, 1, {"topics": []})
    assert tracer.last_seq == 4 and [r.seq for r in tracer.records] == [2, 3, 4]  # ring of 3
    assert [r.seq for r in tracer.tail(None, apis=[METADATA])] == [2, 4]
    assert [r.seq for r in tracer.tail(1)] == [4]
    assert [r.seq for r in tracer.tail(None, since=2)] == [3, 4]
    with pytest.raises(ValueError, match="trace buffer"):
        Tracer(0)


async def test_tracing_off_records_nothing() -> None:
    async with MockCluster(brokers=1) as mc:
        assert mc.server.hooks.trace is None
        async with await connect_broker(mc, 0) as client:
            await client.request(API_VERSIONS, 0)
        assert await mc.control.trace() == {"enabled": False, "last_seq": 0, "requests": []}


async def test_start_and_stop_trace_verbs() -> None:
    async with MockCluster(brokers=1) as mc:
        started = await mc.control.start_trace(buffer=10, api="Produce,metadata")
        assert started == {"enabled": True, "buffer": 10, "log": False,
                           "api": ["Produce", "Metadata"], "last_seq": 0}
        async with await connect_broker(mc, 0) as client:
            await client.request(API_VERSIONS, 0)
        again = await mc.control.start_trace(buffer=20)  # settings change, history stays
        assert again["last_seq"] == 1 and again["buffer"] == 20
        assert [r["api"] for r in (await mc.control.trace(api=["ApiVersions"]))["requests"]] \
            == ["ApiVersions"]
        assert await mc.control.stop_trace() == {"enabled": False}
        assert mc.server.hooks.trace is None
        for bad in ({"buffer": 0}, {"log": "yes"}, {"api": "Nope"}, {"api": []}):
            with pytest.raises(ControlError) as info:
                await mc.control.start_trace(**bad)
            assert info.value.status == 400
        with pytest.raises(ControlError):
            await mc.control.trace(n=0)


def _log_lines(fmt: str, trace_api: list[str] | None) -> list[str]:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, logging.getLogger("mockbroker.trace").level)
    logs.setup("WARNING", fmt, trace=True, stream=stream)
    try:
        async def run() -> None:
            async with MockCluster(brokers=1, trace=True, trace_api=trace_api) as mc:
                await mc.control.create_topic(TOPIC, partitions=1)
                async with await connect_broker(mc, 0, client_id="logged") as client:
                    await client.request(API_VERSIONS, 0)
                    await client.request(PRODUCE, 9, produce_body())

        asyncio.run(run())
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
        logging.getLogger("mockbroker.trace").setLevel(saved[2])
    return [line for line in stream.getvalue().splitlines() if "mockbroker.trace" in line]


def test_pretty_log_lines_filtered_by_api() -> None:
    lines = _log_lines("pretty", ["Produce"])
    assert len(lines) == 1, lines
    assert " INFO mockbroker.trace: broker=0 Produce v9 corr=2 client='logged' " in lines[0]
    assert f"topics={TOPIC}" in lines[0] and lines[0].endswith("ms")


def test_json_log_lines() -> None:
    lines = _log_lines("json", None)
    assert len(lines) == 2, lines
    versions, produce = (json.loads(line) for line in lines)
    assert versions["api"] == "ApiVersions" and versions["version"] == 0
    assert produce["level"] == "INFO" and produce["logger"] == "mockbroker.trace"
    assert produce["ts"].endswith("Z") and produce["msg"].startswith("broker=0 Produce v9")
    assert (produce["api"], produce["api_key"], produce["version"], produce["correlation_id"],
            produce["client_id"], produce["broker"], produce["errors"]) == \
        ("Produce", 0, 9, 2, "logged", 0, {})
    assert isinstance(produce["latency_ms"], float)


async def test_get_trace_over_http() -> None:
    async with MockCluster(brokers=1, control_port=0, trace_buffer=50) as mc:
        async with await connect_broker(mc, 0) as client:
            for _ in range(3):
                await client.request(API_VERSIONS, 0)
            await client.request(METADATA, 1, {"topics": []})
        url = mc.control_url

        def get(path: str) -> tuple[int, Any]:
            try:
                with urllib.request.urlopen(f"{url}{path}", timeout=5) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as err:
                return err.code, json.loads(err.read())

        status, body = await asyncio.to_thread(get, "/trace?n=2")
        assert status == 200 and [r["api"] for r in body["requests"]] == ["ApiVersions",
                                                                          "Metadata"]
        status, body = await asyncio.to_thread(get, "/trace?api=Metadata&n=all")
        assert [r["seq"] for r in body["requests"]] == [4]
        status, body = await asyncio.to_thread(get, "/trace?since=3")
        assert [r["seq"] for r in body["requests"]] == [4]
        for bad in ("/trace?n=x", "/trace?api=Nope", "/trace?foo=1", "/trace?n=0"):
            status, body = await asyncio.to_thread(get, bad)
            assert status == 400 and "error" in body, (bad, body)


async def test_other_log_lines_are_structured_too(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mockbroker.server")
    async with MockCluster(brokers=1) as mc:
        async with await connect_broker(mc, 0, client_id="bad") as client:
            header = struct.pack(">hhih", METADATA, 99, 5, 3) + b"bad"
            await client.send_raw(struct.pack(">i", len(header)) + header)
            assert await client.is_closed()
    record = next(r for r in caplog.records if "closing connection" in r.getMessage())
    line = json.loads(logs.JSONFormatter().format(record))
    assert (line["level"], line["logger"], line["broker"], line["api_key"], line["version"]) \
        == ("WARNING", "mockbroker.server", 0, METADATA, 99)
    assert line["reason"].startswith("version not in advertised range")
    assert line["peer"].startswith("127.0.0.1:") and "closing connection" in line["msg"]
