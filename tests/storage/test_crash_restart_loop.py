"""SIGKILL and restart on --data-dir under load, 20 times: nothing acknowledged is lost.

The loop is tests/support/crash_loop.py (real confluent-kafka clients: an idempotent acks=all
producer, a transactional producer committing and aborting with transactional offsets, a
consumer group committing its position; the CLI killed at seeded random moments and started
again on the same directory and ports). `make crash-loop` runs it longer, with other seeds.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.crash_loop import run_loop

RESTARTS = 20
SEED = 20240
MAX_SECONDS = 900.0  # a bound on the run, not a figure it is expected to come near


def test_twenty_sigkill_restarts_under_load_lose_nothing_acknowledged(tmp_path: Path) -> None:
    report = run_loop(tmp_path, RESTARTS, SEED, MAX_SECONDS)
    print(report.summary())
    assert report.anomalies == [], report.summary()
    assert report.restarts == RESTARTS
    # the load was real, and both transaction outcomes happened
    assert report.acknowledged > 0 and report.offset_commits > 0
    assert report.transactions["committed"] > 0 and report.transactions["aborted"] > 0
    assert len(report.producer_ids) == 1  # one transactional id, one producer id throughout
