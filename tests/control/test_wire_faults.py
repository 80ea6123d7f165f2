"""Connection-level faults, seen on the wire by the raw codec client.

Each fault is injected through the Python control API on an in-process MockCluster and the
raw client sees exactly what it does to the bytes: no answer, a TCP reset, half a frame, a
paced answer that is still byte-for-byte right, a Fetch with a batch twice or with a broken
CRC, and a broker port that refuses connections. Bad arguments are refused with a reason and
change nothing.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kafka_protocol_codec.record_batches import split_batches, verify_crc
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker.control import ControlError
from mockbroker.embedded import MockCluster
from tests.support.rawclient import RawClient, connect_broker

PRODUCE, FETCH, METADATA, API_VERSIONS = 0, 1, 3, 18
TOPIC = "wire"
API_VERSIONS_BODY = {"client_software_name": "t", "client_software_version": "1"}
ANSWER_TIMEOUT = 1.0  # what an answer that never comes is given (it would take milliseconds)


@pytest.fixture
async def mc() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=2) as cluster:
        await cluster.control.create_topic(TOPIC, partitions=1, replication_factor=1)
        yield cluster


async def produce_batches(mc: MockCluster, batches: int, records: int = 3,
                          value_size: int = 10) -> list[bytes]:
    """Produce `batches` batches to partition 0; the values, in offset order."""
    leader = mc.cluster.image.partition(TOPIC, 0).leader
    values = []
    async with await connect_broker(mc, leader) as client:
        for b in range(batches):
            batch_values = [f"{b}-{i}-".encode().ljust(value_size, b"x") for i in range(records)]
            values += batch_values
            body = await client.request(PRODUCE, 9, {
                "transactional_id": None, "acks": -1, "timeout_ms": 5000,
                "topic_data": [{"name": TOPIC, "partition_data": [
                    {"index": 0, "records": build_batch(
                        [RecordSpec(value=v) for v in batch_values])}]}]})
            assert body.responses[0].partition_responses[0].error_code == 0
    return values


def fetch_body(offset: int = 0) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                 "last_fetched_epoch": -1, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 20}]}]}


async def fetch_records(client: RawClient) -> bytes:
    body = await client.request(FETCH, 12, fetch_body())
    part = body.responses[0].partitions[0]
    assert part.error_code == 0
    return bytes(part.records)


async def connection_of(mc: MockCluster, client: RawClient) -> dict[str, Any]:
    """The `connections` entry of a raw client's connection (by its local port)."""
    port = client.writer.get_extra_info("sockname")[1]
    found = [c for c in (await mc.control.connections())["connections"]
             if c["client_port"] == port]
    assert len(found) == 1, found
    return found[0]


# -- listing connections ----------------------------------------------------------------------

async def test_connections_are_listed_with_ids_and_client_ids(mc: MockCluster) -> None:
    async with await connect_broker(mc, 1, client_id="lister") as client:
        await client.request(API_VERSIONS, 3, API_VERSIONS_BODY)
        conn = await connection_of(mc, client)
        assert (conn["broker"], conn["client_id"], conn["client_host"], conn["requests"],
                conn["hung"]) == (1, "lister", "127.0.0.1", 1, False)
        assert conn["broker_port"] == mc.cluster.brokers[1].port
        assert conn["bytes_out"] > 0
        state = await mc.control.state()
        assert conn["id"] in [c["id"] for c in state["connections"]]
        assert (await mc.control.connections(broker=0))["connections"] == []
    for _ in range(100):  # the listing drops it once the broker has seen the close
        if not (await mc.control.connections())["connections"]:
            break
        await asyncio.sleep(0.02)
    assert (await mc.control.connections())["connections"] == []


# -- hang ---------------------------------------------------------------------------------------

async def test_hang_reads_and_never_answers_that_client(mc: MockCluster) -> None:
    fault = await mc.control.inject_connection_fault("hang", client_id="stuck", count=1)
    async with await connect_broker(mc, 0, client_id="other") as other:
        await other.request(API_VERSIONS, 3, API_VERSIONS_BODY)  # another client: answered
    async with await connect_broker(mc, 0, client_id="stuck") as stuck:
        await stuck.send(API_VERSIONS, 3, API_VERSIONS_BODY)
        await stuck.send(METADATA, 9, {"topics": None, "allow_auto_topic_creation": False})
        with pytest.raises(TimeoutError):
            await stuck.read_frame(timeout=ANSWER_TIMEOUT)
        conn = await connection_of(mc, stuck)
        assert (conn["hung"], conn["requests"]) == (True, 2)  # both read, none answered
        assert (await mc.control.state())["faults"] == []  # count 1: used up by the first
    async with await connect_broker(mc, 0, client_id="stuck") as fresh:  # a new connection
        await fresh.request(API_VERSIONS, 3, API_VERSIONS_BODY)
    assert fault["kind"] == "hang" and fault["client_id"] == "stuck"


# -- reset --------------------------------------------------------------------------------------

async def test_reset_instead_of_answering(mc: MockCluster) -> None:
    async with await connect_broker(mc, 0) as client:
        conn = await connection_of(mc, client)
        await mc.control.inject_connection_fault("reset", connection=conn["id"])
        await client.send(API_VERSIONS, 3, API_VERSIONS_BODY)
        with pytest.raises(ConnectionResetError):
            await asyncio.wait_for(client.reader.readexactly(4), ANSWER_TIMEOUT * 5)


async def test_reset_after_answering_and_a_delay(mc: MockCluster) -> None:
    await mc.control.inject_connection_fault("reset", api="ApiVersions", answer=True,
                                             delay_ms=100, count=1)
    async with await connect_broker(mc, 0) as client:
        body = await client.request(API_VERSIONS, 3, API_VERSIONS_BODY)
        assert body.error_code == 0
        with pytest.raises(ConnectionResetError):
            await asyncio.wait_for(client.reader.read(65536), ANSWER_TIMEOUT * 5)


# -- half a response ----------------------------------------------------------------------------

async def test_half_response_then_close(mc: MockCluster) -> None:
    async with await connect_broker(mc, 0) as whole_client:  # the whole answer, for its size
        await whole_client.send(API_VERSIONS, 3, API_VERSIONS_BODY)
        whole = len(await whole_client.read_frame()) + 4
    await mc.control.inject_connection_fault("half-response", api="ApiVersions", count=1)
    async with await connect_broker(mc, 0) as client:
        await client.send(API_VERSIONS, 3, API_VERSIONS_BODY)
        (size,) = struct.unpack(">i", await client.reader.readexactly(4))
        assert size == whole - 4  # the frame announces the whole response ...
        rest = await asyncio.wait_for(client.reader.read(), ANSWER_TIMEOUT * 5)  # ... to EOF
        assert len(rest) == whole // 2 - 4  # ... but half of it came, then the close


# -- bandwidth ----------------------------------------------------------------------------------

async def test_bandwidth_cap_delivers_the_same_bytes_and_counts_them(mc: MockCluster) -> None:
    values = await produce_batches(mc, batches=4, records=20, value_size=500)
    async with await connect_broker(mc, 0) as plain:
        expected = await fetch_records(plain)
    fault = await mc.control.inject_connection_fault("bandwidth", api="Fetch",
                                                     bytes_per_second=400_000)
    async with await connect_broker(mc, 0) as client:
        await client.request(API_VERSIONS, 3, API_VERSIONS_BODY)
        before = (await connection_of(mc, client))["bytes_out"]
        records = await fetch_records(client)
        conn = await connection_of(mc, client)
    assert records == expected
    assert len(split_batches(records)) == 4 and len(values) == 80
    response_size = conn["bytes_out"] - before
    assert response_size > len(records)
    assert conn["throttled_bytes"] == response_size  # only the Fetch answer was paced
    active = {f["id"]: f for f in (await mc.control.state())["faults"]}
    assert active[fault["id"]]["throttled_bytes"] == response_size
    assert active[fault["id"]]["fired"] == 1


# -- data faults ----------------------------------------------------------------------------

async def test_duplicate_batch_sends_the_first_batch_twice(mc: MockCluster) -> None:
    await produce_batches(mc, batches=2)
    async with await connect_broker(mc, 0) as client:
        clean = split_batches(await fetch_records(client))
        await mc.control.inject_connection_fault("duplicate-batch", topic=TOPIC, partition=0,
                                                 count=1)
        doubled = split_batches(await fetch_records(client))
        again = split_batches(await fetch_records(client))
    assert [bytes(b) for b in doubled] == [bytes(clean[0]), bytes(clean[0]), bytes(clean[1])]
    assert [bytes(b) for b in again] == [bytes(b) for b in clean]  # count 1: used up


async def test_corrupt_crc_breaks_only_the_first_batch(mc: MockCluster) -> None:
    await produce_batches(mc, batches=2)
    await mc.control.inject_connection_fault("corrupt-crc", count=1)
    async with await connect_broker(mc, 0) as client:
        corrupted = split_batches(await fetch_records(client))
        clean = split_batches(await fetch_records(client))
    assert [verify_crc(b) for b in corrupted] == [False, True]
    assert [verify_crc(b) for b in clean] == [True, True]
    assert bytes(corrupted[1]) == bytes(clean[1])
    first, good = bytes(corrupted[0]), bytes(clean[0])
    assert [i for i in range(len(good)) if first[i] != good[i]] == [17]  # one CRC byte
    # the stored log is untouched: the next fetch above was clean


# -- refusing connections -------------------------------------------------------------------

async def test_refuse_connections_then_accept_again(mc: MockCluster) -> None:
    port = mc.cluster.brokers[1].port
    async with await connect_broker(mc, 1) as kept:
        state = await mc.control.refuse_connections(1)
        assert (state["refusing_connections"], state["listening"], state["up"]) == (
            True, False, True)
        with pytest.raises(ConnectionRefusedError):
            await RawClient.connect(port)
        await kept.request(API_VERSIONS, 3, API_VERSIONS_BODY)  # open connections go on
        with pytest.raises(ControlError) as twice:
            await mc.control.refuse_connections(1)
        assert twice.value.status == 409
        state = await mc.control.accept_connections(1)
        assert (state["refusing_connections"], state["listening"]) == (False, True)
    async with await RawClient.connect(port) as fresh:
        await fresh.request(API_VERSIONS, 3, API_VERSIONS_BODY)


async def test_refuse_for_ms_and_reset_listen_again(mc: MockCluster) -> None:
    port = mc.cluster.brokers[0].port
    await mc.control.refuse_connections(0, for_ms=100)
    with pytest.raises(ConnectionRefusedError):
        await RawClient.connect(port)
    for _ in range(250):  # the timer runs on the loop: wait for it, bounded
        if not mc.server.refusing_connections(0):
            break
        await asyncio.sleep(0.02)
    async with await RawClient.connect(port) as client:
        await client.request(API_VERSIONS, 3, API_VERSIONS_BODY)
    await mc.control.refuse_connections(0)
    await mc.control.inject_connection_fault("hang")
    await mc.control.reset()
    assert (await mc.control.state())["faults"] == []
    async with await RawClient.connect(port) as client:
        await client.request(API_VERSIONS, 3, API_VERSIONS_BODY)


async def test_for_ms_clears_a_connection_fault(mc: MockCluster) -> None:
    fault = await mc.control.inject_connection_fault("hang", client_id="x", for_ms=50)
    assert fault["for_ms"] == 50
    result = await mc.control.wait_fault_consumed(fault["id"], timeout_ms=5000)
    assert result["satisfied"] and result["observed"] == {"active": False}
    cleared = await mc.control.inject_connection_fault("reset")
    assert await mc.control.clear_faults(cleared["id"]) == {"cleared": 1}


# -- bad arguments --------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "status", "reason"), [
    ({"kind": "explode"}, 400, "kind must be one of"),
    ({"kind": "bandwidth"}, 400, "needs bytes_per_second"),
    ({"kind": "bandwidth", "bytes_per_second": 0}, 400, "at least 1"),
    ({"kind": "hang", "bytes_per_second": 10}, 400, "bandwidth only"),
    ({"kind": "hang", "delay_ms": 10}, 400, "reset only"),
    ({"kind": "reset", "answer": "yes"}, 400, "true or false"),
    ({"kind": "hang", "topic": TOPIC}, 400, "data faults"),
    ({"kind": "corrupt-crc", "api": "Produce"}, 400, "Fetch responses only"),
    ({"kind": "corrupt-crc", "partition": 0}, 400, "needs a topic"),
    ({"kind": "corrupt-crc", "topic": "nope"}, 404, "unknown topic"),
    ({"kind": "hang", "connection": 999999}, 404, "no open connection"),
    ({"kind": "hang", "broker": 7}, 404, "unknown broker"),
    ({"kind": "hang", "client_port": 70000}, 400, "at most 65535"),
    ({"kind": "hang", "count": 0}, 400, "at least 1"),
    ({"kind": "hang", "api": "NoSuchApi"}, 400, "unknown API"),
])
async def test_bad_arguments_are_refused(mc: MockCluster, args: dict[str, Any], status: int,
                                         reason: str) -> None:
    with pytest.raises(ControlError) as refused:
        await mc.control.dispatch("inject-connection-fault", args)
    assert refused.value.status == status and reason in refused.value.message
    assert (await mc.control.state())["faults"] == []


# -- scenario steps -------------------------------------------------------------------------

async def _scenario_settled(mc: MockCluster) -> dict[str, Any]:
    for _ in range(250):  # the undos run on loop timers: wait for them, bounded
        status = await mc.control.scenario()
        if status["pending"] == 0:
            return status
        await asyncio.sleep(0.02)
    raise AssertionError(f"scenario still pending: {status}")


async def test_scenario_steps_refuse_connections_and_hang_then_undo(mc: MockCluster) -> None:
    port = mc.cluster.brokers[1].port
    await mc.control.load_scenario({"seed": 3, "steps": [
        {"do": "refuse-connections", "args": {"broker": 1}, "for_ms": 150},
        {"do": "inject-connection-fault", "args": {"kind": "hang", "client_id": "s"},
         "for_ms": 150}]})
    state = await mc.control.state()  # at_ms 0 steps have run when loading returns
    assert state["brokers"][1]["refusing_connections"] is True
    assert [(f["kind"], f["client_id"]) for f in state["faults"]] == [("hang", "s")]
    with pytest.raises(ConnectionRefusedError):
        await RawClient.connect(port)
    status = await _scenario_settled(mc)
    assert sorted((e["do"], e["undo"], e["ok"]) for e in status["fired"]) == [
        ("accept-connections", True, True), ("clear-faults", True, True),
        ("inject-connection-fault", False, True), ("refuse-connections", False, True)]
    assert (await mc.control.state())["faults"] == []
    async with await RawClient.connect(port, client_id="s") as client:
        await client.request(API_VERSIONS, 3, API_VERSIONS_BODY)


async def test_scenario_file_corrupts_a_batch_after_the_first_fetch(
        mc: MockCluster, tmp_path: Any) -> None:
    await produce_batches(mc, batches=1)
    path = tmp_path / "corrupt.toml"
    path.write_text(f'''
seed = 5
[[steps]]
do = "inject-connection-fault"
args = {{ kind = "corrupt-crc", topic = "{TOPIC}", count = 1 }}
after = {{ api = "Fetch", count = 1 }}
''')
    await mc.control.load_scenario(path=str(path))
    async with await connect_broker(mc, 0) as client:
        first = split_batches(await fetch_records(client))  # the trigger: still clean
        await _scenario_settled(mc)
        second = split_batches(await fetch_records(client))
        third = split_batches(await fetch_records(client))
    assert [verify_crc(b) for b in first + second + third] == [True, False, True]
    fired = (await mc.control.scenario())["fired"]
    assert [(e["do"], e["ok"]) for e in fired] == [("inject-connection-fault", True)]


# -- the web view -------------------------------------------------------------------------

async def test_web_view_lists_connection_faults_and_connections(mc: MockCluster) -> None:
    from mockbroker.control.webview import render_view

    await mc.control.inject_connection_fault("bandwidth", bytes_per_second=2048,
                                             client_id="viewer")
    await mc.control.refuse_connections(1)
    async with await connect_broker(mc, 0, client_id="viewer") as client:
        await client.request(API_VERSIONS, 3, API_VERSIONS_BODY)
        view = render_view(await mc.control.state())
    faults = view.split('class="faults"')[1].split("</table>")[0]
    assert faults.count("<tr>") == 2  # the header and the one fault
    assert "<td>bandwidth</td>" in faults and "bytes_per_second=2048" in faults
    assert "client_id=viewer" in faults
    connections = view.split('class="connections"')[1].split("</table>")[0]
    assert connections.count("<tr>") == 2 and "<td>viewer</td>" in connections
    assert 'class="up refusing connections"' in view
    broker_rows = {row.split('"')[0]: row for row in view.split('<tr id="broker-')[1:]}
    assert 'data-verb="accept-connections"' in broker_rows["1"]
    assert 'data-verb="refuse-connections"' in broker_rows["0"]


async def test_the_trace_names_the_injected_outcome(mc: MockCluster) -> None:
    await mc.control.start_trace(api="ApiVersions")
    await mc.control.inject_connection_fault("half-response", client_id="half", count=1)
    await mc.control.inject_connection_fault("reset", client_id="reset", count=1)
    await mc.control.inject_connection_fault("hang", client_id="hang", count=1)
    for client_id in ("half", "reset", "hang"):
        async with await connect_broker(mc, 0, client_id=client_id) as client:
            await client.send(API_VERSIONS, 3, API_VERSIONS_BODY)
            if client_id != "hang":
                assert await client.is_closed(timeout=5)
    for _ in range(100):  # the hung request's span ends when the broker sees the close
        traced = (await mc.control.trace())["requests"]
        if len(traced) == 3:
            break
        await asyncio.sleep(0.02)
    assert [(r["client_id"], r["outcome"]) for r in traced] == [
        ("half", "injected half response"), ("reset", "injected reset"),
        ("hang", "injected hang")]


def test_data_faults_match_fetch_topics_by_id_and_leave_other_partitions() -> None:
    import uuid

    from kafka_protocol_codec.framing import BufferList

    from mockbroker.control.wire_faults import WireFault, WireFaultHook
    from mockbroker.server.hooks import ConnectionInfo

    topic_id = uuid.uuid4()
    batches = [bytes(build_batch([RecordSpec(value=f"v{i}".encode())])) for i in range(2)]

    def response() -> dict[str, Any]:  # as Fetch v13+ names topics: by id only
        return {"responses": [{"topic_id": topic_id, "partitions": [
            {"partition_index": p, "records": BufferList(batches)} for p in (0, 1)]}]}

    fault = WireFault(1, "corrupt-crc", topic=TOPIC, topic_id=topic_id, partition=1, count=1)
    hook = WireFaultHook({1: fault})
    conn = ConnectionInfo(1, 0, "127.0.0.1", 5000, 9092, 0.0)
    plan = hook.plan(conn, FETCH, 13)
    assert plan is not None and plan.rewrite is not None
    out = plan.rewrite(response())
    partitions = out["responses"][0]["partitions"]
    assert partitions[0]["records"].buffers == tuple(batches)  # untouched, same objects
    corrupted = partitions[1]["records"].buffers
    assert [verify_crc(b) for b in corrupted] == [False, True]
    assert corrupted[1] is batches[1]  # only the first batch was copied
    assert hook.faults == {} and fault.fired == 1
    assert hook.plan(conn, FETCH, 13) is None  # used up
    other = WireFault(2, "duplicate-batch", topic="other", topic_id=uuid.uuid4())
    hook.faults[2] = other
    plan = hook.plan(conn, FETCH, 13)
    assert plan is not None and plan.rewrite is not None
    assert plan.rewrite(response())["responses"][0]["partitions"][1]["records"].buffers == \
        tuple(batches)  # another topic's rule: no change
    assert other.fired == 0


async def _no_connections(mc: MockCluster) -> None:
    for _ in range(250):  # closes reach the broker on its loop: wait for them, bounded
        if mc.server.servers[0].open_connections == 0 and not mc.server.hooks.connections:
            return
        await asyncio.sleep(0.02)


async def test_no_fault_leaves_a_connection_or_a_task_behind(mc: MockCluster) -> None:
    await produce_batches(mc, batches=2)
    await _no_connections(mc)
    tasks_before = len(asyncio.all_tasks())
    await mc.control.inject_connection_fault("hang", client_id="hang")
    await mc.control.inject_connection_fault("reset", client_id="reset", delay_ms=20)
    await mc.control.inject_connection_fault("reset", client_id="reset-after", answer=True)
    await mc.control.inject_connection_fault("half-response", client_id="half")
    await mc.control.inject_connection_fault("bandwidth", client_id="slow",
                                             bytes_per_second=100)  # 2 s per 200 bytes
    await mc.control.inject_connection_fault("corrupt-crc", client_id="crc")
    for client_id in ("hang", "reset", "reset-after", "half", "slow", "crc"):
        client = await connect_broker(mc, 0, client_id=client_id)
        await client.send(FETCH, 12, fetch_body())
        await asyncio.sleep(0.05)
        client.reset() if client_id == "slow" else await client.close()  # gone mid-answer
    server = mc.server.servers[0]
    await _no_connections(mc)
    assert (server.open_connections, mc.server.hooks.connections) == (0, {})
    assert len(asyncio.all_tasks()) == tasks_before
    async with await connect_broker(mc, 0, client_id="fine") as client:  # still serving
        assert split_batches(await fetch_records(client))


@pytest.mark.parametrize(("filters", "applies"), [
    ({"client_host": "127.0.0.1", "client_port": "own"}, True),
    ({"client_host": "10.1.2.3"}, False),
    ({"client_port": "other"}, False),
    ({"broker": 0, "api": "ApiVersions", "client_id": "filtered"}, True),
    ({"broker": 1}, False),
    ({"api": "Metadata"}, False),
    ({"client_id": "someone-else"}, False),
])
async def test_filters_select_the_connection(mc: MockCluster, filters: dict[str, Any],
                                             applies: bool) -> None:
    async with await connect_broker(mc, 0, client_id="filtered") as client:
        port = client.writer.get_extra_info("sockname")[1]
        chosen = {k: (port if v == "own" else port - 1 if v == "other" else v)
                  for k, v in filters.items()}
        fault = await mc.control.inject_connection_fault("reset", count=1, **chosen)
        await client.send(API_VERSIONS, 3, API_VERSIONS_BODY)
        if applies:
            assert await client.is_closed(timeout=5)
        else:
            assert len(await client.read_frame()) > 0
    remaining = [f["id"] for f in (await mc.control.state())["faults"]]
    assert remaining == ([] if applies else [fault["id"]])
