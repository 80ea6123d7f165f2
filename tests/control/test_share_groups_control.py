"""The control API's view of share groups (KIP-932): the `state` section with members,
share-partitions and in-flight records, `set-share-group-config`, and `reset`."""

from __future__ import annotations

import pytest
from kafka_protocol_codec.records import RecordSpec, build_batch

from mockbroker import MockCluster
from mockbroker.control.errors import ControlError


async def test_state_shows_in_flight_records_and_reset_clears_them() -> None:
    async with MockCluster(brokers=1) as mc:
        await mc.control.create_topic("jobs", partitions=1)
        await mc.control.set_share_group_config("g", "share.auto.offset.reset", "earliest")
        cluster = mc.cluster
        batch = bytes(build_batch([RecordSpec(key=None, value=v, timestamp=1)
                                   for v in (b"a", b"b")]))
        assert cluster.produce(cluster.brokers[0], "jobs", 0, batch, acks=-1).error == 0
        joined = cluster.share_groups.heartbeat("g", "m1", 0, None, ["jobs"])
        topic_id = cluster.image.topics["jobs"].topic_id
        log = cluster.log(topic_id, 0)
        assert log is not None
        share = cluster.share_groups.share_partition("g", topic_id, log)
        share.acquire("m1", log, log.high_watermark, cluster.clock.now_ms())

        state = (await mc.control.state())["share_groups"]["g"]
        assert state["state"] == "Stable" and state["group_epoch"] == joined.member_epoch
        assert state["configs"] == {"share.auto.offset.reset": "earliest"}
        assert state["members"]["m1"]["assignment"] == {"jobs": [0]}
        [part] = state["share_partitions"]
        assert (part["topic"], part["spso"], part["speo"]) == ("jobs", 0, 2)
        assert part["in_flight"] == [{"first_offset": 0, "last_offset": 1, "state": "Acquired",
                                      "delivery_count": 1, "member_id": "m1"}]

        await mc.control.reset()
        assert (await mc.control.state())["share_groups"] == {}


async def test_set_share_group_config_refuses_unknown_keys_and_values() -> None:
    async with MockCluster(brokers=1) as mc:
        with pytest.raises(ControlError, match="unknown share group config"):
            await mc.control.set_share_group_config("g", "share.foo", "x")
        with pytest.raises(ControlError, match="must be one of"):
            await mc.control.set_share_group_config("g", "share.isolation.level", "dirty")
