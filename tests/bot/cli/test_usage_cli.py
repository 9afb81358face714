"""``switchboard usage`` against a real SQLite store: the table by each grouping with its total
line, JSON and CSV, the filters, ``--since`` / ``--until`` read in ``usage.timezone`` (by
default the month so far), and bad input refused as a usage error naming the problem."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli import main
from bot.messages import utc_now
from bot.ports.usage import UsageRecord
from store.sqlite import SqliteStore
from tests.bot.cli.cli_support import run_cli

DAY = datetime(2026, 11, 10, 9, 0, tzinfo=UTC)


def usage(
    at: datetime, user_id: str, tokens: int, *, model: str = "gpt-4o", chat_id: str = "-100"
) -> UsageRecord:
    return UsageRecord(
        at=at, channel="telegram", account_id="", chat_id=chat_id, user_id=user_id,
        thread_id="th-1", model=model, correlation_id="corr-1", calls=2, unreported_calls=1,
        input_tokens=tokens, output_tokens=tokens // 10, cached_tokens=tokens // 2,
        cost=tokens / 1000,
    )  # fmt: skip


def record(config: Path, *turns: list[UsageRecord]) -> None:
    async def write() -> None:
        async with SqliteStore(config.parent / "state" / "switchboard.db") as store:
            for turn in turns:
                await store.usage.record(turn)

    asyncio.run(write())


def test_the_table_lists_the_largest_groups_first_then_the_total(config: Path) -> None:
    record(
        config,
        [usage(DAY, "ada", 1000), usage(DAY, "ada", 500, model="o3")],
        [usage(DAY, "bob", 20000, chat_id="-200")],
        [usage(DAY, "cy", 10)],
    )
    shown = run_cli("usage", "-c", config, "--since", "2026-11-01", "--until", "2026-12-01")
    assert shown.status == 0, shown.err
    title, header, *rows, total = shown.out.splitlines()
    assert title == "usage by user from 2026-11-01 00:00 to 2026-12-01 00:00 (UTC)"
    assert header.split() == [
        "GROUP", "TURNS", "CALLS", "UNREPORTED", "INPUT", "OUTPUT", "CACHED", "TOKENS", "COST",
    ]  # fmt: skip
    assert [row.split() for row in rows] == [
        ["telegram:bob", "1", "2", "1", "20,000", "2,000", "10,000", "22,000", "20.0000"],
        ["telegram:ada", "1", "4", "2", "1,500", "150", "750", "1,650", "1.5000"],
        ["telegram:cy", "1", "2", "1", "10", "1", "5", "11", "0.0100"],
    ]
    assert total.split() == ["total", "3", "8", "4", "21,510", "2,151", "10,755", "23,661",
                             "21.5100"]  # fmt: skip
    assert len({len(line) for line in (header, *rows, total)}) == 1  # aligned columns
    assert header.index("COST") + len("COST") == len(header)  # numbers end at the right

    chats = run_cli("usage", "-c", config, "--since", "2026-11-01", "--by", "chat", "--limit", "1")
    assert [line.split()[0] for line in chats.out.splitlines()[2:]] == ["telegram:-200", "total"]
    models = run_cli("usage", "-c", config, "--since", "2026-11-01", "--by", "model", "--json")
    assert [(m["group"], m["turns"], m["tokens"]) for m in models.json()] == [
        ("gpt-4o", 3, 23111),  # a turn counts under its first model
        ("o3", 0, 550),
    ]


def test_json_and_csv_hold_each_group_with_every_count(config: Path) -> None:
    record(config, [usage(DAY, "ada", 1000)], [usage(DAY, "bob", 300, chat_id="-200")])
    since = ("--since", "2026-11-10", "--until", "2026-11-11")
    listed = run_cli("usage", "-c", config, *since, "--json", "--user", "ada").json()
    assert listed == [
        {"group": "telegram:ada", "turns": 1, "calls": 2, "unreported_calls": 1,
         "input_tokens": 1000, "output_tokens": 100, "cached_tokens": 500, "tokens": 1100,
         "cost": 1.0},
    ]  # fmt: skip
    shown = run_cli("usage", "-c", config, *since, "--csv", "--by", "chat")
    assert shown.status == 0, shown.err
    rows = list(csv.DictReader(io.StringIO(shown.out)))
    assert [(r["group"], r["tokens"], r["cost"]) for r in rows] == [
        ("telegram:-100", "1100", "1.0"),
        ("telegram:-200", "330", "0.3"),
    ]
    assert run_cli("usage", "-c", config, *since, "--json", "--chat", "-300").json() == []
    assert run_cli("usage", "-c", config, *since, "--json", "--channel", "slack").json() == []


def test_by_default_the_month_so_far_is_summed(config: Path) -> None:
    now = utc_now()
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    record(
        config,
        [usage(month_start - timedelta(seconds=1), "ada", 7000)],  # last month
        [usage(now, "ada", 5)],
    )
    (ada,) = run_cli("usage", "-c", config, "--json").json()
    assert ada["input_tokens"] == 5
    (ada,) = run_cli("usage", "-c", config, "--json", "--since", "400d").json()
    assert ada["input_tokens"] == 7005


def test_dates_begin_at_midnight_in_the_usage_time_zone(config: Path) -> None:
    with config.open("a") as file:
        file.write("usage: {timezone: Asia/Tokyo}\n")  # UTC+9
    tokyo_midnight = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
    record(
        config,
        [usage(tokyo_midnight - timedelta(minutes=1), "ada", 1)],
        [usage(tokyo_midnight, "ada", 20)],
    )
    (ada,) = run_cli("usage", "-c", config, "--json", "--since", "2026-12-01").json()
    assert ada["input_tokens"] == 20
    (ada,) = run_cli(
        "usage", "-c", config, "--json", "--since", "2026-11-30T23:59", "--until", "2026-12-01"
    ).json()
    assert ada["input_tokens"] == 1
    shown = run_cli("usage", "-c", config, "--since", "2026-11-30T15:00:00+00:00")
    assert shown.out.splitlines()[0] == ("usage by user from 2026-12-01 00:00 to now (Asia/Tokyo)")


def refused(*args: str | Path) -> str:
    """What argparse printed as it refused ``switchboard ARGS`` (exit status 2)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exited:
        main([str(arg) for arg in args])
    assert exited.value.code == 2
    return err.getvalue()


def test_bad_input_is_a_usage_error_naming_the_problem(config: Path) -> None:
    said = refused("usage", "-c", config, "--since", "last tuesday")
    assert said.startswith("usage: switchboard usage ")
    assert "argument --since: not a date (2026-12-01), a time (2026-12-01T09:00) or an age" in said
    assert "'last tuesday'" in said
    assert "invalid choice: 'thread'" in refused("usage", "-c", config, "--by", "thread")
    backwards = run_cli("usage", "-c", config, "--since", "2026-12-02", "--until", "2026-12-01")
    assert backwards.status == 2
    assert "--until (2026-12-01T00:00:00+00:00) is not after --since" in backwards.err
    both = run_cli("usage", "-c", config, "--json", "--csv")
    assert (both.status, both.err.strip()) == (2, "switchboard: --json and --csv: choose one")


def test_odd_characters_in_a_group_are_shown_escaped(config: Path) -> None:
    record(config, [usage(DAY, "evil\x1b[2J\nforged 1 2 3", 10)])
    shown = run_cli("usage", "-c", config, "--since", "2026-11-01")
    assert "\x1b" not in shown.out
    assert "telegram:evil\\x1b[2J\\nforged" in shown.out
    assert len(shown.out.splitlines()) == 4  # title, header, the row, the total: none forged
    rows = run_cli("usage", "-c", config, "--since", "2026-11-01", "--csv").out.splitlines()
    assert len(rows) == 2
    assert rows[1].startswith("telegram:evil\\x1b[2J\\nforged")
