"""KIP-599 controller mutation quotas over the wire with the raw codec, on a manual clock so
the token bucket is exact. A controller_mutation_rate of 10/s gives a bucket of 110 tokens
(10 x 11 samples x 1 s); each topic is charged its partition count.

At every version boundary: the strict version (CreateTopics v6, DeleteTopics v5,
CreatePartitions v3) accepts mutations while the bucket is not negative, then refuses the
topics that find it exhausted with THROTTLING_QUOTA_EXCEEDED and reports the time to refill;
the version below is permissive: everything is accepted and the throttle time reported.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from mockbroker.cluster import ManualClock
from mockbroker.embedded import MockCluster
from tests.support.rawclient import RawClient, connect_broker

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
THROTTLING_QUOTA_EXCEEDED = 89
MESSAGE = "The throttling quota has been exceeded."
RATE = 10.0  # mutations per second: a 110-token bucket


@pytest.fixture
async def cluster() -> AsyncIterator[MockCluster]:
    async with MockCluster(brokers=1, clock=ManualClock()) as mc:
        await mc.control.set_quota({"client-id": "rawclient"},
                                   {"controller_mutation_rate": RATE})
        yield mc


def _clock(cluster: MockCluster) -> ManualClock:
    clock = cluster.cluster.clock
    assert isinstance(clock, ManualClock)
    return clock


async def _create(client: RawClient, version: int, topics: dict[str, int],
                  validate_only: bool = False) -> tuple[dict[str, tuple[int, str | None]], int]:
    answer = await client.request(CREATE_TOPICS, version, {"topics": [
        {"name": name, "num_partitions": count, "replication_factor": 1, "assignments": [],
         "configs": []} for name, count in topics.items()], "timeout_ms": 5000,
        "validate_only": validate_only})
    return ({t.name: (t.error_code, t.error_message) for t in answer.topics},
            answer.throttle_time_ms)


async def _delete(client: RawClient, version: int,
                  names: list[str]) -> tuple[dict[str, tuple[int, str | None]], int]:
    answer = await client.request(DELETE_TOPICS, version, {"topic_names": names,
                                                           "timeout_ms": 5000})
    return ({r.name: (r.error_code, r.error_message) for r in answer.responses},
            answer.throttle_time_ms)


async def _add_partitions(client: RawClient, version: int, counts: dict[str, int],
                          validate_only: bool = False
                          ) -> tuple[dict[str, tuple[int, str | None]], int]:
    answer = await client.request(CREATE_PARTITIONS, version, {"topics": [
        {"name": name, "count": count, "assignments": None} for name, count in counts.items()],
        "timeout_ms": 5000, "validate_only": validate_only})
    return ({r.name: (r.error_code, r.error_message) for r in answer.results},
            answer.throttle_time_ms)


def _tokens(cluster: MockCluster) -> Any:
    return cluster.cluster.mutation_quotas.tokens("ANONYMOUS", "rawclient")


async def test_create_topics_v6_is_strict(cluster: MockCluster) -> None:
    client = await connect_broker(cluster, 0)
    # 100 + 10 empty the bucket; "c" finds it at 0 (not negative): accepted, bucket -1;
    # "d" finds it negative: refused, 100 ms to refill one token at 10/s
    results, throttle = await _create(client, 6, {"a": 100, "b": 10, "c": 1, "d": 1})
    assert results == {"a": (0, None), "b": (0, None), "c": (0, None),
                       "d": (THROTTLING_QUOTA_EXCEEDED, MESSAGE)}
    assert throttle == 100
    assert sorted(cluster.cluster.image.topics) == ["a", "b", "c"]
    assert _tokens(cluster) == -1
    # after the refill the same topic goes through; one request may overdraw at will
    _clock(cluster).advance(100)
    results, throttle = await _create(client, 6, {"d": 30})
    assert (results, throttle) == ({"d": (0, None)}, 0)
    assert _tokens(cluster) == -30
    quotas = await cluster.control.quotas()
    assert quotas["controller_mutations"]["refused_topics"] == 1
    assert quotas["controller_mutations"]["mutations"] == 141


async def test_create_topics_v5_is_permissive(cluster: MockCluster) -> None:
    client = await connect_broker(cluster, 0)
    results, throttle = await _create(client, 5, {"a": 100, "b": 10, "c": 1, "d": 1})
    assert results == {name: (0, None) for name in "abcd"}
    assert throttle == 200  # the bucket at -2 refills in 200 ms
    assert sorted(cluster.cluster.image.topics) == ["a", "b", "c", "d"]
    # the throttle time shrinks with the time since it was noted; a request that leaves
    # the bucket non-negative reports none
    _clock(cluster).advance(1000)  # +10 tokens: 8
    results, throttle = await _create(client, 5, {"e": 8})
    assert (results, throttle) == ({"e": (0, None)}, 0)


async def test_create_topics_validate_only_spends_tokens_as_kraft(cluster: MockCluster) -> None:
    """KRaft's controller charges a validated topic before it drops a dry run's records."""
    client = await connect_broker(cluster, 0)
    results, _ = await _create(client, 7, {"dry": 111}, validate_only=True)
    assert results == {"dry": (0, None)}
    assert "dry" not in cluster.cluster.image.topics
    assert _tokens(cluster) == -1
    results, throttle = await _create(client, 7, {"dry": 1}, validate_only=True)
    assert (results, throttle) == ({"dry": (THROTTLING_QUOTA_EXCEEDED, MESSAGE)}, 100)


async def test_a_topic_failing_other_checks_is_not_charged(cluster: MockCluster) -> None:
    cluster.cluster.create_topic("exists", 1, 1)
    client = await connect_broker(cluster, 0)
    results, _ = await _create(client, 6, {"exists": 50, "bad rf": 5})
    assert results["exists"][0] == 36  # TOPIC_ALREADY_EXISTS
    assert _tokens(cluster) is None  # no bucket: nothing was charged


@pytest.mark.parametrize(("version", "strict"), [(4, False), (5, True)])
async def test_delete_topics_strict_from_v5(cluster: MockCluster, version: int,
                                            strict: bool) -> None:
    cluster.cluster.create_topic("big", 111, 1)
    cluster.cluster.create_topic("small", 2, 1)
    client = await connect_broker(cluster, 0)
    results, throttle = await _delete(client, version, ["big", "small"])
    if strict:  # "big" takes the bucket to -1, "small" is refused
        assert results == {"big": (0, None), "small": (THROTTLING_QUOTA_EXCEEDED, MESSAGE)}
        assert throttle == 100
        assert sorted(cluster.cluster.image.topics) == ["small"]
    else:
        assert results == {"big": (0, None), "small": (0, None)}
        assert throttle == 300  # -3 tokens
        assert sorted(cluster.cluster.image.topics) == []


@pytest.mark.parametrize(("version", "strict"), [(2, False), (3, True)])
async def test_create_partitions_strict_from_v3(cluster: MockCluster, version: int,
                                                strict: bool) -> None:
    cluster.cluster.create_topic("wide", 1, 1)
    cluster.cluster.create_topic("narrow", 1, 1)
    client = await connect_broker(cluster, 0)
    results, throttle = await _add_partitions(client, version, {"wide": 112, "narrow": 3})
    counts = {n: len(t.partitions) for n, t in cluster.cluster.image.topics.items()}
    if strict:
        assert results == {"wide": (0, None), "narrow": (THROTTLING_QUOTA_EXCEEDED, MESSAGE)}
        assert throttle == 100
        assert counts == {"wide": 112, "narrow": 1}
    else:
        assert results == {"wide": (0, None), "narrow": (0, None)}
        assert throttle == 300
        assert counts == {"wide": 112, "narrow": 3}


async def test_no_quota_nothing_measured() -> None:
    async with MockCluster(brokers=1, clock=ManualClock()) as mc:
        client = await connect_broker(mc, 0)
        results, throttle = await _create(client, 7, {"free": 500})
        assert (results, throttle) == ({"free": (0, None)}, 0)
        assert (await mc.control.quotas())["controller_mutations"]["mutations"] == 0


async def test_quota_by_user_default_applies_to_every_client(cluster: MockCluster) -> None:
    """The lookup follows Kafka's precedence: a default-user quota reaches another client."""
    await cluster.control.set_quota({"user": None}, {"controller_mutation_rate": 1.0})
    other = await connect_broker(cluster, 0, client_id="someone-else")
    results, throttle = await _create(other, 6, {"x": 11, "y": 1, "z": 1})
    assert results == {"x": (0, None), "y": (0, None), "z": (THROTTLING_QUOTA_EXCEEDED, MESSAGE)}
    assert throttle == 1000
