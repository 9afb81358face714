"""The console's browser tests share one way to get a browser: a headless Chromium through
Playwright, one per test module, or a skip that says how to get one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, async_playwright
from playwright.async_api import Error as PlaywrightError

from tests.console.support import chromium_path


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        try:
            launched = await playwright.chromium.launch(executable_path=chromium_path())
        except PlaywrightError as exc:
            pytest.skip(
                "no Chromium to drive: install Debian's chromium (scripts/test does as root),"
                f" or set SWITCHBOARD_CHROMIUM ({str(exc).splitlines()[0]})"
            )
        yield launched
        await launched.close()
