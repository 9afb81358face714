"""Per-chat memory stays small however many chats the bot has seen."""

from __future__ import annotations

from bot.delivery.bounded import RecentSet, Until
from bot.delivery.ratelimit import RateLimiter

CHATS = 100_000


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_until_forgets_chats_whose_time_has_passed() -> None:
    clock = Clock()
    waits: Until[str, float] = Until(clock)
    for chat in range(CHATS):
        clock.now += 0.001
        waits.set(f"chat-{chat}", clock.now + 1.0)  # each chat waits one second
    assert len(waits) < 4_000  # about a second's worth of chats (1000), not 100 000
    assert waits.get(f"chat-{CHATS - 1}") == clock.now + 1.0
    assert waits.get("chat-0") is None


def test_until_keeps_the_later_time_and_drops_a_passed_one_when_asked() -> None:
    clock = Clock()
    waits: Until[str, float] = Until(clock)
    waits.extend("a", 5.0)
    waits.extend("a", 3.0)
    assert waits.get("a") == 5.0
    clock.now = 5.0
    assert waits.get("a") is None
    assert len(waits) == 0


def test_recent_set_keeps_the_newest_members() -> None:
    unreachable: RecentSet[str] = RecentSet(size=10_000)
    for chat in range(CHATS):
        unreachable.add(f"chat-{chat}")
    assert len(unreachable) == 10_000
    assert "chat-0" not in unreachable
    assert f"chat-{CHATS - 1}" in unreachable
    unreachable.add("chat-90000")  # added again: now the newest
    unreachable.discard(f"chat-{CHATS - 1}")
    assert f"chat-{CHATS - 1}" not in unreachable


def test_the_rate_limiter_paces_100_000_chats_without_keeping_them() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    limiter.configure("tg", per_chat_interval_s=1.0, global_rate_per_s=0)
    for chat in range(CHATS):
        clock.now += 0.001
        assert limiter.reserve(("tg", "", f"chat-{chat}"), group=True) == 0
    assert not limiter.try_acquire(("tg", "", f"chat-{CHATS - 1}"))  # still paced
    clock.now += 1.0
    assert limiter.try_acquire(("tg", "", f"chat-{CHATS - 1}"))
