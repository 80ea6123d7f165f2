"""The control API over HTTP JSON (aiohttp), on its own port next to the brokers.

Theory of operation: one aiohttp application on the cluster's event loop, so a request runs
a verb exactly as a Python caller would (ControlAPI.dispatch), never concurrently with a
Kafka request handler's synchronous code. Routes:

    GET  /                  the live web view (control/webview.py); GET /view its body
    GET  /health            {"status": "ok", "brokers_up": N}
    GET  /state             the state verb
    GET  /trace?n=&api=&since=   the trace verb (the last n traced requests)
    POST /<verb>            a JSON object body (empty body = {}); the verb's result

A ControlError becomes its status (400, 404, 409) with {"error": "..."}; a body that is not
a JSON object is a 400; an unknown path a 404; GET on a verb a 405. Any other exception is
a 500 with its message, and is logged: the server keeps serving.

Start-up: importing aiohttp takes about 0.2 s, longer than starting the brokers. So `start`
binds and listens on the control socket first (its port is known and it accepts
connections at once), then imports aiohttp in a worker thread and serves the socket. With
`wait=False` (the CLI) the READY line goes out before that import finishes; a request that
arrives meanwhile waits in the listen backlog and is answered as soon as aiohttp runs.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import socket
from typing import TYPE_CHECKING, Any

from mockbroker.control.api import ControlAPI, ControlError

if TYPE_CHECKING:
    from aiohttp import web

log = logging.getLogger("mockbroker.control")

MAX_BODY = 1 << 20
BACKLOG = 128


def _json(data: Any, status: int = 200) -> web.Response:
    import json  # loaded with aiohttp, after READY

    from aiohttp import web

    return web.Response(text=json.dumps(data, separators=(",", ":")) + "\n", status=status,
                        content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status)


class ControlHTTPServer:
    def __init__(self, api: ControlAPI, host: str = "127.0.0.1", port: int = 0) -> None:
        self.api = api
        self.host = host
        self.port = port
        self._sock: socket.socket | None = None
        self._runner: web.AppRunner | None = None
        self._serving: asyncio.Task[None] | None = None

    async def start(self, wait: bool = True) -> None:
        """Listen on the control port; serve HTTP once aiohttp is imported (with `wait`,
        return only then). Raises OSError at once if the port cannot be bound."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.create_server((self.host, self.port), family=family, backlog=BACKLOG)
        sock.setblocking(False)
        self._sock = sock
        self.port = int(sock.getsockname()[1])
        self._serving = asyncio.create_task(self._serve(sock))
        if wait:
            await asyncio.shield(self._serving)

    async def _serve(self, sock: socket.socket) -> None:
        web_module = await asyncio.to_thread(importlib.import_module, "aiohttp.web")
        app = web_module.Application(client_max_size=MAX_BODY)
        app.router.add_get("/", self._page)
        app.router.add_get("/view", self._view)
        app.router.add_get("/health", self._health)
        app.router.add_get("/state", self._state)
        app.router.add_get("/trace", self._trace)
        app.router.add_post("/{verb}", self._verb)
        app.router.add_route("*", "/{tail:.*}", self._fallback)
        runner = web_module.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        self._runner = runner
        await web_module.SockSite(runner, sock, backlog=BACKLOG).start()

    async def stop(self) -> None:
        if self._serving is not None:
            if not self._serving.done():
                self._serving.cancel()
            await asyncio.gather(self._serving, return_exceptions=True)
            self._serving = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    @property
    def url(self) -> str:
        host = self.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    # -- handlers ---------------------------------------------------------------------------

    async def _page(self, request: web.Request) -> web.Response:
        """GET /: the live web view (control/webview.py)."""
        from aiohttp import web

        from mockbroker.control.webview import render_page  # html: not at start-up

        page = render_page(await self.api.state())
        return web.Response(text=page, content_type="text/html", charset="utf-8")

    async def _view(self, request: web.Request) -> web.Response:
        """GET /view: the page's refreshable part, for its script."""
        from aiohttp import web

        from mockbroker.control.webview import render_view

        view = render_view(await self.api.state())
        return web.Response(text=view, content_type="text/html", charset="utf-8")

    async def _health(self, request: web.Request) -> web.Response:
        up = sum(1 for n in self.api.cluster.brokers.values() if n.up)
        return _json({"status": "ok", "brokers": len(self.api.cluster.brokers),
                      "brokers_up": up})

    async def _state(self, request: web.Request) -> web.Response:
        return _json(await self.api.state())

    async def _trace(self, request: web.Request) -> web.Response:
        """GET /trace: the query's n, api and since as the verb's fields (n=all: no limit)."""
        args: dict[str, Any] = {}
        for name, value in request.query.items():
            if name not in ("n", "api", "since"):
                return _error(400, f"trace: unknown query parameter {name!r}; expected n, "
                                   "api, since")
            if name == "api":
                args[name] = value
            elif name == "n" and value == "all":
                args[name] = None
            else:
                try:
                    args[name] = int(value)
                except ValueError:
                    return _error(400, f"trace: {name} must be an integer, got {value!r}")
        try:
            return _json(await self.api.trace(**args))
        except ControlError as exc:
            return _error(exc.status, exc.message)

    async def _verb(self, request: web.Request) -> web.Response:
        verb = request.match_info["verb"]
        raw = await request.read()
        args: Any = {}
        if raw.strip():
            import json

            try:
                args = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                return _error(400, f"malformed JSON body: {exc}")
        if not isinstance(args, dict):
            return _error(400, "the body must be a JSON object")
        try:
            result = await self.api.dispatch(verb, args)
        except ControlError as exc:
            return _error(exc.status, exc.message)
        except Exception as exc:
            log.exception("control verb %s failed", verb)
            return _error(500, f"{type(exc).__name__}: {exc}")
        return _json(result)

    async def _fallback(self, request: web.Request) -> web.Response:
        verb = request.path.strip("/")
        if request.method != "POST" and (verb in ControlAPI.VERBS):
            return _error(405, f"use POST /{verb}")
        return _error(404, f"no such endpoint: {request.method} {request.path}")
