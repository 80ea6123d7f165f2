"""The Java client's side of the workload, without a JVM: its event lines into the history,
the plan it is given, and the command line refusing "java" without a class path.

The Java program itself (mockbroker/check/java/CheckClient.java) runs in
tests/check/test_check_runs.py::test_check_run_java.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from mockbroker.check import cli
from mockbroker.check.history import TXN_ABORTED, TXN_COMMITTED
from mockbroker.check.javaclient import CLASSPATH_ENV, JavaEvents, plan_lines
from mockbroker.check.plan import make_plan
from mockbroker.check.workload import Recorder


def _line(kind: str, client: str, t: int | None, **fields: Any) -> str:
    event: dict[str, Any] = {"e": kind, "c": client, **fields}
    if t is not None:
        event["t"] = t
    return json.dumps(event)


def test_event_lines_become_the_history() -> None:
    rec = Recorder("check-1", 4)
    errors: list[str] = []
    events = JavaEvents(rec, {"java-assign": "assign", "java-sub0": "subscribe"}, errors,
                        time.monotonic())
    t0 = time.monotonic_ns()
    ms = 1_000_000
    for text in [
        _line("hello", "java", t0),
        _line("write", "java-txn0", t0 + 10 * ms, v="java-txn0.0", seq=0, p=2,
              txn="java-txn0/0"),
        _line("write", "java-txn0", t0 + 11 * ms, v="java-txn0.1", seq=1, p=3,
              txn="java-txn0/0"),
        _line("ack", "java-txn0", t0 + 20 * ms, v="java-txn0.0", o=7),
        _line("ack", "java-txn0", t0 + 21 * ms, v="java-txn0.1",
              err="TimeoutException: Expiring 1 record(s)"),
        _line("txn", "java-txn0", t0 + 40 * ms, id="java-txn0/0",
              values=["java-txn0.0", "java-txn0.1"], outcome="committed",
              commit_at=t0 + 30 * ms, err=None),
        _line("txn", "java-txn0", t0 + 50 * ms, id="java-txn0/1", values=["java-txn0.2"],
              outcome="aborted", commit_at=None, err=None),
        _line("write", "java-idem", t0 + 12 * ms, v="java-idem.0", seq=0, p=1, txn=None),
        _line("session", "java-assign", t0 + 5 * ms, p=2, mode="assign", start=0),
        _line("read", "java-assign", t0 + 60 * ms, p=2, o=7, v="java-txn0.0"),
        # a read in a partition of no session opens one, in the consumer's mode
        _line("read", "java-sub0", t0 + 61 * ms, p=3, o=0, v="cf-txn1.4"),
        _line("revoke", "java-sub0", t0 + 62 * ms, p=3),
        _line("read", "java-sub0", t0 + 63 * ms, p=3, o=1, v="cf-txn1.5"),
        _line("error", "java-txn1", t0 + 70 * ms, err="ProducerFencedException: fenced"),
        _line("fatal", "java-txn1", t0 + 71 * ms, err="could not start"),
        "SLF4J: a line that is not an event",
        "",
        _line("writers-done", "java", t0 + 80 * ms),
        _line("exit", "java", t0 + 90 * ms),
    ]:
        events.line(text)

    h = rec.snapshot()
    at = rec.since_start(t0 / 1e9)  # the JVM's clock is this one: no shift
    assert events.shift == 0.0 and events.hello.is_set()
    assert [(w.value, w.producer, w.seq, w.partition, w.txn) for w in h.writes] == [
        ("java-txn0.0", "java-txn0", 0, 2, "java-txn0/0"),
        ("java-txn0.1", "java-txn0", 1, 3, "java-txn0/0"),
        ("java-idem.0", "java-idem", 0, 1, None)]
    assert h.writes[0].at == pytest.approx(at + 0.010, abs=1e-5)
    assert [(a.value, a.offset, a.ok) for a in h.acks] == [
        ("java-txn0.0", 7, True), ("java-txn0.1", None, False)]
    assert h.acks[1].error == "TimeoutException: Expiring 1 record(s)"
    committed, aborted = h.txns
    assert (committed.id, committed.producer, committed.values, committed.outcome) == (
        "java-txn0/0", "java-txn0", ("java-txn0.0", "java-txn0.1"), TXN_COMMITTED)
    assert committed.commit_at == pytest.approx(at + 0.030, abs=1e-5)
    assert committed.end_at == pytest.approx(at + 0.040, abs=1e-5)
    assert (aborted.outcome, aborted.commit_at) == (TXN_ABORTED, None)
    assert [(s.consumer, s.number, s.partition, s.mode, s.start_offset) for s in h.sessions] == [
        ("java-assign", 0, 2, "assign", 0),
        ("java-sub0", 0, 3, "subscribe", None),
        ("java-sub0", 1, 3, "subscribe", None)]
    assert [(r.consumer, r.session, r.partition, r.offset, r.value) for r in h.reads] == [
        ("java-assign", 0, 2, 7, "java-txn0.0"),
        ("java-sub0", 0, 3, 0, "cf-txn1.4"),
        ("java-sub0", 1, 3, 1, "cf-txn1.5")]
    assert h.reads[0].at == pytest.approx(at + 0.060, abs=1e-5)
    assert [(e.client, e.error) for e in h.client_events] == [
        ("java-txn1", "ProducerFencedException: fenced"),
        ("java-txn1", "could not start"),
        ("java", "stdout: SLF4J: a line that is not an event")]
    assert errors == ["java-txn1: could not start"]
    assert events.writers_done.is_set() and events.exited.is_set()


def test_another_clock_is_shifted_to_the_hello() -> None:
    """A JVM clock that is not time.monotonic() (not Linux, say) is mapped to the hello's
    arrival, and the history says so."""
    rec = Recorder("check-1", 1)
    events = JavaEvents(rec, {}, [], time.monotonic())
    far = time.monotonic_ns() + 3_600 * 1_000_000_000
    events.line(_line("hello", "java", far))
    assert events.shift == pytest.approx(-3600.0, abs=1.0)
    events.line(_line("write", "java-idem", far + 1_000_000, v="java-idem.0", seq=0, p=0,
                      txn=None))
    assert rec.snapshot().writes[0].at == pytest.approx(rec.now(), abs=0.5)
    assert "shifted" in rec.snapshot().client_events[0].error


def test_plan_lines_carry_each_producers_steps_to_its_budget() -> None:
    plan = make_plan(3, "none", 5.0, operations=60, partitions=4,
                     clients=("confluent", "java"))
    producers = [p for p in plan.producers if p.client == "java"]
    consumers = [c for c in plan.consumers if c.client == "java"]
    assert [p.name for p in producers] == ["java-idem", "java-txn0", "java-txn1"]
    assert [(c.name, c.mode) for c in consumers] == [("java-assign", "assign"),
                                                      ("java-sub0", "subscribe")]
    lines = plan_lines(plan, "127.0.0.1:9092", "check-3", 12.5, producers, consumers,
                       {"java-txn0": "check-x-java-txn0", "java-txn1": "check-x-java-txn1"},
                       {"java-sub0": "check-java-x"})
    assert lines[:4] == ["config\tbootstrap\t127.0.0.1:9092", "config\ttopic\tcheck-3",
                         "config\tpartitions\t4", "config\ttime_left\t12.500"]
    assert lines[-1] == "start"
    assert "producer\tjava-txn0\ttxn\t10\tcheck-x-java-txn0" in lines
    assert "producer\tjava-idem\tidem\t10\t-" in lines
    assert lines[-3:-1] == ["consumer\tjava-assign\tassign\t-",
                            "consumer\tjava-sub0\tsubscribe\tcheck-java-x"]
    for p in producers:
        steps = [line.split("\t") for line in lines if line.startswith(f"step\t{p.name}\t")]
        expected = [plan.step(p, n) for n in range(len(steps))]
        assert [(s[2], int(s[3]), s[4]) for s in steps] == [
            (str(int(e.commit)), e.pause_ms, ",".join(map(str, e.partitions)))
            for e in expected]
        sizes = [len(e.partitions) for e in expected]
        assert sum(sizes) >= plan.budget(p) > sum(sizes[:-1])  # the budget, no step more


def test_java_without_a_class_path_is_a_bad_command_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(CLASSPATH_ENV, raising=False)
    assert cli.main(["--clients", "confluent,java", "--faults", "none",
                     "--duration", "1", "--report", "-"]) == 2
    assert "--java-classpath" in capsys.readouterr().err
    assert cli.main(["--clients", "confluent,kotlin"]) == 2
