"""The pytest plugin's cluster pool with `data_dir`: a pooled cluster started again on the
directory has the topics of the last one, and the fixture's reset empties it."""

from __future__ import annotations

from pathlib import Path

from mockbroker.pytest_plugin import ClusterPool


def test_a_pooled_cluster_persists_and_its_reset_empties(tmp_path: Path) -> None:
    pool = ClusterPool({"brokers": 1})
    try:
        cluster = pool.get({"data_dir": str(tmp_path)})
        cluster.control.create_topic("kept", partitions=2)
    finally:
        pool.close()
    assert sorted(p.name for p in tmp_path.glob("broker-0/kept-*")) == ["kept-0", "kept-1"]

    again = ClusterPool({"brokers": 1})
    try:
        cluster = again.get({"data_dir": str(tmp_path)})
        assert list(cluster.control.state()["topics"]) == ["kept"]
        cluster.control.reset()  # what the `mockbroker` fixture does before each test
        assert cluster.control.state()["topics"] == {}
    finally:
        again.close()
    assert not list(tmp_path.glob("broker-0/kept-*"))
