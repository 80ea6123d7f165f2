"""Short runs of mockbroker check: real clients against an in-process cluster under a fault
mix, then the checks over what they recorded.

Each run is bounded (its duration, then at most the drain and final-read timeouts); the
whole file takes about a minute. A run with no anomaly must also have done its work:
writes acknowledged, transactions committed and aborted, reads during the run and in the
final read, and every scheduled fault applied.

Two mixes found the data-loss defects of issue 24 before they were fixed, and guard them:
- "metadata": a leader whose metadata is paused kept serving as leader after another
  replica was elected, and also followed the new leader; what it accepted was read at
  offsets the final log gave to other values, and acks=all writes it acknowledged were lost;
- "elections": a transaction marker lost when a lagging replica was elected was never
  written again; committed values disappeared or aborted ones became visible.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mockbroker.check.checks import by_kind
from mockbroker.check.history import FINAL_CONSUMER, TXN_ABORTED, TXN_COMMITTED
from mockbroker.check.plan import CLIENTS
from mockbroker.check.runner import Options, Result, run
from tests.support.real_kafka import class_path

pytestmark = pytest.mark.clients

REPO = Path(__file__).resolve().parents[2]


class AnomaliesFound(Exception):
    """The run's checks found anomalies (the only failure the expected failures absorb:
    a run that could not do its work fails those tests too)."""


def _explain(result: Result) -> str:
    lines = [result.report["summary"], *result.errors]
    for kind, anomalies in by_kind(result.anomalies).items():
        lines += [f"  {kind}: {a.message}" for a in anomalies[:3]]
    return "\n".join(lines)


def _check_run(seed: int, mix: str, duration: float, clock: str = "system", *,
               bootstrap: str | None = None, control: Any = None,
               every_step: bool = True, least_steps: int = 3,
               clients: tuple[str, ...] = CLIENTS, java_classpath: str | None = None
               ) -> Result:
    """One run (in process, or against `bootstrap` through `control`) that must have done
    its work and found nothing (else AnomaliesFound); its result. `every_step`: the whole
    schedule must have run (else a prefix of at least `least_steps` steps: a real cluster's
    slower faults may not all fit in the duration)."""
    result = run(Options(seed=seed, mix=mix, duration=duration, clock=clock, drain=15.0,
                         final_timeout=20.0, bootstrap=bootstrap, clients=clients,
                         java_classpath=java_classpath), control=control)
    history = result.history
    assert not result.errors, _explain(result)
    # the workload did its work
    outcomes = {t.outcome for t in history.txns}
    assert {TXN_COMMITTED, TXN_ABORTED} <= outcomes, _explain(result)
    assert any(a.ok for a in history.acks), _explain(result)
    assert any(r.consumer != FINAL_CONSUMER for r in history.reads), _explain(result)
    assert any(r.consumer == FINAL_CONSUMER for r in history.reads), _explain(result)
    assert {s.mode for s in history.sessions} == {"assign", "subscribe", "final"}
    # the schedule ran as planned (the same seed, the same steps)
    ran = {(f.step, f.kind) for f in history.faults if f.step >= 0}
    planned = [(s.number, s.kind) for s in result.plan.faults]
    if every_step:
        assert ran == set(planned), _explain(result)
    else:
        assert ran == set(planned[:len(ran)]) \
            and len(ran) >= min(least_steps, len(planned)), \
            _explain(result)
    assert result.report["plan"]["digest"] == history.meta["plan_digest"]
    if not result.valid:
        raise AnomaliesFound(_explain(result))
    return result


@pytest.mark.parametrize(("seed", "mix", "duration", "clock"), [
    pytest.param(2, "crashes", 8.0, "system", id="crashes-seed2"),  # crash, stop, stop
    # reset, isolate (the clock jumps past the session timeout: a zombie), disconnect
    pytest.param(4, "network", 8.0, "manual", id="network-seed4-manual-clock"),
    # five stale leaders in 12 s: before 5545fea each run found offsets with two values,
    # values at two offsets and acknowledged writes lost
    pytest.param(1, "metadata", 12.0, "system", id="metadata-seed1"),
    # twelve elections of a lagging follower in 15 s: before b808eba each run lost over a
    # hundred committed values
    pytest.param(5, "elections", 15.0, "system", id="elections-seed5"),
    # paused and delayed replication, a lagging follower elected: before b808eba seeds 21
    # and 22 found aborted reads, a lost write and a partial transaction
    pytest.param(21, "replication", 10.0, "system", id="replication-seed21"),
    # jumps of the manual clock past session, transaction and lag timeouts
    pytest.param(3, "clock", 8.0, "manual", id="clock-seed3"),
    # one of each kind, on the manual clock: before the fixes seed 22 found offsets holding
    # two values
    pytest.param(22, "all", 12.0, "manual", id="all-seed22-manual-clock"),
])
def test_check_run(seed: int, mix: str, duration: float, clock: str) -> None:
    _check_run(seed, mix, duration, clock)


def _java_did_its_work(result: Result) -> None:
    """The Java client wrote (idempotently and in transactions, committed and aborted) and
    read (assigning and subscribed), and its transactions were v2 ones."""
    history = result.history
    outcomes = Counter(t.outcome for t in history.txns if t.producer.startswith("java-"))
    assert outcomes[TXN_COMMITTED] > 0 and outcomes[TXN_ABORTED] > 0, _explain(result)
    acked = {a.value.split(".")[0] for a in history.acks if a.ok}
    assert {"java-idem", "java-txn0", "java-txn1"} <= acked, _explain(result)
    readers = {r.consumer for r in history.reads}
    assert {"java-assign", "java-sub0"} <= readers, _explain(result)
    assert 2 in history.meta["cluster"]["transaction_versions"], history.meta["cluster"]


def test_check_run_java() -> None:
    """kafka-clients (build/jvm/lib) beside confluent-kafka under leader elections, also of
    lagging followers: the Java client negotiates transactions v2 (KIP-890: EndTxn v5,
    partitions added by Produce, an epoch bump per transaction) with mockbroker, which
    finalizes transaction.version 2; confluent-kafka keeps v1. The run's first use compiles
    the Java client (~4 s, cached by source and class path)."""
    result = _check_run(5, "elections", 12.0, clients=("confluent", "java"),
                        java_classpath=class_path())
    _java_did_its_work(result)


def test_cli_run_without_faults(tmp_path: Path) -> None:
    """The command: a summary line, exit code 0, the report, and the kept history checked
    again to the same verdict."""
    report, history = tmp_path / "report.json", tmp_path / "history.json"
    done = subprocess.run(
        [sys.executable, "-m", "mockbroker", "check", "--seed", "1", "--faults", "none",
         "--duration", "4", "--report", str(report), "--history", str(history)],
        capture_output=True, text=True, timeout=180, cwd=REPO, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith("mockbroker check: seed=1 faults=none operations=")
    assert summary.endswith("faults=0 anomalies: none")
    data = json.loads(report.read_text())
    assert data["valid"] is True and data["anomalies"] == {}
    figures = data["figures"]
    assert figures["acked"] == figures["writes"] > 0 and figures["final_reads"] > 0
    assert figures["txn_outcomes"]["committed"] > 0 and figures["txn_outcomes"]["aborted"] > 0
    again = subprocess.run(
        [sys.executable, "-m", "mockbroker", "check", "--from-history", str(history),
         "--report", str(tmp_path / "again.json")],
        capture_output=True, text=True, timeout=60, cwd=REPO, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.strip().endswith("anomalies: none")
