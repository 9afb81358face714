"""``/console/approvals`` in headless Chromium: on a 390 px phone the page does not scroll
sideways, every column of the decided requests can be reached and the decision forms fit;
the edit box follows the system's dark mode; a press on Approve (confirmed) decides and says
so. Skips, saying why, without a Chromium (as ``test_console_browser`` does)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Dialog, Page, ViewportSize, expect

from bot.messages import utc_now
from bot.ports.approvals import ApprovalState, Decided
from tests.bot.approvals.requests import approvals_in, paused_run, record, waiting
from tests.bot.harness import make_settings
from tests.console.browser_support import (
    DESKTOP,
    PHONE,
    columns_reachable,
    luminance,
    page_fits_the_phone,
)
from tests.console.support import Served, console_section, serve_console

pytestmark = pytest.mark.asyncio(loop_scope="module")
expect.set_options(timeout=10_000)

LONG_ARGS = '{"path": "' + "reports/2025/" * 30 + 'q1.md", "token": "t-secret"}'


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """Two requests waiting (one with a long path) and one decided with a long reason."""
    settings = make_settings(tmp_path_factory.mktemp("approvals"), console=console_section())
    async with serve_console(settings) as found:
        done = paused_run("r0", "corr-0")
        await record(found.store, done, waiting(done))
        decided = Decided(
            state=ApprovalState.REJECTED, by="telegram:42", by_name="Ben", at=utc_now(),
            reason="not before the audit; " * 8,
        )  # fmt: skip
        assert await approvals_in(found.store).decide("r0a0", decided)
        run = paused_run("r1", "corr-1")
        await record(found.store, run, waiting(run, 0, tool="write_file", args=LONG_ARGS),
                     waiting(run, 1))  # fmt: skip
        yield found


async def _logged_in(
    browser: Browser, served: Served, viewport: ViewportSize, *, dark: bool = False
) -> Page:
    context = await browser.new_context(viewport=viewport, color_scheme="dark" if dark else "light")
    page = await context.new_page()
    await page.goto(served.base + "/console/approvals")
    await page.get_by_label("Console token").fill("console-test-token")
    await page.get_by_label("Your name").fill("pat")
    await page.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("heading", name="Approvals", exact=True)).to_be_visible()
    return page


async def test_on_a_phone_the_requests_and_their_forms_fit(
    browser: Browser, served: Served
) -> None:
    page = await _logged_in(browser, served, PHONE)
    await page_fits_the_phone(page)
    columns = await columns_reachable(page, "#decided-approvals")
    assert "REASON" in columns
    assert not [c for c in columns if "outside" in c], columns
    card = page.locator("#approval-r1a0")
    await card.locator("summary").click()
    for part in (
        card.get_by_role("button", name="Approve"),
        card.get_by_role("button", name="Reject"),
        card.locator("input[name=reason]"),
        card.locator("textarea[name=args]"),
    ):
        await expect(part).to_be_visible()
        box = await part.bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= PHONE["width"], await part.evaluate("e => e.outerHTML")
    await page_fits_the_phone(page)
    await page.context.close()


async def test_the_edit_box_follows_the_dark_mode(browser: Browser, served: Served) -> None:
    page = await _logged_in(browser, served, DESKTOP, dark=True)
    box = page.locator("#approval-r1a1 textarea")
    await page.locator("#approval-r1a1 summary").click()
    await expect(box).to_be_visible()
    assert luminance(await box.evaluate("e => getComputedStyle(e).backgroundColor")) < 0.25
    assert luminance(await box.evaluate("e => getComputedStyle(e).color")) > 0.7
    await page.context.close()


async def _accept(dialog: Dialog) -> None:
    await dialog.accept()


async def test_approve_asks_then_decides_and_says_so(browser: Browser, served: Served) -> None:
    page = await _logged_in(browser, served, DESKTOP)
    page.on("dialog", _accept)
    await page.locator("#approval-r1a1").get_by_role("button", name="Approve").click()
    await expect(page.locator("p.note")).to_contain_text("approved send_email (ID r1a1)")
    await expect(page.locator("#approval-r1a1")).to_have_count(0)
    stored = await approvals_in(served.store).get("r1a1")
    assert stored is not None
    assert (stored.state, stored.decided_by) == (ApprovalState.APPROVED, "console:pat")
    await page.context.close()
