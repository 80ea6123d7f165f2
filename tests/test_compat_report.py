"""The compatibility report's parts: telling the client of a test, naming its capability,
and rendering the table (tests/support/compat.py; `make compat` runs it on the client suites).
"""

from __future__ import annotations

from tests.support.compat import FAILED, PASSED, Results, capability_of, clients_of, render


def test_clients_of_test_ids() -> None:
    assert clients_of("test_roundtrip[aiokafka]") == {"aiokafka"}
    assert clients_of("test_roundtrip[kafka-python]") == {"kafka-python"}
    assert clients_of("test_idempotent_producer_replay_and_gap[confluent-kafka]") == {
        "confluent-kafka"}
    assert clients_of("test_cross_client[kcat-aiokafka-gzip]") == {"kcat", "aiokafka"}
    assert clients_of("test_kafkajs_transactions") == {"kafkajs"}
    assert clients_of("test_aiokafka_consume_transform_produce_commits_offsets_atomically") \
        == {"aiokafka"}
    assert clients_of("test_group_offsets") == set()


def test_capabilities_are_named_after_the_test() -> None:
    assert capability_of("test_produce_and_consume", {"client_name": "kcat"}) \
        == "produce and consume"
    assert capability_of("test_compression", {"compression": "zstd"}) == "compression (zstd)"
    assert capability_of("test_aiokafka_consume_transform_produce", {}) \
        == "consume transform produce"


def test_render_marks_passes_failures_and_gaps() -> None:
    results = Results()
    results.add("groups", "aiokafka", PASSED)
    results.add("groups", "kcat", FAILED)
    results.add("groups", "kcat", PASSED)  # one failure marks the cell failed
    results.add("transactions", "aiokafka", PASSED)
    text = render(results, {"aiokafka": "0.14.0", "kcat": "1.7.1"})
    assert "| aiokafka | 0.14.0 |" in text and "| kcat | 1.7.1 |" in text
    assert "| capability | aiokafka | kcat |" in text
    assert "| groups | ✅ | ❌ |" in text
    assert "| transactions | ✅ |  |" in text
    assert "2 of 3 (capability, client) pairs passed." in text
