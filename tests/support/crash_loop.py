"""Kill the mockbroker CLI with SIGKILL under load and restart it on its data directory,
over and over (kfake's restart loop), then check that nothing acknowledged was lost.

`run_loop` starts `python -m mockbroker --brokers 3 --data-dir DIR` on fixed ports (so the
clients reconnect to the same addresses after a restart) and runs real clients
(confluent-kafka) in threads while the main thread kills and restarts the process at
seeded random moments:

- an idempotent producer with acks=all writing numbered values to `idem` (3 partitions,
  replication factor 3, min.insync.replicas 2), recording each value's acknowledged
  partition and offset;
- a transactional producer (one transactional.id for the whole run) writing 1-4 values per
  transaction over the partitions of `txn`, committing or aborting by the seed, with the
  transaction's number committed as a transactional offset of the group `loop-txn-offsets`
  (send_offsets_to_transaction), recording each transaction's outcome as the client learnt
  it: committed, aborted (as planned, or after an error librdkafka says requires it), or
  unknown (the client gave up);
- a consumer of the group `loop-readers` on `idem` committing its position synchronously,
  recording the last commit that succeeded.

Each restart waits (bounded) until the producers have made progress again, so that every
kill lands under load. After the last restart the clients stop, and the checks are:

- every value acknowledged with acks=all is in the log, at the partition and offset
  acknowledged, and no value of the idempotent producer is there twice;
- read_committed shows every value of every committed transaction once, no value of an
  aborted one, and all or none of one whose outcome is unknown;
- the group's committed offsets are never behind its last successful commit (checked after
  every restart and at the end), and the transactional offset is that of the last
  committed transaction (or of an unknown one after it);
- the transactional id keeps its producer id across every restart and the producer never
  needs a new one (no fatal error), and the idempotent producer has no fatal error either.

The clients run with metadata.recovery.strategy=none: with librdkafka 2.16's default
(rebootstrap) every broker handle is decommissioned when all brokers are down at once, and a
transactional producer's send_offsets_to_transaction then sometimes waits forever, past its
own timeout, for the group coordinator's stale handle (seen with seed 2: one hang in 12
restarts). That is the client's; the broker's addresses never change here.

Figures (restarts, values acknowledged, transactions committed and aborted, the
coordinator state found in the data directory at each kill) and anomalies come back in a
`LoopReport`. Every wait is bounded by a count and a time.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from mockbroker.cluster.persistence.data_dir import TRANSACTIONS_LOG, read_frames
from tests.support.cli import free_port_base, http_json, read_line, ready_fields, stop

PARTITIONS = 3
IDEM, TXN = "idem", "txn"
TXN_ID = "loop-txn"
READERS, TXN_GROUP = "loop-readers", "loop-txn-offsets"
CLIENT_TIMEOUT = 30.0
PROGRESS_TIMEOUT = 60.0  # after a restart, the producers must move again within this
MAX_IN_FLIGHT = 2000
BURST, BURST_INTERVAL = 20, 0.01  # the idempotent producer's pace: up to 2,000 values/s
COMMIT_ATTEMPTS = 20
READ_BATCHES = 20_000  # of up to 1,000 messages each, in the final reads
# what librdkafka needs to find a restarted broker fast
RECONNECT = {"reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
             "retry.backoff.ms": 20, "retry.backoff.max.ms": 200,
             "socket.connection.setup.timeout.ms": 5000,
             "topic.metadata.refresh.interval.ms": 1000,
             "log_level": 2,  # not the connection refusals of every restart
             "metadata.recovery.strategy": "none"}  # see the module docstring


@dataclass
class LoopReport:
    seed: int
    restarts: int = 0
    acknowledged: int = 0  # idempotent values acknowledged with acks=all
    delivery_failures: int = 0  # values the idempotent producer reported as not delivered
    transactions: Counter[str] = field(default_factory=Counter)  # outcome -> count
    transactional_values: int = 0  # values of committed transactions
    offset_commits: int = 0  # successful synchronous commits of the consumer group
    offset_checks: int = 0  # comparisons of the stored offsets with the last commit
    states_at_kill: Counter[str] = field(default_factory=Counter)  # coordinator's, on disk
    producer_ids: set[int] = field(default_factory=set)  # of the transactional id
    seconds: float = 0.0
    anomalies: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"seed={self.seed} restarts={self.restarts} acknowledged={self.acknowledged} "
                f"delivery_failures={self.delivery_failures} "
                f"transactions={dict(self.transactions)} "
                f"transactional_values={self.transactional_values} "
                f"offset_commits={self.offset_commits} offset_checks={self.offset_checks} "
                f"states_at_kill={dict(self.states_at_kill)} "
                f"producer_ids={sorted(self.producer_ids)} seconds={self.seconds:.1f} "
                f"anomalies={len(self.anomalies)}")


class BrokerProcess:
    """The CLI on a data directory and fixed ports, killed and started again by PID."""

    def __init__(self, data_dir: Path, port: int, control_port: int, log: Path) -> None:
        self.flags = ["--brokers", "3", "--port", str(port), "--control-port",
                      str(control_port), "--partitions", str(PARTITIONS),
                      "--replication-factor", "3", "--min-insync-replicas", "2",
                      "--data-dir", str(data_dir)]
        self.data_dir = data_dir
        self.log = log
        self.proc: subprocess.Popen[str] | None = None
        self.fields: dict[str, str] = {}

    def start(self) -> None:
        with open(self.log, "a", encoding="utf-8") as err:
            proc = subprocess.Popen([sys.executable, "-m", "mockbroker", *self.flags],
                                    stdout=subprocess.PIPE, stderr=err, text=True)
        self.proc = proc
        line = read_line(proc.stdout)
        try:
            self.fields = ready_fields(line)
        except AssertionError:
            self.stop()
            raise
        # the CLI prints nothing more on stdout after READY (logs go to stderr)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()  # SIGKILL: no shutdown code runs
        self.proc.wait(CLIENT_TIMEOUT)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None

    def transaction_state(self) -> dict[str, Any] | None:
        """The control API's view of the loop's transactional id."""
        status, state = http_json(self.fields["control"] + "/state")
        assert status == 200, state
        entry: dict[str, Any] | None = state["transactions"].get(TXN_ID)
        return entry

    def stored_transaction_state(self) -> str:
        """The coordinator's last state of the loop's transactional id in the data directory
        (read while the process is down)."""
        try:
            payloads, _ = read_frames((self.data_dir / TRANSACTIONS_LOG).read_bytes())
        except FileNotFoundError:
            return "none"
        states = [json.loads(p)["state"] for p in payloads if json.loads(p)["id"] == TXN_ID]
        return states[-1] if states else "none"


class Worker(threading.Thread):
    """A client loop run until `stop` is set or its deadline passes."""

    def __init__(self, name: str, deadline: float) -> None:
        super().__init__(name=name, daemon=True)
        self.stop_event = threading.Event()
        self.deadline = deadline
        self.progress = 0  # a counter the main thread watches
        self.doing = ""  # what it is doing, for a report on a stall
        self.anomalies: list[str] = []
        self.failure: BaseException | None = None

    def running(self) -> bool:
        return not self.stop_event.is_set() and time.monotonic() < self.deadline

    def run(self) -> None:
        try:
            self.loop()
        except BaseException as exc:  # reported by the main thread
            self.failure = exc

    def loop(self) -> None:
        raise NotImplementedError


class IdempotentWriter(Worker):
    def __init__(self, bootstrap: str, deadline: float) -> None:
        super().__init__("idempotent-writer", deadline)
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: list[tuple[bytes, str]] = []
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "enable.idempotence": True, "linger.ms": 5,
                                  "message.timeout.ms": 300_000, "error_cb": self._error,
                                  **RECONNECT})

    def _error(self, err: KafkaError) -> None:
        if err.fatal():
            self.anomalies.append(f"idempotent producer fatal error: {err}")
            self.stop_event.set()

    def _delivered(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.failed.append((msg.value(), str(err)))
        else:
            self.acked[msg.value()] = (msg.partition(), msg.offset())
            self.progress += 1

    def loop(self) -> None:
        sent = 0
        while self.running():
            if len(self.producer) >= MAX_IN_FLIGHT:
                self.producer.poll(0.05)
                continue
            for _ in range(BURST):
                self.producer.produce(IDEM, f"i{sent}".encode(), partition=sent % PARTITIONS,
                                      on_delivery=self._delivered)
                sent += 1
            self.producer.poll(0)
            time.sleep(BURST_INTERVAL)
        self.producer.flush(120)


class TransactionalWriter(Worker):
    def __init__(self, bootstrap: str, deadline: float, seed: int,
                 debug_log: Path | None = None) -> None:
        super().__init__("transactional-writer", deadline)
        self.bootstrap = bootstrap
        self.debug_log = debug_log
        self.rng = random.Random(seed)
        # transaction number -> (values, outcome: committed, aborted, aborted_on_error (the
        # client aborted after an abortable error, as librdkafka asks) or unknown)
        self.transactions: dict[int, tuple[list[bytes], str]] = {}
        self.reinits = 0
        self.producer = self._producer()
        self.group = Consumer({"bootstrap.servers": bootstrap, "group.id": TXN_GROUP,
                               **RECONNECT})

    def _producer(self) -> Producer:
        extra: dict[str, Any] = {}
        if self.debug_log is not None:  # librdkafka's transaction debugging, to a file
            import logging

            logger = logging.getLogger("crash-loop.txn")
            logger.addHandler(logging.FileHandler(self.debug_log))
            logger.setLevel(logging.DEBUG)
            extra = {"debug": "eos,protocol,broker", "logger": logger, "log_level": 7}
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": TXN_ID,
                             "transaction.timeout.ms": 60_000, "linger.ms": 2, **RECONNECT,
                             **extra})
        producer.init_transactions(CLIENT_TIMEOUT * 2)
        return producer

    def loop(self) -> None:
        number = 0
        while self.running():
            values = [f"t{number}-{i}".encode() for i in range(self.rng.randint(1, 4))]
            commit = self.rng.random() < 0.7
            self.transactions[number] = (values, "unknown")
            self.transactions[number] = (values, self._transaction(number, values, commit))
            number += 1
            self.progress += 1

    def _transaction(self, number: int, values: list[bytes], commit: bool) -> str:
        """One transaction; its outcome as the client knows it."""
        try:
            self.doing = f"transaction {number}: begin and produce"
            self.producer.begin_transaction()
            for index, value in enumerate(values):
                self.producer.produce(TXN, value, partition=(number + index) % PARTITIONS)
            self.doing = f"transaction {number}: send_offsets_to_transaction"
            self.producer.send_offsets_to_transaction(
                [TopicPartition(IDEM, 0, number + 1)], self.group.consumer_group_metadata(),
                CLIENT_TIMEOUT)
        except KafkaException as exc:
            return self._recover(exc.args[0])
        return self._end(commit)

    def _end(self, commit: bool) -> str:
        for attempt in range(COMMIT_ATTEMPTS):
            self.doing = f"{'commit' if commit else 'abort'} attempt {attempt}"
            try:
                if commit:
                    self.producer.commit_transaction(CLIENT_TIMEOUT)
                    return "committed"
                self.producer.abort_transaction(CLIENT_TIMEOUT)
                return "aborted"
            except KafkaException as exc:
                err = exc.args[0]
                self.doing += f" failed: {err}"
                if err.retriable():
                    continue  # librdkafka: call commit/abort again
                return self._recover(err)
        return self._recover(None)

    def _recover(self, err: KafkaError | None) -> str:
        """After an error: abort when librdkafka says so (nothing of the transaction is
        visible then), else give up on this producer and initialize a new one on the same
        transactional id (the outcome stays unknown; the coordinator aborts an open
        transaction when the new producer initializes)."""
        if err is not None and err.txn_requires_abort():
            for _ in range(COMMIT_ATTEMPTS):
                try:
                    self.producer.abort_transaction(CLIENT_TIMEOUT)
                    return "aborted_on_error"
                except KafkaException as exc:
                    if not exc.args[0].retriable():
                        break
        self.anomalies.append(f"transactional producer replaced after: {err}")
        self.reinits += 1
        self.producer = self._producer()
        return "unknown"

    def close(self) -> None:
        self.producer.flush(CLIENT_TIMEOUT)
        self.group.close()


class GroupReader(Worker):
    """A consumer of the group READERS committing its position after every few polls."""

    def __init__(self, bootstrap: str, deadline: float) -> None:
        super().__init__("group-reader", deadline)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": READERS,
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                                  **RECONNECT})
        self.last_commit: dict[int, int] = {}  # partition -> offset last committed
        self.commits = 0
        self.checks = 0
        self.check_requested = threading.Event()
        self.lock = threading.Lock()

    def loop(self) -> None:
        self.consumer.subscribe([IDEM])
        read = 0
        while self.running():
            message = self.consumer.poll(0.1)
            if message is not None and message.error() is None:
                read += 1
            if self.check_requested.is_set() and self._check():
                self.check_requested.clear()
            if read >= 50:
                read = 0
                try:
                    done = self.consumer.commit(asynchronous=False)
                except KafkaException:
                    continue  # refused (rebalancing, coordinator moving): not committed
                for tp in done or ():
                    if tp.error is None and tp.offset >= 0:
                        with self.lock:
                            self.last_commit[tp.partition] = tp.offset
                self.commits += 1
                self.progress += 1

    def _check(self) -> bool:
        """Compare the stored offsets with the last successful commit; False when they
        could not be read now (tried again at the next poll)."""
        try:
            stored = self.consumer.committed(
                [TopicPartition(IDEM, p) for p in range(PARTITIONS)], 5.0)
        except KafkaException:
            return False
        with self.lock:
            expected = dict(self.last_commit)
        for tp in stored:
            if tp.error is not None:
                return False
            if tp.partition in expected and tp.offset < expected[tp.partition]:
                self.anomalies.append(f"committed offset of {IDEM}-{tp.partition} went back: "
                                      f"{tp.offset} < {expected[tp.partition]}")
        self.checks += 1
        return True

    def close(self) -> None:
        self.consumer.close()


def read_all(bootstrap: str, topic: str, isolation: str) -> dict[int, list[tuple[int, bytes]]]:
    """Every value of the topic with its offset, per partition, read to the end (each
    partition's end-of-partition event; bounded polls)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"final-{topic}",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True, "log_level": 2})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()
    try:
        for _ in range(READ_BATCHES):
            for message in consumer.consume(1000, 0.5):
                error = message.error()
                if error is None:
                    at_end.discard(message.partition())
                    out[message.partition()].append((message.offset(), message.value()))
                elif error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                else:
                    raise KafkaException(error)
            if len(at_end) == PARTITIONS:
                break
        else:
            raise AssertionError(f"{topic} not read to its end")
    finally:
        consumer.close()
    return out


def _wait_for_progress(workers: list[Worker], since: list[int], timeout: float) -> str | None:
    """None once every worker has moved on from `since`, else what went wrong."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(w.progress > s for w, s in zip(workers, since, strict=True)):
            return None
        for worker in workers:
            if worker.failure is not None or not worker.is_alive():
                return f"{worker.name} stopped: {worker.failure!r} {worker.anomalies}"
        time.sleep(0.05)
    return (f"no progress within {timeout} s after a restart: "
            f"{[(w.name, s, w.progress, w.doing) for w, s in zip(workers, since, strict=True)]}")


def run_loop(work_dir: Path, restarts: int, seed: int, max_seconds: float = 600.0,
             min_load: float = 0.2, max_load: float = 1.0, debug: bool = False) -> LoopReport:
    """Run the loop in `work_dir` (the data directory and the broker's log go there)."""
    report = LoopReport(seed)
    rng = random.Random(seed)
    began = time.monotonic()
    deadline = began + max_seconds
    port = free_port_base(4)
    broker = BrokerProcess(work_dir / "data", port, port + 3, work_dir / "broker.log")
    broker.start()
    bootstrap = broker.fields["bootstrap"]
    workers: list[Worker] = []
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_topics([NewTopic(t, PARTITIONS, 3) for t in (IDEM, TXN)])
        for future in futures.values():
            future.result(CLIENT_TIMEOUT)
        idem = IdempotentWriter(bootstrap, deadline)
        txn = TransactionalWriter(bootstrap, deadline, rng.randrange(2**32),
                                  work_dir / "txn-producer.log" if debug else None)
        reader = GroupReader(bootstrap, deadline)
        workers = [idem, txn, reader]
        for worker in workers:
            worker.start()
        stalled = _wait_for_progress(workers, [0, 0, 0], PROGRESS_TIMEOUT)
        for _ in range(restarts if stalled is None else 0):
            if time.monotonic() > deadline:
                report.anomalies.append(f"out of time after {report.restarts} restarts")
                break
            time.sleep(rng.uniform(min_load, max_load))
            broker.kill()
            report.states_at_kill[broker.stored_transaction_state()] += 1
            broker.start()
            report.restarts += 1
            state = broker.transaction_state()
            if state is not None:
                report.producer_ids.add(state["producer_id"])
            reader.check_requested.set()
            stalled = _wait_for_progress(workers, [w.progress for w in workers],
                                         PROGRESS_TIMEOUT)
            if stalled is not None:
                break
        if stalled is not None:
            import faulthandler
            faulthandler.dump_traceback(all_threads=True)
            _, view = http_json(broker.fields["control"] + "/state")
            report.anomalies.append(stalled)
            report.anomalies.append(json.dumps(
                {k: view.get(k) for k in ("transactions", "groups")}, default=str)[:4000])
        for worker in workers:
            worker.stop_event.set()
        for worker in workers:
            worker.join(CLIENT_TIMEOUT * 4)
            if worker.is_alive() or worker.failure is not None:
                report.anomalies.append(f"{worker.name} did not end cleanly: {worker.failure!r}")
        reader.check_requested.set()
        if not reader._check():
            report.anomalies.append("the group's committed offsets could not be read")
        state = broker.transaction_state()
        if state is not None:
            report.producer_ids.add(state["producer_id"])
        try:
            _check(report, bootstrap, idem, txn, reader)
        except (AssertionError, KafkaException) as exc:
            report.anomalies.append(f"the final check failed: {exc!r}")
        txn.close()
        reader.close()
    finally:
        for worker in workers:
            worker.stop_event.set()
        broker.stop()
    report.seconds = time.monotonic() - began
    return report


def _check(report: LoopReport, bootstrap: str, idem: IdempotentWriter,
           txn: TransactionalWriter, reader: GroupReader) -> None:
    for worker in (idem, txn, reader):
        report.anomalies.extend(worker.anomalies)
    report.acknowledged = len(idem.acked)
    report.delivery_failures = len(idem.failed)
    report.anomalies.extend(f"not delivered: {value!r}: {err}" for value, err in idem.failed)
    report.offset_commits, report.offset_checks = reader.commits, reader.checks
    # the idempotent producer's values: each acknowledged one where it was acknowledged,
    # none twice
    stored = read_all(bootstrap, IDEM, "read_uncommitted")
    at = {(p, offset): value for p, entries in stored.items() for offset, value in entries}
    counts = Counter(value for entries in stored.values() for _, value in entries)
    for value, count in counts.items():
        if count > 1:
            report.anomalies.append(f"{value!r} stored {count} times")
    for value, place in idem.acked.items():
        if at.get(place) != value:
            report.anomalies.append(f"acknowledged {value!r} at {place}, found "
                                    f"{at.get(place)!r}")
    # transactions: committed ones whole, aborted ones never, unknown ones all or nothing
    visible = Counter(value for entries in read_all(bootstrap, TXN, "read_committed").values()
                      for _, value in entries)
    known: set[bytes] = set()
    for number, (values, outcome) in sorted(txn.transactions.items()):
        report.transactions[outcome] += 1
        known.update(values)
        seen = [visible[v] for v in values]
        if outcome == "committed":
            report.transactional_values += len(values)
            if seen != [1] * len(values):
                report.anomalies.append(f"committed transaction {number}: {values} seen {seen}")
        elif outcome in ("aborted", "aborted_on_error") and any(seen):
            report.anomalies.append(f"aborted transaction {number}: {values} seen {seen}")
        elif outcome == "unknown" and seen not in ([0] * len(values), [1] * len(values)):
            report.anomalies.append(f"transaction {number} partly visible: {values} {seen}")
    for value in set(visible) - known:
        report.anomalies.append(f"read_committed shows {value!r}, written by no transaction")
    # the transactional offset: the last committed transaction's (or a later unknown one's)
    outcomes = sorted(txn.transactions.items())
    last = max((n for n, (_, o) in outcomes if o == "committed"), default=None)
    allowed = {None if last is None else last + 1} | {
        n + 1 for n, (_, o) in outcomes if o == "unknown" and (last is None or n > last)}
    [stored_offset] = txn.group.committed([TopicPartition(IDEM, 0)], CLIENT_TIMEOUT)
    found = None if stored_offset.offset < 0 else stored_offset.offset
    if found not in allowed:
        report.anomalies.append(f"transactional offset {found}, expected one of {allowed}")
    if len(report.producer_ids) > 1:
        report.anomalies.append(f"the transactional id changed producer ids: "
                                f"{sorted(report.producer_ids)}")


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--restarts", type=int, default=25)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-seconds", type=float, default=900.0)
    parser.add_argument("--debug", action="store_true",
                        help="librdkafka's debug log of the transactional producer, to "
                             "txn-producer.log in the work directory")
    parser.add_argument("--dir", type=Path, default=None,
                        help="work directory (default: a temporary one, removed after)")
    args = parser.parse_args(argv)
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        report = run_loop(args.dir, args.restarts, args.seed, args.max_seconds,
                          debug=args.debug)
    else:
        with tempfile.TemporaryDirectory(prefix="crash-loop-") as tmp:
            report = run_loop(Path(tmp), args.restarts, args.seed, args.max_seconds,
                              debug=args.debug)
    print(report.summary())
    for anomaly in report.anomalies[:50]:
        print("ANOMALY", anomaly)
    return 1 if report.anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
