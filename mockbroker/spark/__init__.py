"""mockbroker.spark: a Kafka source and sink for PySpark 4 (Spark's Python Data Source API).

    from mockbroker.spark import local_session, register

Two modules: `options` (option parsing, offsets JSON, the maxOffsetsPerTrigger rule, the Java
check; no pyspark needed) and `source` (the data source, its readers and writers, the local
session; needs the [spark] extra). The options names are imported here at once; the source's
are loaded on first access, so `mockbroker.spark.options` can be imported (and tested) where
pyspark is not installed, and a missing pyspark still fails with the install hint as soon as
a Spark name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.spark.options import (
    EARLIEST,
    LATEST,
    JavaMissingError,
    KafkaOptions,
    KafkaSourceError,
    Offsets,
    TopicPartition,
    check_java,
    from_json_offsets,
    parse_offsets_json,
    rate_limit,
    to_json_offsets,
)

if TYPE_CHECKING:
    from mockbroker.spark.source import (
        DEFAULT_FORMAT,
        KafkaDataSource,
        kafka_schema,
        local_session,
        register,
    )

_SOURCE_NAMES = ("DEFAULT_FORMAT", "KafkaDataSource", "kafka_schema", "local_session",
                 "register")

__all__ = ["DEFAULT_FORMAT", "EARLIEST", "LATEST", "JavaMissingError", "KafkaDataSource",
           "KafkaOptions", "KafkaSourceError", "Offsets", "TopicPartition", "check_java",
           "from_json_offsets", "kafka_schema", "local_session", "parse_offsets_json",
           "rate_limit", "register", "to_json_offsets"]


def __getattr__(name: str) -> Any:
    # Lazy: importing mockbroker.spark.source imports pyspark (or raises the install hint).
    if name in _SOURCE_NAMES:
        from mockbroker.spark import source

        return getattr(source, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
