"""The console in a real browser (headless Chromium through Playwright) against a real
daemon whose Telegram channel talks to the Telegram fake: log in, see a message on the
overview and in its trace, retry a dead letter, approve a pairing request, be refused
without a session or with a forged CSRF token; at 390 px reach every column of the outbox and
the trace with a navigation that stays one bar; follow the system's dark mode.

One daemon and one browser serve the whole module, and its tests run in order: the later ones
look at the conversations the earlier ones had. ``SWITCHBOARD_SCREENSHOTS=1`` writes the
screenshots of the README and docs/operations.md to ``docs/img``. Without a Chromium
(``SWITCHBOARD_CHROMIUM``, Debian's ``chromium`` on PATH, or Playwright's own download) the
module skips and says so; ``scripts/test`` installs Debian's.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Dialog, Page, expect

from bot.messages import ChatType, utc_now
from bot.ports.activity import journal_window_of
from bot.ports.schedules import ScheduleAction, ScheduleTarget
from bot.records import InboundStatus, OutboxState
from bot.schedules.book import ScheduleBook
from tests.channels.telegram_support import telegram_settings, wait_text
from tests.console.browser_support import (
    PHONE,
    UI_WAIT_MS,
    World,
    columns_reachable,
    logged_in,
    luminance,
    page_fits_the_phone,
    shoot,
)
from tests.console.support import console_daemon, console_section
from tests.fakes.agent import FakeAgent
from tests.fakes.common.waiting import eventually
from tests.fakes.telegram_api import FakeTelegram

pytestmark = pytest.mark.asyncio(loop_scope="module")
expect.set_options(timeout=10_000)  # a busy 2-core CI machine runs the whole suite

ADMIN = 1
STRANGER = 77
LONG_ERROR = (
    "Internal Server Error: " + "the platform explains at length why it refused this message " * 3
)

AT_LEAST_1 = re.compile(r"^[1-9][0-9]*$")
"""A count of at least one, as a ``data-`` attribute shows it."""
AT_LEAST_2 = re.compile(r"^([2-9]|[1-9][0-9]+)$")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    state = tmp_path_factory.mktemp("console")
    with FakeTelegram() as fake:
        settings = telegram_settings(
            state, fake, console=console_section(),
            access={"dm_policy": "pairing", "admins": [f"telegram:{ADMIN}"]},
            daemon={"outbox_max_attempts": 1},
        )  # fmt: skip
        async with console_daemon(settings, fake, FakeAgent()) as run:
            assert run.daemon.http is not None
            yield World(fake, run, f"http://127.0.0.1:{run.daemon.http.port}")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def console(browser: Browser, world: World) -> AsyncIterator[Page]:
    page = await logged_in(browser, world, "alice")
    page.on("dialog", _accept)
    yield page
    await page.context.close()


async def _accept(dialog: Dialog) -> None:
    await dialog.accept()


async def _journaled(world: World, status: InboundStatus) -> bool:
    window = journal_window_of(world.run.kernel.store)
    assert window is not None
    return any(entry.status is status for entry in await window.recent(limit=10))


async def test_no_page_without_a_session(browser: Browser, world: World) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    for path in (
        "/console/",
        "/console/outbox",
        "/console/trace?id=1",
        "/console/static/console.js",
    ):
        await page.goto(world.base + path)
        assert page.url.startswith(world.base + "/console/login?next=")
        await expect(page.get_by_label("Console token")).to_be_visible()
    for path in ("/console/api/activity", "/console/partials/overview"):
        response = await page.request.get(world.base + path)
        assert response.status == 401
    refused = await page.request.post(world.base + "/console/outbox/retry", form={"all": "yes"})
    assert refused.status == 401
    await page.get_by_label("Console token").fill("not the token")
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("alert")).to_contain_text("not the console token")
    assert not [c for c in await context.cookies() if c["name"] == "switchboard_console"]
    await context.close()


async def test_a_telegram_message_shows_on_the_overview_and_in_its_trace(
    browser: Browser, world: World
) -> None:
    page = await logged_in(browser, world, "bob")
    cookie = next(c for c in await page.context.cookies() if c["name"] == "switchboard_console")
    assert cookie["httpOnly"]
    assert cookie["sameSite"] == "Strict"
    world.fake.push_message("fail: the model is down", chat_id=ADMIN, user_id=ADMIN)
    await eventually(lambda: _journaled(world, InboundStatus.FAILED))  # its own turn, first
    world.fake.push_message("hello from the console test", chat_id=ADMIN, user_id=ADMIN,
                            first_name="Ada")  # fmt: skip
    await wait_text(world.fake, ADMIN, "echo: hello from the console test")
    row = page.locator("#recent tr", has_text="hello from the console test")
    await expect(row).to_be_visible(timeout=UI_WAIT_MS)  # the live panel's refresh brings it
    await expect(page.locator("#channels")).to_contain_text("running")
    await expect(page.locator("#replicas tr.self")).to_have_count(1)
    await expect(page.locator("#recent tr", has_text="the model is down")).to_contain_text(
        "failed", timeout=UI_WAIT_MS
    )
    await page.get_by_role("button", name="last hour").click()  # the charts load again
    # Polled from here, not in the page: the console's CSP forbids the eval an in-page poll uses.
    body = page.locator("body")
    await expect(body).to_have_attribute("data-charts-inbound", AT_LEAST_2, timeout=UI_WAIT_MS)
    activity = await (await page.request.get(world.base + "/console/api/activity")).json()
    assert (sum(activity["inbound"]), sum(activity["answers"]), sum(activity["errors"])) == (
        2,
        1,
        1,
    )
    assert any(value is not None for value in activity["p95"])
    await shoot(page, "console-overview.png")
    await row.get_by_role("link", name="trace").click()
    await expect(page.get_by_role("heading", name="Message trace")).to_be_visible()
    trace = page.locator("article.trace")
    await expect(trace).to_have_count(1)
    await expect(trace.locator("dd.run")).to_contain_text("answered by turn")
    await expect(trace).to_contain_text("accepted (no redeliveries)")
    await expect(trace.locator("h3")).to_contain_text("text final")
    await expect(trace.locator("td.call-sent")).to_have_count(1)
    await shoot(page, "console-trace.png")
    await page.context.close()


async def test_a_dead_letter_retried_from_the_console_is_sent(console: Page, world: World) -> None:
    store = world.run.kernel.store
    world.fake.fail_next("sendMessage", status=500, description="Internal Server Error")
    world.fake.push_message("a reply that dies once", chat_id=ADMIN, user_id=ADMIN)

    async def dead() -> bool:
        return bool(await store.outbox.listing(OutboxState.DEAD))

    await eventually(dead)
    await console.goto(world.base + "/console/outbox")
    row = console.locator("#dead tr", has_text="Internal Server Error")
    await expect(row).to_have_count(1)
    await row.get_by_role("button", name="Retry").click()
    await expect(console.get_by_role("status")).to_contain_text("revived 1 dead row(s)")
    await wait_text(world.fake, ADMIN, "echo: a reply that dies once")
    await console.reload()
    await expect(console.locator("#dead")).to_contain_text("no dead letters")
    audit = await store.audit.recent(5)
    assert ("console:alice", "outbox retry") in [(a.actor, a.action) for a in audit]


async def test_a_pairing_request_approved_in_the_console_lets_the_user_in(
    console: Page, world: World
) -> None:
    store = world.run.kernel.store
    world.fake.push_message("may I?", chat_id=STRANGER, user_id=STRANGER, first_name="Sam")

    async def requested() -> bool:
        return bool(await store.access.pending_pairings(utc_now()))

    await eventually(requested)
    (request,) = await store.access.pending_pairings(utc_now())
    await console.goto(world.base + "/console/access")
    row = console.locator(f'#pairings tr[data-code="{request.code}"]')
    await expect(row).to_contain_text("Sam")
    await row.get_by_role("button", name="Approve").click()
    await expect(console.get_by_role("status")).to_contain_text(
        f"approved Sam (telegram:{STRANGER})"
    )
    await expect(console.locator("#users")).to_contain_text("console:alice")
    world.fake.push_message("now?", chat_id=STRANGER, user_id=STRANGER, first_name="Sam")
    await wait_text(world.fake, STRANGER, "echo: now?")
    await console.goto(world.base + "/console/audit")
    await expect(console.locator("#audit")).to_contain_text("pairing approve")


async def test_a_forged_or_missing_csrf_token_is_refused(console: Page, world: World) -> None:
    store = world.run.kernel.store
    before = len(await store.audit.recent(100))
    missing = await console.request.post(world.base + "/console/outbox/retry", form={"all": "yes"})
    assert missing.status == 403
    forged = await console.request.post(
        world.base + "/console/outbox/retry", form={"all": "yes", "csrf": "0" * 43}
    )
    assert forged.status == 403
    await console.goto(world.base + "/console/")
    await console.locator("form.logout input[name=csrf]").evaluate("input => input.value = 'x'")
    await console.get_by_role("button", name="Log out").click()
    await expect(console.locator("body")).to_contain_text("needs the page's CSRF token")
    await console.goto(world.base + "/console/audit")  # still logged in: nothing was done
    await expect(console.get_by_role("heading", name="Audit")).to_be_visible()
    assert len(await store.audit.recent(100)) == before


async def test_a_conversation_is_found_by_its_text_and_shows_its_thread(
    console: Page, world: World
) -> None:
    await console.goto(world.base + "/console/conversations")
    await console.get_by_label("Search chat, user or text").fill("dies once")
    await console.get_by_role("button", name="Search").click()
    chats = console.locator("#chats tbody tr")
    await expect(chats).to_have_count(1)
    await chats.get_by_role("link", name=str(ADMIN)).click()
    await expect(console.get_by_role("heading", name=f"telegram chat {ADMIN}")).to_be_visible()
    thread = console.locator("ol.thread")
    await expect(thread).to_contain_text("hello from the console test")
    await expect(thread).to_contain_text("echo: hello from the console test")
    await expect(thread).to_contain_text("failed: the model is down")
    await expect(thread.locator(".turn").first).to_contain_text(" s")
    await expect(console.locator("#mutes")).to_contain_text("Not muted")


async def test_a_schedule_is_listed_and_cancelled_from_the_console(
    console: Page, world: World
) -> None:
    store = world.run.kernel.store
    book = ScheduleBook(world.run.kernel.settings, store)
    target = ScheduleTarget(channel="telegram", account_id="", chat_id=str(ADMIN),
                            chat_type=ChatType.DM)  # fmt: skip
    made = await book.create(
        target, at=None, cron="0 9 * * *", timezone="UTC", action=ScheduleAction.MESSAGE,
        text="stand-up", actor="cli:test",
    )  # fmt: skip
    await console.goto(world.base + "/console/schedules")
    row = console.locator("#schedules tbody tr", has_text="0 9 * * *")
    await expect(row).to_have_count(1)
    await row.get_by_role("button", name="Cancel").click()
    await expect(console.get_by_role("status")).to_contain_text(f"schedule {made.id} cancelled")
    await expect(console.locator("#schedules")).to_contain_text("no active schedules")
    await console.goto(world.base + "/console/audit")
    await expect(console.locator("#audit")).to_contain_text("schedule cancel")


async def test_a_live_panel_whose_session_ended_goes_back_to_the_login(
    browser: Browser, world: World
) -> None:
    page = await logged_in(browser, world, "carol")
    await page.context.clear_cookies()  # the session ended (expired, or the token changed)
    await expect(page).to_have_url(re.compile(r"/console/login\?next="), timeout=UI_WAIT_MS)
    await expect(page.get_by_label("Console token")).to_be_visible()
    await page.context.close()


async def test_on_a_phone_the_navigation_is_one_bar_and_every_column_can_be_reached(
    browser: Browser, world: World
) -> None:
    store = world.run.kernel.store
    world.fake.fail_next("sendMessage", status=500, description=LONG_ERROR)
    world.fake.push_message("a reply that dies at length", chat_id=ADMIN, user_id=ADMIN)

    async def dead() -> bool:
        return bool(await store.outbox.listing(OutboxState.DEAD))

    await eventually(dead)
    page = await logged_in(browser, world, "dora", viewport=PHONE)
    header = await page.locator("body > header").bounding_box()
    assert header is not None
    assert header["height"] <= 110, f"the navigation takes {header['height']:.0f} px"
    await page.goto(world.base + "/console/outbox")
    await page_fits_the_phone(page)
    dead_columns = await columns_reachable(page, "#dead")
    assert "LAST ERROR" in dead_columns
    assert not [c for c in dead_columns if "outside" in c], dead_columns
    pending_columns = await columns_reachable(page, "#pending")
    assert not [c for c in pending_columns if "outside" in c], pending_columns
    await page.evaluate(
        "window.scrollTo(0, 0); for (const box of document.querySelectorAll('.scroll'))"
        " box.scrollLeft = 0"
    )
    await shoot(page, "console-phone.png")
    window = journal_window_of(store)
    assert window is not None
    (entry,) = [e for e in await window.recent(limit=20) if "dies at length" in e.message.text]
    await page.goto(world.base + f"/console/trace?id={entry.message.message_id}&channel=telegram")
    await expect(page.locator("article.trace")).to_have_count(1)
    await page_fits_the_phone(page)
    calls = await columns_reachable(page, "section.outbox-row:first-of-type table.calls")
    assert calls == ["CALLED", "RESULT", "DETAIL"]
    await page.context.close()


async def _styled(page: Page) -> None:
    """Wait for the stylesheet to paint the page (its background is unset until then)."""
    await expect(page.locator("body")).not_to_have_css("background-color", "rgba(0, 0, 0, 0)")


async def test_the_console_follows_the_systems_dark_mode(browser: Browser, world: World) -> None:
    page = await logged_in(browser, world, "erin", dark=True)
    await _styled(page)
    background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    text = await page.evaluate("getComputedStyle(document.body).color")
    assert luminance(background) < 0.2, background
    assert luminance(text) > 0.7, text
    cell = page.locator("#channels td").first
    card = await cell.evaluate("td => getComputedStyle(td.closest('table')).backgroundColor")
    assert luminance(card) < 0.25, card
    await expect(page.locator("body")).to_have_attribute(
        "data-charts-drawn", AT_LEAST_1, timeout=UI_WAIT_MS
    )
    await shoot(page, "console-dark.png")
    await page.context.close()
    light = await logged_in(browser, world, "erin")
    await _styled(light)
    background = await light.evaluate("getComputedStyle(document.body).backgroundColor")
    assert luminance(background) > 0.8, background
    await light.context.close()
