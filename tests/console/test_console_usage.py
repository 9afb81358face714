"""The console's usage page over plain HTTP on a real SQLite store: this month's totals, top
users and chats and models as the usage store recorded them, the heaviest first; the chart's
range switch between hours of the last 48 and days of the last 30, days counted in
``usage.timezone``; a session needed; names escaped; a store without usage saying so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import aiohttp
import pytest

from bot.console.usage_series import RANGES, bucketed, edges_of
from bot.messages import utc_now
from bot.ports.usage import UsageTotal
from tests.bot.harness import make_settings
from tests.console.support import Served, console_section, cookie_session, log_in, serve_console
from tests.console.usage_support import spend, table_rows, without_usage
from tests.postgres import fresh_schema, require_postgres

PRICED = {"prices": {"gpt-test": {"input": 1.0, "output": 2.0}}}
FIGURES = ["TURNS", "INPUT", "OUTPUT", "CACHED", "COST", "UNREPORTED CALLS"]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    settings = make_settings(tmp_path, console=console_section(), usage=PRICED)
    async with serve_console(settings) as found:
        yield found


@pytest.fixture(params=["sqlite", "postgres"])
async def on_each_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Served]:
    """The console over SQLite, then over PostgreSQL: the sums are the store's SQL."""
    if request.param == "sqlite":
        async with serve_console(
            make_settings(tmp_path, console=console_section(), usage=PRICED)
        ) as found:
            yield found
        return
    url = require_postgres()
    async with fresh_schema(url) as schema:
        settings = make_settings(
            tmp_path, console=console_section(), usage=PRICED, store={"url": url, "schema": schema}
        )
        async with serve_console(settings) as found:
            yield found


async def _get(served: Served, path: str) -> tuple[int, str]:
    async with cookie_session() as client:
        await log_in(client, served.base)
        async with client.get(served.base + path) as response:
            return response.status, await response.text()


async def _api(served: Served, path: str) -> tuple[int, Any]:
    async with cookie_session() as client:
        await log_in(client, served.base)
        async with client.get(served.base + path) as response:
            return response.status, await response.json()


async def test_this_months_tables_show_the_recorded_usage_heaviest_first(
    on_each_store: Served,
) -> None:
    served = on_each_store
    store, now = served.store, utc_now()
    await spend(store, now, user="alice", chat="c1", model="gpt-a", tokens=(1000, 200, 100),
                cost=0.5)  # fmt: skip
    await spend(store, now, user="bob", chat="c2", model="gpt-b", tokens=(5000, 1000, 0),
                cost=2.0, unreported=2)  # fmt: skip
    await spend(store, now, user="carol", chat="c1", channel="slack", model="gpt-a",
                tokens=(300, 100, 0), cost=0.25)  # fmt: skip
    await spend(store, now, user="alice", chat="c1", model="gpt-a", tokens=(10, 5, 0))
    status, page = await _get(served, "/console/usage")
    assert status == 200
    assert table_rows(page, "month-total") == [
        ["", *FIGURES],
        ["all channels", "4", "6,310", "1,305", "100", "2.75", "2"],
    ]
    users = table_rows(page, "top-users")
    assert users[0] == ["CHANNEL", "USER", *FIGURES]
    assert users[1:] == [
        ["telegram", "bob", "1", "5,000", "1,000", "0", "2.00", "2"],
        ["telegram", "alice", "2", "1,010", "205", "100", "0.5000", "0"],
        ["slack", "carol", "1", "300", "100", "0", "0.2500", "0"],
    ]
    chats = [row[:3] for row in table_rows(page, "top-chats")[1:]]
    assert chats == [["telegram", "c2", "1"], ["telegram", "c1", "2"], ["slack", "c1", "1"]]
    models = [row[:3] for row in table_rows(page, "models")[1:]]
    assert models == [["gpt-b", "1", "5,000"], ["gpt-a", "3", "1,310"]]
    assert 'href="/console/conversations/telegram/c2"' in page
    assert f"since 1 {now:%B}, UTC" in page


async def test_the_range_switch_charts_hours_of_two_days_or_days_of_a_month(
    on_each_store: Served,
) -> None:
    served = on_each_store
    store, now = served.store, utc_now()
    await spend(store, now, tokens=(100, 10, 0))
    await spend(store, now - timedelta(days=10), tokens=(7000, 0, 0))
    await spend(store, now - timedelta(days=40), tokens=(90000, 0, 0))  # before either range
    status, hours = await _api(served, "/console/api/usage?range=48h")
    assert status == 200
    assert (hours["range"], hours["bucket"], len(hours["times"])) == ("48h", "hour", 48)
    this_hour = now.replace(minute=0, second=0, microsecond=0)
    assert hours["times"][-1] == int(this_hour.timestamp())
    assert sum(hours["channels"]["telegram"]["input"]) == 100
    status, days = await _api(served, "/console/api/usage?range=30d")
    assert (days["range"], days["bucket"], len(days["times"])) == ("30d", "day", 30)
    telegram = days["channels"]["telegram"]
    assert (sum(telegram["input"]), sum(telegram["output"]), sum(telegram["turns"])) == (
        7100,
        10,
        2,
    )
    assert telegram["input"][-11] == 7000
    assert days["times"][-1] == int(datetime.combine(now.date(), time(), UTC).timestamp())
    _, page = await _get(served, "/console/usage?range=30d")
    assert table_rows(page, "range-channels")[1][:3] == ["telegram", "2", "7,100"]
    assert 'href="/console/usage?range=30d" class="active"' in page
    assert 'data-range="30d"' in page
    _, page = await _get(served, "/console/usage")  # 48 hours unless asked
    assert table_rows(page, "range-channels")[1][:3] == ["telegram", "1", "100"]
    assert 'href="/console/usage?range=48h" class="active"' in page


async def test_an_unknown_range_is_refused_naming_the_choices(served: Served) -> None:
    status, page = await _get(served, "/console/usage?range=7d")
    assert status == 400
    assert "range must be 48h or 30d, not &#39;7d&#39;" in page
    status, data = await _api(served, "/console/api/usage?range=<b>")
    assert (status, data) == (400, {"error": "range must be 48h or 30d"})


async def test_days_begin_at_midnight_in_the_usage_time_zone(tmp_path: Path) -> None:
    zone = ZoneInfo("Asia/Tokyo")
    settings = make_settings(tmp_path, console=console_section(), usage={"timezone": zone.key})
    async with serve_console(settings) as served:
        today = utc_now().astimezone(zone).date()
        midnight = datetime.combine(today, time(), zone).astimezone(UTC)  # 15:00 UTC the day before
        await spend(served.store, midnight + timedelta(minutes=30), tokens=(1, 0, 0))
        await spend(served.store, midnight - timedelta(minutes=30), tokens=(20, 0, 0))
        _, days = await _api(served, "/console/api/usage?range=30d")
        _, page = await _get(served, "/console/usage")
    assert days["timezone"] == "Asia/Tokyo"
    assert days["times"][-1] == int(midnight.timestamp())
    assert days["channels"]["telegram"]["input"][-2:] == [20, 1]
    assert "Days and months in Asia/Tokyo" in page
    assert "No <code>usage.prices</code> are set" in page


async def test_the_usage_page_and_its_api_need_a_session(served: Served) -> None:
    async with aiohttp.ClientSession() as client:
        async with client.get(
            served.base + "/console/usage?range=30d", allow_redirects=False
        ) as response:
            assert response.status == 302
            login = urlsplit(response.headers["Location"])
            assert login.path == "/console/login"
            assert parse_qs(login.query) == {"next": ["/console/usage?range=30d"]}
        async with client.get(served.base + "/console/api/usage") as response:
            assert response.status == 401
            assert await response.json() == {"error": "log in first"}


async def test_names_from_chats_and_providers_are_escaped(served: Served) -> None:
    await spend(served.store, utc_now(), user="<img src=x onerror=alert(1)>",
                chat='"><script>alert(2)</script>', model="<b>model</b>",
                tokens=(1, 1, 0))  # fmt: skip
    _, page = await _get(served, "/console/usage")
    assert "<img src=x" not in page
    assert "<script>alert(2)" not in page
    assert "<b>model</b>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;b&gt;model&lt;/b&gt;" in page


async def test_a_store_without_usage_says_usage_is_not_recorded(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, console=console_section())
    async with serve_console(settings, shown=without_usage) as served:
        status, page = await _get(served, "/console/usage")
        api_status, api = await _api(served, "/console/api/usage")
        _, overview = await _get(served, "/console/")
        _, activity = await _api(served, "/console/api/activity")
    assert status == 200
    assert "Usage is not recorded by this store." in page
    assert 'id="top-users"' not in page
    assert (api_status, api) == (404, {"error": "this store records no usage"})
    assert "Usage is not recorded by this store" in overview
    assert 'id="chart-tokens"' not in overview
    assert activity["tokens"] is None


def _hour(at: datetime, input_tokens: int) -> tuple[datetime, UsageTotal]:
    return at, UsageTotal(
        group="telegram", turns=1, calls=1, unreported_calls=0, input_tokens=input_tokens,
        output_tokens=0, cached_tokens=0, cost=0.0,
    )  # fmt: skip


def test_a_local_day_is_as_long_as_the_clocks_of_its_zone_say() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    now = datetime(2026, 3, 30, 12, tzinfo=UTC)  # the day after the clocks went forward
    edges = edges_of(RANGES["30d"], now, berlin)
    assert len(edges) == 31
    assert edges[-3:] == [
        datetime(2026, 3, 28, 23, tzinfo=UTC),  # 29 March began at midnight CET
        datetime(2026, 3, 29, 22, tzinfo=UTC),  # 30 March at midnight CEST: 23 hours later
        datetime(2026, 3, 30, 22, tzinfo=UTC),
    ]
    rows = [
        _hour(datetime(2026, 3, 29, 21, tzinfo=UTC), 1),  # 23:00 on 29 March in Berlin
        _hour(datetime(2026, 3, 29, 22, tzinfo=UTC), 10),  # midnight, 30 March
        _hour(datetime(2026, 2, 1, tzinfo=UTC), 100),  # before the range
        _hour(datetime(2026, 3, 31, tzinfo=UTC), 1000),  # after it
    ]
    series = bucketed(rows, edges)
    assert series.channels["telegram"].input[-2:] == [1, 10]
    assert series.channels["telegram"].total("telegram").input_tokens == 11
    assert series.times[0] == int(datetime(2026, 2, 28, 23, tzinfo=UTC).timestamp())
