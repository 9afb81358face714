"""The limiter's decisions, on an injected clock: pacing costs nothing when nothing is at risk."""

from __future__ import annotations

import itertools

import pytest

from bot.delivery.ratelimit import RateLimiter
from channels.feishu.adapter import FEISHU_CAPABILITIES
from channels.slack.adapter import SLACK_CAPABILITIES
from channels.telegram.adapter import TELEGRAM_CAPABILITIES

DM = ("telegram", "", "42")
OTHER_DM = ("telegram", "", "43")
GROUP = ("telegram", "", "-100")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def telegram(clock: Clock) -> RateLimiter:
    caps = TELEGRAM_CAPABILITIES
    limiter = RateLimiter(clock)
    limiter.configure(
        "telegram",
        per_chat_interval_s=caps.per_chat_interval_s,
        per_dm_interval_s=caps.per_dm_interval_s,
        global_rate_per_s=caps.global_rate_per_s,
        group_messages_per_minute=caps.group_messages_per_minute,
    )
    return limiter


def test_private_chats_are_not_paced_beyond_the_bot_wide_limit() -> None:
    limiter = telegram(Clock())
    # A placeholder, its final edit, a second chunk and a file: all at once.
    assert [limiter.reserve(DM, group=False) for _ in range(4)] == [0.0] * 4


def test_groups_keep_the_per_group_interval() -> None:
    limiter = telegram(Clock())
    assert limiter.reserve(GROUP, group=True) == 0.0
    assert limiter.reserve(GROUP, group=True) == pytest.approx(1.0)
    assert limiter.reserve(GROUP, group=True) == pytest.approx(2.0)
    assert limiter.reserve(DM, group=False) == 0.0  # another chat is not held by the group


def test_a_final_never_waits_behind_progress() -> None:
    limiter = telegram(Clock())
    # The placeholder and a streaming edit ...
    assert limiter.try_acquire(GROUP)
    assert limiter.try_acquire(GROUP)
    # ... reserve nothing in the chat: the final edit goes out at once.
    assert limiter.reserve(GROUP, group=True) == 0.0


def test_progress_waits_for_a_final_queued_ahead_of_it() -> None:
    clock = Clock()
    limiter = telegram(clock)
    assert limiter.reserve(GROUP, group=True) == 0.0
    assert not limiter.try_acquire(GROUP)  # the chat's next slot belongs to the next final
    clock.now += 1.0
    assert limiter.try_acquire(GROUP)


def test_a_group_takes_twenty_new_messages_a_minute() -> None:
    clock = Clock()
    limiter = telegram(clock)
    for _ in range(20):
        assert limiter.reserve(GROUP, group=True) == 0.0
        clock.now += 1.0
    # The 21st final waits for its place in the minute (the first went at 1000) ...
    assert limiter.reserve(GROUP, group=True) == pytest.approx(40.0)
    # ... and progress is refused at once rather than waiting in front of it.
    assert not limiter.try_acquire(GROUP, group=True, new_message=True)
    # Private chats are not limited this way.
    assert [limiter.reserve(DM, group=False) for _ in range(25)] == [0.0] * 25


def test_edits_and_progress_edits_do_not_count_in_a_groups_minute() -> None:
    clock = Clock()
    limiter = telegram(clock)
    for _ in range(30):
        assert limiter.try_acquire(GROUP)  # a streaming edit
        assert limiter.reserve(GROUP, group=True, new_message=False) == 0.0  # a final edit
        clock.now += 1.0
    assert limiter.reserve(GROUP, group=True) == 0.0  # a new message still has its place


def test_a_placeholder_takes_its_place_in_the_minute_or_is_refused() -> None:
    clock = Clock()
    limiter = telegram(clock)
    for _ in range(19):
        assert limiter.reserve(GROUP, group=True) == 0.0
        clock.now += 1.0
    assert limiter.try_acquire(GROUP, group=True, new_message=True)  # the 20th: a placeholder
    assert not limiter.try_acquire(GROUP, group=True, new_message=True)
    assert limiter.reserve(GROUP, group=True) == pytest.approx(41.0)  # 1000 + 60 - 1019
    clock.now = 1061.0
    assert limiter.try_acquire(GROUP, group=True, new_message=True)


def test_a_429_slows_exactly_the_chat_it_names() -> None:
    clock = Clock()
    limiter = telegram(clock)
    limiter.block(DM, 5.0)
    assert limiter.reserve(DM, group=False) == pytest.approx(5.0)
    assert not limiter.try_acquire(DM)
    assert limiter.reserve(OTHER_DM, group=False) == 0.0
    assert limiter.try_acquire(OTHER_DM)
    assert limiter.reserve(GROUP, group=True) == 0.0
    clock.now += 5.0
    assert limiter.try_acquire(DM)


def test_the_bot_wide_rate_allows_a_seconds_burst_then_paces() -> None:
    clock = Clock()
    limiter = telegram(clock)
    delays = [limiter.reserve(("telegram", "", str(chat)), group=False) for chat in range(40)]
    assert delays[:30] == [0.0] * 30
    assert all(later > earlier for earlier, later in itertools.pairwise(delays[30:]))
    assert delays[39] == pytest.approx((40 - 30) / 30.0)
    clock.now += 10.0  # the budget refills
    assert limiter.reserve(DM, group=False) == 0.0


def test_progress_leaves_half_the_burst_to_finals() -> None:
    clock = Clock()
    limiter = telegram(clock)
    edits = sum(limiter.try_acquire(("telegram", "", str(chat))) for chat in range(100))
    assert 14 <= edits <= 16  # about half of the 30 a second
    # Finals still have the rest of the burst.
    assert [limiter.reserve(("telegram", "", f"f{n}"), group=False) for n in range(14)] == [
        0.0
    ] * 14


def test_channels_pace_what_their_platform_limits() -> None:
    assert (SLACK_CAPABILITIES.per_chat_interval_s, SLACK_CAPABILITIES.per_dm_interval_s) == (
        1.0,
        1.0,
    )
    assert SLACK_CAPABILITIES.global_rate_per_s == 0.0  # tiers are per method: 429s say when
    feishu = FEISHU_CAPABILITIES
    assert (feishu.per_chat_interval_s, feishu.per_dm_interval_s) == (0.2, 0.2)  # 5 QPS
    assert feishu.global_rate_per_s == 50.0


def test_an_unconfigured_channel_is_not_paced_except_by_429s() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    key = ("x", "", "1")
    assert [limiter.reserve(key, group=True) for _ in range(3)] == [0.0] * 3
    limiter.block(key, 2.0)
    assert limiter.reserve(key, group=True) == pytest.approx(2.0)
