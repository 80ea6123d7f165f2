"""The live web view in a real browser: headless Chromium (Debian's package), driven over the
Chrome DevTools Protocol with aiohttp's websocket client.

The page must show the cluster as `state` says it (brokers, partitions with leaders and
epochs, groups, faults, the streaming request trace), render to a screenshot, and its
"Elect leader" button must elect a leader through the control API, after which the page
shows the new epoch. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import struct
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mockbroker.embedded import MockCluster
from tests.support.cli import stop

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,1600", "--remote-debugging-port=0"]
START_TIMEOUT = 30.0
STEP_TIMEOUT = 15.0


class DevTools:
    """The smallest CDP client: send a command, await its answer, collect events."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        wanted = self.next_id
        await self.ws.send_json({"id": wanted, "method": method, "params": params})
        async with asyncio.timeout(STEP_TIMEOUT):
            while True:
                message = json.loads((await self.ws.receive()).data)
                if message.get("id") == wanted:
                    if "error" in message:
                        raise AssertionError(f"{method}: {message['error']}")
                    result: dict[str, Any] = message["result"]
                    return result
                self.events.append(message)

    async def evaluate(self, expression: str) -> Any:
        answer = await self.send("Runtime.evaluate", expression=expression,
                                 awaitPromise=True, returnByValue=True)
        return answer["result"].get("value")

    async def until(self, expression: str, expected: Any) -> Any:
        """Evaluate until it gives `expected` (bounded by STEP_TIMEOUT)."""
        value = None
        for _ in range(int(STEP_TIMEOUT / 0.05)):
            value = await self.evaluate(expression)
            if value == expected:
                return value
            await asyncio.sleep(0.05)
        raise AssertionError(f"{expression} stayed {value!r}, expected {expected!r}")


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[DevTools]:
    assert CHROMIUM is not None, "Chromium is installed by `make test` (Debian's chromium)"
    profile = tmp_path / "profile"
    proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        for _ in range(int(START_TIMEOUT / 0.05)):
            if port_file.exists() and port_file.read_text().strip():
                break
            await asyncio.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as response:
                targets = await response.json()
            page = next(t for t in targets if t["type"] == "page")
            async with session.ws_connect(page["webSocketDebuggerUrl"],
                                          max_msg_size=64 << 20) as ws:
                yield DevTools(ws)
    finally:
        stop(proc)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def test_the_page_shows_the_cluster_and_elects_a_leader(browser: DevTools,
                                                               tmp_path: Path) -> None:
    async with MockCluster(brokers=3, control_port=0, trace_buffer=100) as mc:
        await mc.control.create_topic("orders", partitions=2)
        await mc.control.inject_error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
        await mc.control.stop_broker(2)
        await browser.send("Page.enable")
        await browser.send("Page.navigate", url=f"{mc.control_url}/")
        await browser.until("document.readyState", "complete")

        # server-rendered content, as state says it
        assert await browser.evaluate("document.title") == "mockbroker"
        leader = mc.cluster.image.partition("orders", 0).leader
        assert await browser.evaluate(
            "document.querySelector('#partition-orders-0 .leader').textContent") == str(leader)
        assert await browser.evaluate(
            "document.querySelector('#partition-orders-0 .epoch').textContent") == "0"
        assert await browser.evaluate(
            "document.querySelector('#broker-2 .status').textContent") == "fenced"
        assert await browser.evaluate(
            "document.querySelectorAll('table.faults tbody tr').length") == 1

        # the request trace streams in: a Kafka request shows up without reloading
        body = {"topics": [{"name": "orders"}], "allow_auto_topic_creation": False}
        from tests.support.rawclient import connect_broker

        async with await connect_broker(mc, 0, client_id="from-the-test") as client:
            await client.request(3, 8, body)
        await browser.until("[...document.querySelectorAll('#trace tbody td')]"
                            ".some(td => td.textContent === 'from-the-test')", True)

        shot = await browser.send("Page.captureScreenshot", format="png")
        png = base64.b64decode(shot["data"])
        (tmp_path / "webview.png").write_bytes(png)
        width, height = _png_size(png)
        assert width >= 800 and height >= 600 and len(png) > 10_000

        # the button elects a new leader through the control API; the page follows
        await browser.evaluate(
            "document.querySelector('#partition-orders-0 button.elect').click()")
        await browser.until(
            "document.querySelector('#partition-orders-0 .epoch').textContent", "1")
        assert mc.cluster.image.partition("orders", 0).leader_epoch == 1
        assert await browser.evaluate("document.getElementById('status').textContent") \
            == "elect-leader: done"
