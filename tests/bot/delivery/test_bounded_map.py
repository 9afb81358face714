"""``RecentMap``: a bounded map that forgets its oldest entries, in a stated order."""

from __future__ import annotations

from bot.delivery.bounded import RecentMap

CHATS = 100_000


def test_it_keeps_the_newest_entries_however_many_it_saw() -> None:
    names: RecentMap[str, int] = RecentMap(size=1_000)
    for chat in range(CHATS):
        names.set(f"chat-{chat}", chat)
    assert len(names) == 1_000
    assert "chat-0" not in names
    assert names.get("chat-0") is None
    assert names.get(f"chat-{CHATS - 1}") == CHATS - 1


def test_set_leaves_an_existing_key_in_its_place() -> None:
    seen: RecentMap[str, int] = RecentMap(size=2)
    seen.set("a", 1)
    seen.set("b", 2)
    seen.set("a", 3)  # replaced, still the oldest
    seen.set("c", 4)
    assert "a" not in seen
    assert (seen.get("b"), seen.get("c")) == (2, 4)


def test_keep_makes_the_key_the_newest() -> None:
    stages: RecentMap[str, int] = RecentMap(size=2)
    stages.keep("a", 1)
    stages.keep("b", 2)
    stages.keep("a", 3)
    stages.keep("c", 4)
    assert "b" not in stages
    assert (stages.get("a"), stages.get("c")) == (3, 4)


def test_touch_marks_a_key_recently_used_and_misses_quietly() -> None:
    cache: RecentMap[str, str] = RecentMap(size=2)
    cache.set("a", "Ada")
    cache.set("b", "Bob")
    assert cache.touch("a") == "Ada"
    assert cache.touch("zed") is None
    cache.set("c", "Cy")
    assert "b" not in cache
    assert (cache.get("a"), cache.get("c")) == ("Ada", "Cy")


def test_pop_removes_and_returns_the_value() -> None:
    questions: RecentMap[str, int] = RecentMap(size=4)
    questions.set("a", 1)
    assert questions.pop("a") == 1
    assert questions.pop("a") is None
    assert len(questions) == 0
