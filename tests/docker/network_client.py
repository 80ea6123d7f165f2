"""A client inside the compose network, run by tests/docker/test_compose_stack.py in `app`.

It reads topic SOURCE_TOPIC from the beginning through the network listener
(BOOTSTRAP_SERVERS, mockbroker:9092,...) in a consumer group, commits, then creates
ANSWER_TOPIC with the same number of partitions and produces every record it read to it,
into the same partition, in order. It prints one JSON line per record read (bytes as hex) so
the test can compare exactly what arrived inside the network. Every wait is bounded; it
exits 1 when fewer than COUNT records arrived or anything failed.
"""

from __future__ import annotations

import json
import os
import sys
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

DEADLINE_S = 30.0


def hex_or_none(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


def main() -> int:
    boot = os.environ["BOOTSTRAP_SERVERS"]
    source, answer = os.environ["SOURCE_TOPIC"], os.environ["ANSWER_TOPIC"]
    count, partitions = int(os.environ["COUNT"]), int(os.environ["PARTITIONS"])

    errors: list[object] = []
    consumer = Consumer({"bootstrap.servers": boot, "group.id": "network-client",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "error_cb": errors.append})
    records = []
    try:
        consumer.subscribe([source])
        deadline = time.monotonic() + DEADLINE_S
        while len(records) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(msg.error())
                continue
            records.append(msg)
        if records:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    for msg in records:
        print(json.dumps({"partition": msg.partition(), "offset": msg.offset(),
                          "key": hex_or_none(msg.key()), "value": hex_or_none(msg.value()),
                          "headers": [[k, hex_or_none(v)] for k, v in msg.headers() or ()]}))
    if len(records) < count or errors:
        print(f"network client: read {len(records)} of {count}; errors {errors[:3]}",
              file=sys.stderr)
        return 1

    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic(answer, num_partitions=partitions)])[answer].result(timeout=20)
    producer = Producer({"bootstrap.servers": boot, "acks": "all", "error_cb": errors.append})
    for msg in sorted(records, key=lambda m: (m.partition(), m.offset())):
        producer.produce(answer, key=msg.key(), value=msg.value(),
                         headers=list(msg.headers() or ()), partition=msg.partition())
    left = producer.flush(20)
    if left or errors:
        print(f"network client: {left} undelivered; errors {errors[:3]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
