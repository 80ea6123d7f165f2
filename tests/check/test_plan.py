"""The seeded plan of mockbroker check: the same seed gives the same plan, and the plan
keeps its bounds (faults one at a time, inside the run, of the mix's kinds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mockbroker.check.cli import main as check_main
from mockbroker.check.plan import CLOCK_KINDS, MIXES, make_plan


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_same_seed_same_plan(mix: str) -> None:
    a = make_plan(7, mix, duration=30.0, manual_clock=True)
    b = make_plan(7, mix, duration=30.0, manual_clock=True)
    assert a == b and a.digest() == b.digest() and a.to_json() == b.to_json()
    for producer in a.producers:
        assert [a.step(producer, n) for n in range(50)] == [b.step(producer, n)
                                                           for n in range(50)]


def test_another_seed_another_plan() -> None:
    a, b = make_plan(1, "all", 30.0), make_plan(2, "all", 30.0)
    assert a.faults != b.faults and a.digest() != b.digest()
    producer = a.producers[1]
    assert [a.step(producer, n) for n in range(20)] != [b.step(producer, n)
                                                       for n in range(20)]


@pytest.mark.parametrize("mix", sorted(MIXES))
@pytest.mark.parametrize("manual", [False, True])
def test_schedule_bounds(mix: str, manual: bool) -> None:
    plan = make_plan(3, mix, duration=40.0, partitions=5, manual_clock=manual)
    allowed = {k for k in MIXES[mix] if manual or k not in CLOCK_KINDS}
    assert {f.kind for f in plan.faults} <= allowed
    assert bool(plan.faults) == bool(allowed)
    for before, after in zip(plan.faults, plan.faults[1:], strict=False):
        assert before.at + before.hold < after.at  # one fault at a time
    for step in plan.faults:
        assert 0 < step.at and step.at + step.hold <= 40.0
        assert 0 <= step.params["partition"] < 5


def test_producer_steps() -> None:
    plan = make_plan(5, "none", partitions=4)
    txn = next(p for p in plan.producers if p.transactional)
    steps = [plan.step(txn, n) for n in range(400)]
    assert {len(s.partitions) for s in steps} == {1, 2, 3, 4}
    assert all(len(set(s.partitions)) >= 2 for s in steps if len(s.partitions) > 1)
    assert 0 < sum(not s.commit for s in steps) < len(steps) / 2
    idem = next(p for p in plan.producers if not p.transactional)
    assert all(plan.step(idem, n).commit for n in range(100))


def test_write_budget_is_shared() -> None:
    plan = make_plan(1, "none", operations=10)
    assert sum(plan.budget(p) for p in plan.producers) == 10


def test_cli_prints_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert check_main(["--plan", "--seed", "4", "--faults", "metadata",
                       "--duration", "10"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert check_main(["--plan", "--seed", "4", "--faults", "metadata",
                       "--duration", "10"]) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert first["digest"] == make_plan(4, "metadata", 10.0).digest()


def test_cli_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert check_main(["--faults", "floods"]) == 2
    assert check_main(["--faults", "clock"]) == 2
    assert "needs --clock manual" in capsys.readouterr().err
    assert check_main(["--clients", "kcat"]) == 2


def test_cli_checks_a_kept_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--from-history: the checks of a kept history, exit code 1 on an anomaly."""
    from tests.check.test_checks import clean, finished

    b, log = clean()
    del log[0][6]  # an acknowledged write gone
    kept = tmp_path / "history.json"
    kept.write_text(json.dumps(finished(b, log).to_json()))
    report = tmp_path / "report.json"
    assert check_main(["--from-history", str(kept), "--report", str(report)]) == 1
    assert capsys.readouterr().out.strip().endswith("anomalies: lost-write=1")
    assert json.loads(report.read_text())["anomalies"]["lost-write"]["count"] == 1
    b, log = clean()
    kept.write_text(json.dumps(finished(b, log).to_json()))
    assert check_main(["--from-history", str(kept), "--report", str(report)]) == 0
