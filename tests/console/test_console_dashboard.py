"""The overview as a dashboard and the pages read at a glance, over plain HTTP on a real
SQLite store: command replies count as answers; charts per channel, of the queue and of the
outbox's lag; the model tokens the usage store recorded, per clock hour; a conversation's
replies as Markdown (safely) and its files by name; a channel's state coloured, with a
sentence for its reason and the raw reason in a tooltip."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.console.activity import WINDOWS, series
from bot.console.channel_states import channel_view
from bot.console.markdown import to_html
from bot.hub import ChannelState
from bot.messages import OutboundFile, OutboundKind, OutboundText, utc_now
from bot.ports.activity import DeliveryPoint, JournalPoint, journal_window_of
from bot.records import InboundStatus, OutboxState
from tests.bot.harness import make_settings
from tests.console.support import Served, console_section, cookie_session, log_in, serve_console
from tests.console.usage_support import spend
from tests.fakes.channel import FakeChannel
from tests.postgres import fresh_schema, require_postgres
from tests.store.support import destination, inbound, item, record

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
HOUR = WINDOWS["hour"]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async with serve_console(make_settings(tmp_path, console=console_section())) as found:
        yield found


def _point(
    minutes_ago: float,
    status: InboundStatus,
    reason: str | None,
    *,
    channel: str = "telegram",
    took_s: float = 2.0,
) -> JournalPoint:
    recorded = NOW - timedelta(minutes=minutes_ago)
    return JournalPoint(
        channel=channel, status=status, reason=reason, recorded_at=recorded,
        updated_at=recorded + timedelta(seconds=took_s),
    )  # fmt: skip


def test_command_replies_count_as_answers() -> None:
    points = [
        _point(10, InboundStatus.HANDLED, "turn t1"),
        _point(9, InboundStatus.HANDLED, "command /help", took_s=0.1),
        _point(8, InboundStatus.HANDLED, "command /status", took_s=0.1),
        _point(7, InboundStatus.HANDLED, "answer recorded"),
        _point(6, InboundStatus.FAILED, "agent error"),
        _point(5, InboundStatus.DROPPED, "busy"),
    ]
    data = json.loads(json.dumps(series(points, [], HOUR, NOW)))
    assert (sum(data["inbound"]), sum(data["answers"]), sum(data["errors"])) == (6, 4, 1)


def test_the_charts_are_per_channel_with_queue_depth_and_outbox_lag() -> None:
    points = [
        _point(30, InboundStatus.HANDLED, "turn t1", took_s=4),
        _point(29, InboundStatus.FAILED, "agent error"),
        _point(20, InboundStatus.HANDLED, "turn t2", channel="slack", took_s=8),
        _point(2, InboundStatus.RUNNING, "turn t3", channel="slack"),
        _point(1, InboundStatus.ACCEPTED, None, channel="slack"),
    ]
    deliveries = [
        DeliveryPoint(channel="telegram", state=OutboxState.SENT,
                      created_at=NOW - timedelta(minutes=30),
                      updated_at=NOW - timedelta(minutes=30) + timedelta(seconds=3)),
        DeliveryPoint(channel="slack", state=OutboxState.PENDING,
                      created_at=NOW - timedelta(minutes=1), updated_at=NOW),
    ]  # fmt: skip
    data = json.loads(json.dumps(series(points, deliveries, HOUR, NOW)))
    channels = data["channels"]
    assert sorted(channels) == ["slack", "telegram"]
    telegram, slack = channels["telegram"], channels["slack"]
    assert (sum(telegram["inbound"]), sum(telegram["answers"]), sum(telegram["errors"])) == (
        2,
        1,
        1,
    )
    assert (sum(slack["inbound"]), sum(slack["answers"]), sum(slack["errors"])) == (3, 1, 0)
    assert [v for v in slack["p95"] if v is not None] == [8.0]
    assert data["waiting"][-1] == 2  # received and not finished at the window's end
    lag = [v for v in data["outbox_lag"] if v is not None]
    assert lag == [3.0, 60.0]  # a sent row's 3 s; the pending one waits since a minute
    assert data["outbox_oldest_pending_s"] == 60.0


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_the_store_gives_the_outbox_rows_of_a_window_and_every_pending_one(
    tmp_path: Path, backend: str
) -> None:
    if backend == "sqlite":
        async with serve_console(make_settings(tmp_path, console=console_section())) as served:
            await _deliveries_of_a_window(served)
        return
    async with fresh_schema(require_postgres()) as schema:
        store_section = {"url": require_postgres(), "schema": schema}
        settings = make_settings(tmp_path, console=console_section(), store=store_section)
        async with serve_console(settings) as served:
            await _deliveries_of_a_window(served)


async def _deliveries_of_a_window(served: Served) -> None:
    store = served.store
    window = journal_window_of(store)
    assert window is not None
    since = datetime.now(UTC) - timedelta(minutes=5)
    (sent, pending) = await store.outbox.enqueue_rows([item("k1"), item("k2")])
    await store.outbox.mark_sent(sent.id, ("m1",))
    points = await window.deliveries(since, limit=10)
    assert {(p.channel, p.state) for p in points} == {
        ("telegram", OutboxState.SENT),
        ("telegram", OutboxState.PENDING),
    }
    later = await window.deliveries(datetime.now(UTC) + timedelta(minutes=1), limit=10)
    assert [p.state for p in later] == [OutboxState.PENDING]  # pending rows, however old
    assert pending.id != sent.id


@pytest.mark.parametrize("window", ["hour", "day"])
async def test_the_activity_api_charts_the_model_tokens_recorded_per_hour(
    served: Served, window: str
) -> None:
    now = utc_now()
    turns = [
        (now, (500, 50, 20)),
        (now - timedelta(hours=3), (1000, 100, 0)),
        (now - timedelta(hours=3), (7, 3, 1)),  # the same hour: summed
    ]
    for at, tokens in turns:
        await spend(served.store, at, tokens=tokens)
    await spend(served.store, now - timedelta(hours=30), tokens=(90000, 9000, 0))  # a day before
    async with cookie_session() as client:
        await log_in(client, served.base)
        async with client.get(served.base + f"/console/api/activity?window={window}") as response:
            data = await response.json()
        async with client.get(served.base + "/console/") as page:
            overview = await page.text()
    tokens = data["tokens"]
    assert len(tokens["times"]) == 24
    assert (sum(tokens["input"]), sum(tokens["output"]), sum(tokens["cached"])) == (1507, 153, 21)
    per_hour: dict[int, int] = {}  # each turn's in the bucket of its clock hour
    for at, (tokens_in, _, _) in turns:
        hour = int(at.replace(minute=0, second=0, microsecond=0).timestamp())
        per_hour[hour] = per_hour.get(hour, 0) + tokens_in
    shown = dict(zip(tokens["times"], tokens["input"], strict=True))
    assert {hour: value for hour, value in shown.items() if value} == per_hour
    assert tokens["unreported_calls"] == [0] * 24
    assert "channels" in data
    assert 'id="chart-tokens"' in overview
    assert "not recorded" not in overview


def test_markdown_is_rendered_and_html_stays_text() -> None:
    html = str(
        to_html(
            "**bold** and _it_ and `code`\n\n- one\n- two\n\n"
            '<script>alert(1)</script> <img src=x onerror="alert(2)">\n\n'
            "[ok](https://example.com/a?b=1&c=2) [bad](javascript:alert(3)) "
            "![pic](https://example.com/p.png)"
        )
    )
    assert "<strong>bold</strong>" in html
    assert "<em>it</em>" in html
    assert "<code>code</code>" in html
    assert "<li>one</li>" in html
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "<img" not in html
    assert 'href="https://example.com/a?b=1&amp;c=2"' in html
    assert "javascript:" not in html.split("bad", maxsplit=1)[0][-80:]
    assert 'href="javascript' not in html
    assert "<a " in html


def test_long_markdown_is_cut() -> None:
    html = str(to_html("word " * 1000, limit=100))
    assert len(html) < 200
    assert html.rstrip("</p>").endswith("…")


async def test_a_conversation_shows_markdown_replies_and_file_names(served: Served) -> None:
    store = served.store
    entry_id = await record(store, inbound("m1", text="make me a **report**"), "corr-m1")
    assert entry_id is not None
    await store.inbound.update(entry_id, InboundStatus.HANDLED, reason="turn corr-t1")
    answer = OutboundText(
        destination=destination(), text="Here it is: **done**\n\n<b>not bold</b>",
        kind=OutboundKind.FINAL,
    )  # fmt: skip
    report = OutboundFile(
        destination=destination(), path="/srv/out/report.pdf", name="report.pdf",
        size=2048, is_image=False, caption="the _numbers_",
    )  # fmt: skip
    await store.outbox.enqueue_rows(
        [item("r1", answer, correlation_id="corr-t1"), item("r2", report, correlation_id="corr-t1")]
    )
    async with cookie_session() as client:
        await log_in(client, served.base)
        async with client.get(served.base + "/console/conversations/telegram/c1") as response:
            page = await response.text()
    assert "<strong>done</strong>" in page
    assert "&lt;b&gt;not bold&lt;/b&gt;" in page
    assert "make me a <strong>report</strong>" in page
    assert "report.pdf" in page
    assert "2.0 KB" in page
    assert "<em>numbers</em>" in page
    assert "(#" not in page


def test_a_reconnecting_channel_gets_a_sentence_and_its_raw_reason_as_a_tooltip() -> None:
    raw = "httpx.ConnectError: [Errno -2] Name or service not known"
    view = channel_view("telegram", ChannelState.RECONNECTING, raw, paused=False)
    assert view.tone == "warn"
    assert "reach" in view.sentence
    assert "httpx" not in view.sentence
    assert view.raw == raw
    parked = channel_view("slack", ChannelState.PARKED, "auth_failed: invalid_auth", paused=False)
    assert parked.tone == "bad"
    assert "token" in parked.sentence
    running = channel_view("feishu", ChannelState.RUNNING, "", paused=True)
    assert (running.tone, running.label) == ("warn", "running (paused)")


async def test_the_overview_colours_a_channel_and_escapes_its_reason(served: Served) -> None:
    channel = FakeChannel(fake_name="telegram")
    served.hub.add(channel)
    served.hub.set_state("telegram", ChannelState.RECONNECTING, 'httpx.ConnectError: <b>"down"</b>')
    async with cookie_session() as client:
        await log_in(client, served.base)
        async with client.get(served.base + "/console/partials/overview") as response:
            panel = await response.text()
    assert 'class="badge tone-warn state-reconnecting"' in panel
    assert 'title="httpx.ConnectError: &lt;b&gt;&#34;down&#34;&lt;/b&gt;"' in panel
    assert '<b>"down"</b>' not in panel
