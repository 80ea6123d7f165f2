"""The CLI flags for broker heartbeats and the lowest acknowledged metadata offset (the
heartbeat interval and consistent-read mode), and the KIP-848 consumer-group timers."""

from __future__ import annotations

import pytest

from mockbroker.cli import build_parser


def test_defaults_and_values() -> None:
    parser = build_parser()
    defaults = parser.parse_args([])
    assert (defaults.heartbeat_interval_ms, defaults.consistent_metadata) == (500, False)
    args = parser.parse_args(["--heartbeat-interval-ms", "250", "--consistent-metadata"])
    assert (args.heartbeat_interval_ms, args.consistent_metadata) == (250, True)


@pytest.mark.parametrize("bad", ["0", "-5", "soon"])
def test_bad_intervals_are_refused(bad: str) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--heartbeat-interval-ms", bad])


def test_consumer_group_timer_flags() -> None:
    """KIP-848 timers: Kafka's defaults, and what the flags set."""
    defaults = build_parser().parse_args([])
    assert (defaults.group_consumer_heartbeat_interval_ms,
            defaults.group_consumer_session_timeout_ms) == (5000, 45000)
    args = build_parser().parse_args(["--group-consumer-heartbeat-interval-ms", "250",
                                      "--group-consumer-session-timeout-ms", "6000"])
    assert (args.group_consumer_heartbeat_interval_ms,
            args.group_consumer_session_timeout_ms) == (250, 6000)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--group-consumer-heartbeat-interval-ms", "0"])
