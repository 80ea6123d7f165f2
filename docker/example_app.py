"""The example app of docker/compose.yaml: a client in the compose network.

Creates a topic, produces a few keyed messages with headers, reads them back in a consumer
group, commits, and checks the committed offsets and the control API. Exits 0 when every
message came back exactly, 1 otherwise. Configured by environment: BOOTSTRAP_SERVERS
(mockbroker:9092,...), CONTROL_URL (http://mockbroker:8080), TOPIC, COUNT, and for a
secured listener (docker/compose.sasl.yaml) SECURITY_PROTOCOL, SASL_MECHANISM,
SASL_USERNAME, SASL_PASSWORD and SSL_CA_LOCATION, librdkafka's settings of those names.
tests/docker runs it against a local mockbroker too.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 3
DEADLINE_S = 30.0


SECURITY_SETTINGS = {"SECURITY_PROTOCOL": "security.protocol",
                     "SASL_MECHANISM": "sasl.mechanism", "SASL_USERNAME": "sasl.username",
                     "SASL_PASSWORD": "sasl.password", "SSL_CA_LOCATION": "ssl.ca.location"}


def main() -> int:
    boot = os.environ.get("BOOTSTRAP_SERVERS", "mockbroker:9092")
    base = {"bootstrap.servers": boot,
            **{key: os.environ[name] for name, key in SECURITY_SETTINGS.items()
               if os.environ.get(name)}}
    control = os.environ.get("CONTROL_URL", "http://mockbroker:8080")
    topic = os.environ.get("TOPIC", "example")
    count = int(os.environ.get("COUNT", "12"))

    with urllib.request.urlopen(f"{control}/health", timeout=5) as resp:
        print("control /health:", json.loads(resp.read()))

    admin = AdminClient(base)
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS)])[topic].result(timeout=20)

    sent = [(f"key-{i}".encode(), f"value-{i}".encode(), [("n", str(i).encode())])
            for i in range(count)]
    producer = Producer({**base, "acks": "all"})
    for i, (key, value, headers) in enumerate(sent):
        producer.produce(topic, key=key, value=value, headers=headers, partition=i % PARTITIONS)
    if producer.flush(20) != 0:
        print("example app: messages left undelivered", file=sys.stderr)
        return 1

    consumer = Consumer({**base, "group.id": "example-app",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    got = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                print("consumer error:", msg.error(), file=sys.stderr)
                continue
            got.append((msg.key(), msg.value(), [(k, bytes(v)) for k, v in msg.headers()]))
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                       timeout=10)
    finally:
        consumer.close()

    per_partition = [len(range(p, count, PARTITIONS)) for p in range(PARTITIONS)]
    ok = sorted(got) == sorted(sent) and [tp.offset for tp in committed] == per_partition
    print(f"example app: produced={count} consumed={len(got)} "
          f"committed={[tp.offset for tp in committed]} {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
