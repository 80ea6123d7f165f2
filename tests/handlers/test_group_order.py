"""Batches of groups in the order of Kafka's group coordinator (mockbroker/handlers/
group_order.py). The expected orders are real Kafka 4.4's answers, recorded by the
conformance corpus (tests/conformance/cases/group_admin.py) with 5 offsets partitions."""

from __future__ import annotations

from mockbroker.handlers.group_order import java_string_hash, kafka_order, offsets_partition

PARTITIONS = 5


def test_java_string_hash() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("__consumer_offsets") == -970371369
    assert java_string_hash("\u00e9t\u00e9") == 0xE9 * 961 + 0x74 * 31 + 0xE9
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # a surrogate pair


def test_partition_of_a_group() -> None:
    assert [offsets_partition(f"conf-groups-batch-order-{x}", PARTITIONS)
            for x in "abcdefgh"] == [0, 1, 2, 3, 4, 0, 1, 2]


def test_describe_and_delete_orders_as_kafka_answered() -> None:
    names = [f"conf-groups-batch-order-{x}" for x in "abcdefgh"]
    # DescribeGroups / ConsumerGroupDescribe: partitions in HashMap order, request order
    # within one
    assert "".join(names[i][-1] for i in kafka_order(names, PARTITIONS)) == "afdebgch"
    # DeleteGroups: within a partition the refused groups first, by group id hash
    refused = {0, 1, 2, 5, 6, 7}
    assert "".join(names[i][-1] for i in kafka_order(names, PARTITIONS, refused)) \
        == "fadebgch"
    three = ["conf-groups-delete-2-empty", "conf-groups-delete-2-busy",
             "conf-groups-delete-2-missing"]
    assert kafka_order(three, PARTITIONS, {1, 2}) == [1, 0, 2]
    three = [name.replace("-2-", "-0-") for name in three]
    assert kafka_order(three, PARTITIONS, {1, 2}) == [0, 2, 1]
