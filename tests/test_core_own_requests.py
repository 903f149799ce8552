"""The integration's own requests (pure): what ran when, so the server's sight of it is ours."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from custom_components.llm_warmth.core.own_requests import OwnRequestLog

T0 = datetime(2026, 12, 2, 7, 30, tzinfo=UTC)
M = "qwen3:8b"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_a_request_covers_its_span_with_two_seconds_of_slack_each_side() -> None:
    log = OwnRequestLog()
    log.started(M, at(10))
    log.ended(M, at(20))
    assert log.during(M, at(12), at(13)) is True
    assert log.during(M, at(0), at(8)) is True  # ends at 8, the request began at 10 - 2
    assert log.during(M, at(0), at(7.999)) is False
    assert log.during(M, at(22), at(30)) is True  # from 22: it ended at 20 + 2
    assert log.during(M, at(22.001), at(30)) is False
    assert log.during("other", at(12), at(13)) is False


def test_a_request_still_running_covers_everything_after_its_start() -> None:
    log = OwnRequestLog()
    log.started(M, at(10))
    assert log.during(M, at(1000), at(1001)) is True
    log.ended(M, at(11))
    assert log.during(M, at(1000), at(1001)) is False


def test_overlapping_requests_each_end_once() -> None:
    log = OwnRequestLog()
    log.started(M, at(10))
    log.started(M, at(15))
    log.ended(M, at(20))
    assert log.during(M, at(100), at(101)) is True  # one still runs
    log.ended(M, at(30))
    assert log.during(M, at(100), at(101)) is False
    assert log.during(M, at(31), at(32)) is True
    log.ended(M, at(40))  # an end with none running changes nothing
    assert log.during(M, at(50), at(60)) is False


def test_only_the_latest_requests_are_kept() -> None:
    log = OwnRequestLog()
    for index in range(33):  # 32 kept
        log.started(M, at(index * 100))
        log.ended(M, at(index * 100 + 1))
    assert log.during(M, at(0), at(1)) is False  # the oldest forgotten
    assert log.during(M, at(100), at(101)) is True
