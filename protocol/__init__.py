"""kafka_protocol_codec: a sans-IO Kafka wire-protocol codec generated from Kafka's schemas.

Message definitions and their codecs live in generated/: codegen.py turns Kafka's JSON
schemas into modules holding each message's definition (data), its typed class (decoded
messages are its instances, TypedStruct) and a reader and a writer per version, compiled at
`make codegen` time from the message's construct tree (structs.py builds the trees from the
construct classes in constructs.py; construct is needed only there, not at run time) and
calling the helpers of codec_runtime.py; structs.codec_for hands them out; api.py adds the
API registry and header rules; extensions.py holds the documented tagged fields an
application adds to messages, compiled in by the generator. record_batches.py handles
RecordBatch v2 as opaque bytes (header, CRC, patching, splitting), records.py the records
inside a batch, validation.py checks a produced batch as Kafka's broker does, framing.py
size-prefixed frames. strict.py adds the strict encoding mode for tests
(`set_strict_encoding(True)` or KAFKA_PROTOCOL_CODEC_STRICT=1): a key no version of the message
knows is a CodecError instead of silently encoding a default.
Nothing here does I/O or imports asyncio or sockets.
"""

from kafka_protocol_codec.api import (
    ApiSpec,
    Request,
    Response,
    UnknownApiError,
    UnsupportedVersionError,
    api,
    api_keys,
    api_name,
    data_type,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_frame,
    encode_response_into,
    metadata_record,
    register_extension,
    request_header_version,
    response_header_version,
)
from kafka_protocol_codec.codec_runtime import Struct, TypedStruct
from kafka_protocol_codec.exceptions import CodecError
from kafka_protocol_codec.strict import set_strict_encoding, strict_encoding
from kafka_protocol_codec.structs import Codec, codec_for, default_struct

__all__ = [
    "ApiSpec",
    "Codec",
    "CodecError",
    "Request",
    "Response",
    "Struct",
    "TypedStruct",
    "UnknownApiError",
    "UnsupportedVersionError",
    "api",
    "api_keys",
    "api_name",
    "codec_for",
    "data_type",
    "decode_request",
    "decode_response",
    "default_struct",
    "encode_request",
    "encode_response",
    "encode_response_frame",
    "encode_response_into",
    "metadata_record",
    "register_extension",
    "request_header_version",
    "response_header_version",
    "set_strict_encoding",
    "strict_encoding",
]
