"""Shared by the console's usage tests: recording a turn's usage as the meter does, a store
whose usage is hidden, and reading a page's table."""

from __future__ import annotations

from datetime import datetime
from html.parser import HTMLParser
from itertools import count
from typing import cast

from typing_extensions import override

from bot.ports import Store
from bot.ports.usage import UsageRecord, usage_of

_TURNS = count(1)


async def spend(  # noqa: PLR0913 - one turn's dimensions and amounts
    store: Store,
    at: datetime,
    *,
    user: str = "u1",
    chat: str = "c1",
    channel: str = "telegram",
    model: str = "gpt-test",
    tokens: tuple[int, int, int] = (0, 0, 0),
    cost: float = 0.0,
    unreported: int = 0,
) -> None:
    """One turn's usage of one model: ``tokens`` are input, output and cached."""
    usage = usage_of(store)
    assert usage is not None
    input_tokens, output_tokens, cached_tokens = tokens
    record = UsageRecord(
        at=at, channel=channel, account_id="", chat_id=chat, user_id=user, thread_id="t1",
        model=model, correlation_id=f"turn-{next(_TURNS)}", calls=1 + unreported,
        unreported_calls=unreported, input_tokens=input_tokens, output_tokens=output_tokens,
        cached_tokens=cached_tokens, cost=cost,
    )  # fmt: skip
    await usage.record([record])


class _WithoutUsage:
    """A real store with its usage table out of sight: a store that records no usage."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> object:
        if name == "usage":
            raise AttributeError(name)
        return getattr(self._store, name)


def without_usage(store: Store) -> Store:
    return cast(Store, _WithoutUsage(store))


class _Table(HTMLParser):
    def __init__(self, table_id: str) -> None:
        super().__init__()
        self._id = table_id
        self._depth = 0
        self._cell: list[str] | None = None
        self.rows: list[list[str]] = []

    @override
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and (self._depth or ("id", self._id) in attrs):
            self._depth += 1
        elif self._depth and tag == "tr":
            self.rows.append([])
        elif self._depth and tag in ("td", "th"):
            self._cell = []

    @override
    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._depth:
            self._depth -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    @override
    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def table_rows(page: str, table_id: str) -> list[list[str]]:
    """The text of each cell of the table ``table_id``, row by row, its header row first."""
    parser = _Table(table_id)
    parser.feed(page)
    return parser.rows
