"""The messages tests/docker sends through the image's listeners, and how they are checked.

Keys, values and headers cover what a listener mix-up or a codec slip would garble: empty
and missing keys and values, all 256 byte values, UTF-8, repeated header keys. Messages go to
partitions 0 and 1 alternately; a consumer group reads them back and commits, so the
coordinator's address (FindCoordinator) is exercised through the same listener as the data.
"""

from __future__ import annotations

import time

CLIENT_TIMEOUT = 30.0

# (partition, offset, key, value, headers)
Record = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes]]]
MESSAGES: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]] = [
    (b"k-0", b"plain", [("trace", b"abc")]),
    (b"k-1", b"", [("empty-value", b"")]),
    (None, b"no key", []),
    (b"k-3", bytes(range(256)), [("bin", bytes([0, 255, 10])), ("dup", b"1"), ("dup", b"2")]),
    ("ключ".encode(), "значение ✓".encode(), [("utf8", "да".encode())]),
    (b"k-5", None, [("tombstone", b"yes")]),
]


def produce(boot: str, topic: str) -> None:
    from confluent_kafka import Producer

    errors: list[object] = []
    producer = Producer({"bootstrap.servers": boot, "acks": "all", "error_cb": errors.append})
    for i, (key, value, headers) in enumerate(MESSAGES):
        producer.produce(topic, key=key, value=value, headers=headers, partition=i % 2)
    assert producer.flush(CLIENT_TIMEOUT) == 0
    assert not errors, errors[:3]


def consume_in_group(boot: str, topic: str, group: str) -> tuple[list[Record], list[int]]:
    from confluent_kafka import Consumer, TopicPartition

    errors: list[object] = []
    consumer = Consumer({"bootstrap.servers": boot, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "error_cb": errors.append})
    got: list[Record] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + CLIENT_TIMEOUT
        while len(got) < len(MESSAGES) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            headers = [(k, bytes(v)) for k, v in msg.headers() or ()]
            got.append((msg.partition(), msg.offset(), msg.key(), msg.value(), headers))
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, p) for p in range(2)],
                                       timeout=CLIENT_TIMEOUT)
    finally:
        consumer.close()
    assert not errors, errors[:3]
    return got, [tp.offset for tp in committed]


def expected() -> list[Record]:
    out: list[Record] = []
    for partition in range(2):
        for offset, (key, value, headers) in enumerate(MESSAGES[partition::2]):
            out.append((partition, offset, key, value, headers))
    return out
