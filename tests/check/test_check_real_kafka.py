"""`mockbroker check` against real Apache Kafka: the same seeded workload and fault schedule
as tests/check/test_check_runs.py runs against mockbroker, where the faults apply to a real
KRaft cluster (tests/support/real_kafka_control.py): leader elections (a reassignment that
puts the target first, then a preferred election) and broker stops and crashes (SIGTERM,
SIGKILL) with restarts on the node's directory. Steps that exist only in the simulator (the
lagging follower's delayed replication) are refused and recorded; the rest of the step runs.
A real election or restart takes seconds, so the run covers the first steps of the schedule
(at least three elections, two crashes or stops), in order.

Three KRaft nodes (each broker and controller) start once for the module (~30 s here).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.check.test_check_runs import _check_run
from tests.support.real_kafka import RealKafka
from tests.support.real_kafka_control import RealKafkaControl

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKafka]:
    with RealKafka(Path(tmp_path_factory.mktemp("check-real-kafka")), nodes=3) as kafka:
        yield kafka


@pytest.mark.parametrize(("seed", "mix", "duration", "least_steps"), [
    pytest.param(5, "elections", 20.0, 3, id="elections-seed5"),
    # a crash or stop and the node's restart take ~15 s each on 2 busy cores
    pytest.param(2, "crashes", 30.0, 2, id="crashes-seed2"),
])
def test_check_run_against_real_kafka(real_cluster: RealKafka, seed: int, mix: str,
                                      duration: float, least_steps: int) -> None:
    control = RealKafkaControl(real_cluster)
    result = _check_run(seed, mix, duration, bootstrap=real_cluster.bootstrap_servers,
                        control=control, every_step=False, least_steps=least_steps)
    applied = [f for f in result.history.faults
               if f.verb in ("elect-leader", "stop-broker", "crash-broker", "start-broker")
               and f.error is None]
    assert applied, result.report["summary"]
    print(result.report["summary"])
