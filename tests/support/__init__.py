"""Helpers shared by more than one test folder (fixtures stay in the folders' conftest.py).

- `rawclient`: a minimal Kafka client over loopback (the codec plus a socket) that sends one
  exact request at one exact version to one exact broker.
- `admin`: raw-request steps the admin, metadata and produce tests share (create topics,
  produce a batch, fence a broker) and their API keys.
- `handlers`: HandlerHarness, which calls request handlers in-process (a Cluster on a
  ManualClock, no sockets) and returns what a client would decode.
- `kafka_clients`: one adapter per real client (aiokafka, kafka-python, confluent-kafka,
  kcat) doing the same few operations, for tests that compare clients.
"""
