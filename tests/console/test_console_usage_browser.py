"""The usage page in a real browser (headless Chromium through Playwright) against a real
daemon with usage recorded in its store: the overview's chart of model tokens per hour; at
390 px and in dark mode the usage page charts each channel, every column of its tables can be
reached and the page itself does not scroll sideways; its range switch charts 30 days.

``SWITCHBOARD_SCREENSHOTS=1`` writes docs/img/console-usage.png. Without a Chromium the
module skips and says so (see ``conftest.py``)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import pytest_asyncio
from playwright.async_api import Browser, expect

from bot.messages import utc_now
from tests.channels.telegram_support import telegram_settings
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
from tests.console.usage_support import spend
from tests.fakes.agent import FakeAgent
from tests.fakes.telegram_api import FakeTelegram

pytestmark = pytest.mark.asyncio(loop_scope="module")
expect.set_options(timeout=10_000)  # a busy 2-core CI machine runs the whole suite

USAGE = {"prices": {"gpt-test": {"input": 2.5, "output": 10.0}}}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    state = tmp_path_factory.mktemp("console-usage")
    with FakeTelegram() as fake:
        settings = telegram_settings(state, fake, console=console_section(), usage=USAGE)
        async with console_daemon(settings, fake, FakeAgent()) as run:
            assert run.daemon.http is not None
            yield World(fake, run, f"http://127.0.0.1:{run.daemon.http.port}")


async def test_the_usage_page_charts_each_channel_on_a_phone_at_night(
    browser: Browser, world: World
) -> None:
    store, now = world.run.kernel.store, utc_now()
    await spend(store, now, user="1", chat="1", tokens=(1200, 300, 200), cost=0.006)
    await spend(store, now, user="2", chat="-100200", tokens=(400, 80, 0), cost=0.0018)
    await spend(store, now - timedelta(days=3), user="U7", chat="C7", channel="slack",
                model="gpt-other", tokens=(800, 100, 0), unreported=1)  # fmt: skip
    page = await logged_in(browser, world, "fay", viewport=PHONE, dark=True)
    # Polled from here, not in the page: the console's CSP forbids the eval an in-page poll uses.
    body = page.locator("body")
    await expect(body).to_have_attribute("data-charts-tokens", "1980", timeout=UI_WAIT_MS)
    await page.locator("header nav").get_by_role("link", name="Usage").click()
    await expect(page.get_by_role("heading", name="Model usage")).to_be_visible()
    await expect(body).to_have_attribute("data-usage-drawn", "48", timeout=UI_WAIT_MS)
    assert await page.evaluate("document.body.dataset.usageChannels") == "1"
    await expect(page.locator("#chart-usage-tokens canvas")).to_have_count(1)
    await expect(page.locator("#chart-usage-cost canvas")).to_have_count(1)
    await page_fits_the_phone(page)
    for table in ("#top-users", "#top-chats", "#models"):
        columns = await columns_reachable(page, table)
        assert "UNREPORTED CALLS" in columns
        assert not [c for c in columns if "outside" in c], (table, columns)
    background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert luminance(background) < 0.2, background
    await page.evaluate(
        "window.scrollTo(0, 0); for (const box of document.querySelectorAll('.scroll'))"
        " box.scrollLeft = 0"
    )
    await shoot(page, "console-usage.png")
    await page.get_by_role("link", name="last 30 days").click()
    await expect(page).to_have_url(re.compile(r"/console/usage\?range=30d$"))
    await expect(body).to_have_attribute("data-usage-drawn", "30", timeout=UI_WAIT_MS)
    assert await page.evaluate("document.body.dataset.usageChannels") == "2"
    await expect(page.locator("#range-channels")).to_contain_text("slack")
    await page.context.close()
