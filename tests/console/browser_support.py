"""Shared by the console's browser tests (the ``browser`` fixture is in ``conftest.py``):
logging in, screenshots for the docs, and what a 390 px phone and the dark mode are checked
by."""

from __future__ import annotations

import re
from dataclasses import dataclass

from playwright.async_api import Browser, Page, ViewportSize, expect

from tests.channels.telegram_support import TelegramRun
from tests.console.support import IMAGES, SCREENSHOTS, TOKEN
from tests.fakes.telegram_api import FakeTelegram

UI_WAIT_MS = 10_000
DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}


@dataclass
class World:
    """A daemon with the console, its Telegram channel talking to ``fake``, served at ``base``."""

    fake: FakeTelegram
    run: TelegramRun
    base: str


async def logged_in(
    browser: Browser,
    world: World,
    name: str,
    *,
    viewport: ViewportSize = DESKTOP,
    dark: bool = False,
) -> Page:
    context = await browser.new_context(viewport=viewport, color_scheme="dark" if dark else "light")
    page = await context.new_page()
    await page.goto(world.base + "/console/")
    await expect(page).to_have_url(re.compile(r"/console/login\?next="))
    await page.get_by_label("Console token").fill(TOKEN)
    await page.get_by_label("Your name").fill(name)
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    return page


async def shoot(page: Page, name: str) -> None:
    if SCREENSHOTS:
        IMAGES.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(IMAGES / name), full_page=True)


async def columns_reachable(page: Page, table: str) -> list[str]:
    """Every header of ``table`` scrolled into view (its table's box scrolls sideways) with its
    label inside the 390 px viewport: the headers, or what failed."""
    found: list[str] = []
    headers = page.locator(f"{table} thead th")
    assert await headers.count() > 2
    for index in range(await headers.count()):
        header = headers.nth(index)
        assert await header.evaluate("th => getComputedStyle(th).display") != "none"
        await header.evaluate("th => th.scrollIntoView({block: 'nearest', inline: 'start'})")
        box = await header.bounding_box()
        assert box is not None
        text = (await header.inner_text()).strip() or f"#{index}"
        shown = min(box["width"], 80)  # its label, at the start of a wide column
        inside = box["x"] >= -1 and box["x"] + shown <= PHONE["width"] + 1
        found.append(text if inside else f"{text} outside at x={box['x']:.0f}")
    return found


async def page_fits_the_phone(page: Page) -> None:
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page itself scrolls sideways: {width} px"


def luminance(css_colour: str) -> float:
    red, green, blue = (int(part) for part in re.findall(r"\d+", css_colour)[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255
