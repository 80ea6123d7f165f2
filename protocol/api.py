"""API registry, header rules, and whole-message encode/decode.

Theory of operation: the generated package index maps each API key to its module; modules are
imported on first use so that start-up stays cheap. A request on the wire is a request header
(v0-v2) followed by the body; a response is a response header (v0-v1) and the body. Which
header version applies follows from whether the (api, version) is flexible, with two fixed
exceptions: ControlledShutdown v0 uses request header v0, and ApiVersions responses always use
response header v0 (a client must read it before it knows what the broker speaks).
A server writes responses with ``encode_response_into``: size prefix, header and body appended
to one output buffer, so it neither frames nor copies anything itself (a ProduceResponse of the
usual shape has a faster equal, produce_response.py). ``decode_request`` keeps each version's
header and body codecs on the ApiSpec, which a registered extension replaces: it runs per
request.
"""

from __future__ import annotations

import dataclasses
import importlib
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from kafka_protocol_codec import extensions
from kafka_protocol_codec.codec_runtime import Reader, TypedStruct
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.framing import begin_frame, discard_from, end_frame
from kafka_protocol_codec.generated import APIS
from kafka_protocol_codec.generated.data import DATA_TYPES
from kafka_protocol_codec.generated.metadata_records import METADATA_RECORDS
from kafka_protocol_codec.schema import F, Message, in_range
from kafka_protocol_codec.structs import Codec, codec_for

if TYPE_CHECKING:
    from kafka_protocol_codec.generated.headers import RequestHeader, ResponseHeader

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7


class UnknownApiError(CodecError):
    """The request names an API key that no schema defines."""


class UnsupportedVersionError(CodecError):
    """The request names a version outside the API's valid versions."""


@dataclass(frozen=True)
class ApiSpec:
    """One Kafka API: its key and name, and the request and response schemas (whose version
    ranges are the API's)."""

    key: int
    name: str
    request: Message
    response: Message
    # version -> (request header codec, request body codec), filled by decode_request: one
    # dict read per request instead of the version and header rules (a registered
    # extension makes a new ApiSpec, so this never outlives the messages it was built from)
    request_decoders: dict[int, tuple[Codec, Codec]] = dataclasses.field(
        default_factory=dict, compare=False, repr=False)

    @property
    def min_version(self) -> int:
        return self.request.versions.start

    @property
    def max_version(self) -> int:
        return self.request.versions.stop - 1

    def is_flexible(self, version: int) -> bool:
        return in_range(version, self.request.flexible)

    def request_codec(self, version: int) -> Codec:
        return codec_for(self.request, version)

    def response_codec(self, version: int) -> Codec:
        return codec_for(self.response, version)


@cache
def api(key: int) -> ApiSpec:
    """The ApiSpec for an API key; UnknownApiError if no schema defines it."""
    entry = APIS.get(key)
    if entry is None:
        raise UnknownApiError(f"unknown API key {key}")
    request, response = generated_messages(key)
    return ApiSpec(key, entry[0], extensions.apply(request, key, "request"),
                   extensions.apply(response, key, "response"))


def generated_messages(key: int) -> tuple[Message, Message]:
    """An API's request and response exactly as generated from Kafka's schemas (without
    registered extensions); UnknownApiError if no schema defines the key."""
    entry = APIS.get(key)
    if entry is None:
        raise UnknownApiError(f"unknown API key {key}")
    module = importlib.import_module(f"kafka_protocol_codec.generated.{entry[1]}")
    return module.REQUEST, module.RESPONSE


def register_extension(key: int, kind: str, path: tuple[str, ...], field: F) -> None:
    """Add a tagged field to a message: one side ("request" or "response") of the API `key`,
    or ("metadata") the KRaft metadata record of type `key`. The field goes into the struct
    reached by `path` (field names from the root; empty for the top level). Checked against
    the schema (extensions.ExtensionError if it does not fit); registering the same extension
    twice is a no-op. Affects every later `api(key)` / `metadata_record(key)` lookup."""
    base: Message
    if kind == "metadata":
        if key not in METADATA_RECORDS:
            raise CodecError(f"unknown metadata record type {key}")
        base = _generated_record(key)
    else:
        request, response = generated_messages(key)
        base = request if kind == "request" else response
    if extensions.add(extensions.Extension(key, kind, tuple(path), field), base):
        api.cache_clear()
        metadata_record.cache_clear()


def api_keys() -> list[int]:
    return sorted(APIS)


def api_name(key: int) -> str:
    entry = APIS.get(key)
    return entry[0] if entry else f"Unknown{key}"


def _generated_record(record_type: int) -> Message:
    _name, module_name = METADATA_RECORDS[record_type]
    module = importlib.import_module(f"kafka_protocol_codec.generated.metadata_records.{module_name}")
    record: Message = module.RECORD
    return record


@cache
def metadata_record(record_type: int) -> Message:
    """The KRaft metadata record definition for a record type id (with any registered
    extensions)."""
    return extensions.apply(_generated_record(record_type), record_type, "metadata")


@cache
def data_type(name: str) -> Message:
    """A data-only schema such as ConsumerProtocolSubscription."""
    module = importlib.import_module(f"kafka_protocol_codec.generated.data.{DATA_TYPES[name]}")
    message: Message = module.MESSAGE
    return message


def _headers() -> tuple[Message, Message]:
    from kafka_protocol_codec.generated import headers

    return headers.REQUEST_HEADER, headers.RESPONSE_HEADER


def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return 0
    return 2 if api(api_key).is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if api(api_key).is_flexible(api_version) else 0


@cache
def request_header_codec(header_version: int) -> Codec:
    return codec_for(_headers()[0], header_version)


@cache
def response_header_codec(header_version: int) -> Codec:
    return codec_for(_headers()[1], header_version)


class Request(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: TypedStruct
    body: TypedStruct


class Response(NamedTuple):
    correlation_id: int
    header: TypedStruct
    body: TypedStruct


_PEEK = struct.Struct(">hhi")


def decode_request(frame: bytes | bytearray | memoryview) -> Request:
    """Decode a request frame (without its size prefix): header, then body."""
    if len(frame) < 8:
        raise CodecError(f"request of {len(frame)} bytes is shorter than a header")
    api_key, api_version, _ = _PEEK.unpack_from(frame, 0)
    spec = api(api_key)
    decoders = spec.request_decoders.get(api_version)
    if decoders is None:
        if api_version not in spec.request.versions:
            raise UnsupportedVersionError(f"{spec.name} v{api_version} is not a valid version")
        decoders = spec.request_decoders[api_version] = (
            request_header_codec(request_header_version(api_key, api_version)),
            spec.request_codec(api_version))
    reader = Reader(frame)
    header = cast("RequestHeader", decoders[0].decode_from(reader))
    body = decoders[1].decode_from(reader)
    return Request(api_key, api_version, header.correlation_id, header.client_id, header, body)


def encode_request(api_key: int, api_version: int, body: Mapping[str, Any], *,
                   correlation_id: int, client_id: str | None = "kafka-protocol-codec") -> bytes:
    """Encode a request (header and body, without the size prefix)."""
    spec = api(api_key)
    out = bytearray()
    header = {"request_api_key": api_key, "request_api_version": api_version,
              "correlation_id": correlation_id, "client_id": client_id}
    request_header_codec(request_header_version(api_key, api_version)).encode_into(header, out)
    spec.request_codec(api_version).encode_into(body, out)
    return bytes(out)


def encode_response(api_key: int, api_version: int, correlation_id: int,
                    body: Mapping[str, Any]) -> bytes:
    """Encode a response (header and body, without the size prefix)."""
    out = bytearray()
    response_header_codec(response_header_version(api_key, api_version)).encode_into(
        {"correlation_id": correlation_id}, out)
    api(api_key).response_codec(api_version).encode_into(body, out)
    return bytes(out)


def encode_response_into(out: bytearray, api_key: int, api_version: int, correlation_id: int,
                         body: Mapping[str, Any]) -> None:
    """Append one whole response frame to `out`: size prefix, response header, body, ready
    for the socket. If the body cannot be encoded (CodecError), `out` is left as it was."""
    start = begin_frame(out)
    try:
        response_header_codec(response_header_version(api_key, api_version)).encode_into(
            {"correlation_id": correlation_id}, out)
        api(api_key).response_codec(api_version).encode_into(body, out)
    except BaseException:
        discard_from(out, start)
        raise
    end_frame(out, start)


def encode_response_frame(api_key: int, api_version: int, correlation_id: int,
                          body: Mapping[str, Any]) -> bytearray:
    """One whole response frame (size prefix, response header, body) in a new buffer."""
    out = bytearray()
    encode_response_into(out, api_key, api_version, correlation_id, body)
    return out


def decode_response(api_key: int, api_version: int,
                    data: bytes | bytearray | memoryview) -> Response:
    """Decode a response (without its size prefix) to a request of the given api/version."""
    reader = Reader(data)
    header = cast("ResponseHeader", response_header_codec(
        response_header_version(api_key, api_version)).decode_from(reader))
    body = api(api_key).response_codec(api_version).decode_from(reader)
    return Response(header.correlation_id, header, body)
