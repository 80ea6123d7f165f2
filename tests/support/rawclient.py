"""A minimal Kafka client over loopback for server tests: the codec plus a socket, no magic.

Why: real clients hide what goes over the wire (they retry, pick versions, route requests);
server tests need to send one exact request at one exact version to one exact broker and see
the exact response. RawClient frames requests with the codec (4-byte size prefix, request
header with a fresh correlation id), checks that the response's correlation id matches, and
decodes the body at the version asked for. It can also send arbitrary bytes and tell whether
the broker closed the connection, for bad-input tests, and reset the connection (RST). Every wait is bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import ssl as ssl_module
import struct
from collections.abc import Awaitable, Mapping
from types import TracebackType
from typing import Any, Protocol

from kafka_protocol_codec import Response, Struct, decode_response, encode_request

_SIZE = struct.Struct(">i")
DEFAULT_TIMEOUT = 5.0
LOOPBACK = "127.0.0.1"


class Requester(Protocol):
    """Sends one request to one broker and returns the decoded response body: a RawClient
    over a socket, or tests.support.handlers.BrokerHandle in-process."""

    def request(self, api_key: int, version: int,
                body: Mapping[str, Any] | None = None) -> Awaitable[Struct]: ...


class ConnectionClosed(Exception):
    """The broker closed the connection before a full response arrived."""


class RawClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 client_id: str | None = "rawclient") -> None:
        self.reader = reader
        self.writer = writer
        self.client_id = client_id
        self._correlation = itertools.count(1)

    @classmethod
    async def connect(cls, port: int, host: str = LOOPBACK, *,
                      client_id: str | None = "rawclient",
                      timeout: float = DEFAULT_TIMEOUT,
                      ssl: ssl_module.SSLContext | None = None) -> RawClient:
        """Connect (over TLS with an `ssl` context; the host name is verified if the
        context checks host names)."""
        if host not in (LOOPBACK, "localhost"):
            raise ValueError("RawClient only talks to loopback")
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=ssl), timeout)
        return cls(reader, writer, client_id)

    async def __aenter__(self) -> RawClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        self.writer.close()
        try:
            await asyncio.wait_for(self.writer.wait_closed(), DEFAULT_TIMEOUT)
        except (TimeoutError, ConnectionError):
            pass

    def reset(self) -> None:
        """Drop the connection with a TCP reset instead of a close handshake (SO_LINGER 0,
        then close), as a client process that crashes or is killed does."""
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    # -- requests ---------------------------------------------------------------------------

    async def send(self, api_key: int, version: int,
                   body: Mapping[str, Any] | None = None) -> int:
        """Send one request without waiting; returns its correlation id."""
        correlation_id = next(self._correlation)
        frame = encode_request(api_key, version, body or {}, correlation_id=correlation_id,
                               client_id=self.client_id)
        await self.send_raw(_SIZE.pack(len(frame)) + frame)
        return correlation_id

    async def receive(self, api_key: int, version: int, correlation_id: int, *,
                      timeout: float = DEFAULT_TIMEOUT) -> Response:
        """Read the next response frame and decode it as (api_key, version)."""
        frame = await self.read_frame(timeout=timeout)
        response = decode_response(api_key, version, frame)
        if response.correlation_id != correlation_id:
            raise AssertionError(f"correlation id {response.correlation_id}, expected "
                                 f"{correlation_id}")
        return response

    async def request(self, api_key: int, version: int, body: Mapping[str, Any] | None = None,
                      *, timeout: float = DEFAULT_TIMEOUT) -> Struct:
        """Send a request and return the decoded response body."""
        correlation_id = await self.send(api_key, version, body)
        response = await self.receive(api_key, version, correlation_id, timeout=timeout)
        return response.body

    # -- raw bytes --------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (include the size prefix yourself)."""
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self, *, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        """One size-prefixed frame, without its prefix."""
        try:
            header = await asyncio.wait_for(self.reader.readexactly(4), timeout)
            (size,) = _SIZE.unpack(header)
            return await asyncio.wait_for(self.reader.readexactly(size), timeout)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise ConnectionClosed(str(exc)) from exc

    async def is_closed(self, *, timeout: float = DEFAULT_TIMEOUT) -> bool:
        """True if the broker closes the connection within `timeout` (any data read is
        discarded); False if it is still open when the time is up."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (left := deadline - loop.time()) > 0:
            try:
                data = await asyncio.wait_for(self.reader.read(65536), left)
            except TimeoutError:
                return False
            except ConnectionError:
                return True
            if not data:
                return True
        return False


async def connect_broker(cluster: Any, broker_id: int = 0, **kwargs: Any) -> RawClient:
    """Connect to one broker of a MockCluster / Cluster (anything with .brokers or .cluster)."""
    model = getattr(cluster, "cluster", cluster)
    node = model.brokers[broker_id]
    return await RawClient.connect(node.port, **kwargs)
