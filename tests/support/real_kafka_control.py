"""The history checker's control verbs in front of real Kafka (tests/support/real_kafka.py).

Theory of operation: `mockbroker check` drives faults through a `Control` (the control API's
verbs). `RealKafkaControl` answers the verbs that mean something for a real KRaft cluster,
so the same seeded schedule runs against real Kafka where its faults apply:
- `state`: brokers (up or not, from the node processes) and the topic's partitions (leader,
  ISR) from a Metadata request, in the control API's shape;
- `create-topic`: CreateTopics, then waits until every partition has a leader;
- `elect-leader`: the target replica moved to the head of the replica list
  (AlterPartitionReassignments with the same replicas: no data moves), then a preferred
  ElectLeaders, as an operator moves leadership on Kafka; waits until Metadata shows it;
- `stop-broker` / `crash-broker` / `start-broker`: a controlled shutdown (SIGTERM), a
  SIGKILL, a start of the node on its directory;
- `clear-faults`: nothing to clear.
Every other verb (paused or delayed metadata or replication, isolation, injected errors,
the manual clock) is refused with 409, which the checker records as a refused verb: those
faults exist only in the simulator.
"""

from __future__ import annotations

import time
from typing import Any

from mockbroker.check.faults import Refused
from tests.support.real_kafka import RealKafka

WAIT_S = 60.0
ADMIN_TIMEOUT_MS = 30_000


class RealKafkaControl:
    def __init__(self, kafka: RealKafka) -> None:
        self.kafka = kafka

    def _admin(self) -> Any:
        from kafka.admin import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self._bootstrap(),
                                request_timeout_ms=ADMIN_TIMEOUT_MS)

    def _bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.kafka.members.values()
                        if n.running)

    def _partitions(self, topic: str) -> list[dict[str, Any]]:
        from confluent_kafka.admin import AdminClient

        metadata = AdminClient({"bootstrap.servers": self._bootstrap()}).list_topics(
            topic, timeout=ADMIN_TIMEOUT_MS / 1000)
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            return []
        return [{"partition": p.id, "leader": p.leader, "isr": list(p.isrs),
                 "replicas": list(p.replicas)}
                for p in sorted(found.partitions.values(), key=lambda p: p.id)]

    def call(self, verb: str, **args: Any) -> Any:
        handler = getattr(self, "_" + verb.replace("-", "_"), None)
        if handler is None:
            raise Refused(409, f"{verb} applies to the simulator only, not in front of "
                               "real Kafka")
        return handler(**args)

    # -- verbs ------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        brokers = [{"id": n.node_id, "up": n.running, "fenced": not n.running}
                   for n in self.kafka.members.values()]
        topics = {}
        if hasattr(self, "topic"):
            topics[self.topic] = {"partitions": self._partitions(self.topic)}
        return {"brokers": brokers, "topics": topics, "faults": []}

    def _create_topic(self, topic: str, partitions: int, replication_factor: int,
                      configs: dict[str, str]) -> dict[str, Any]:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self._bootstrap()})
        for future in admin.create_topics([NewTopic(topic, partitions, replication_factor,
                                                    config=configs)]).values():
            future.result(WAIT_S)
        self.topic = topic
        self._wait(lambda: len(self._partitions(topic)) == partitions
                   and all(p["leader"] >= 0 for p in self._partitions(topic)),
                   f"{topic} has a leader for each partition")
        return {"topic": topic}

    def _elect_leader(self, topic: str, partition: int, broker: int) -> dict[str, Any]:
        from kafka import TopicPartition

        part = next(p for p in self._partitions(topic) if p["partition"] == partition)
        if broker not in part["isr"]:
            raise Refused(409, f"broker {broker} is not in the ISR of {topic}-{partition}")
        replicas = [broker, *(r for r in part["replicas"] if r != broker)]
        admin = self._admin()
        try:
            answer = admin.alter_partition_reassignments({TopicPartition(topic, partition):
                                                          replicas})
            errors = [e for e in answer.values() if e is not None]
            if errors:
                raise Refused(409, f"reassignment refused: {errors}")
            self._wait(lambda: next(p for p in self._partitions(topic)
                                    if p["partition"] == partition)["replicas"] == replicas,
                       f"{topic}-{partition} has replicas {replicas}")
            admin.elect_leaders(0, {topic: [partition]}, raise_errors=False)
        finally:
            admin.close()
        self._wait(lambda: next(p for p in self._partitions(topic)
                                if p["partition"] == partition)["leader"] == broker,
                   f"{topic}-{partition} led by {broker}")
        return {"leader": broker}

    def _stop_broker(self, broker: int) -> dict[str, Any]:
        self.kafka.stop(broker)
        return {"broker": broker, "up": False}

    def _crash_broker(self, broker: int) -> dict[str, Any]:
        self.kafka.kill(broker)
        return {"broker": broker, "up": False}

    def _start_broker(self, broker: int) -> dict[str, Any]:
        node = self.kafka.members[broker]
        if not node.running:
            self.kafka.start_node(broker)
        return {"broker": broker, "up": True}

    def _clear_faults(self, **_: Any) -> dict[str, Any]:
        return {"cleared": 0}

    @staticmethod
    def _wait(condition: Any, what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except (StopIteration, KeyError):
                pass
            time.sleep(0.2)
        raise Refused(504, f"real Kafka did not reach: {what} within {WAIT_S:.0f} s")
