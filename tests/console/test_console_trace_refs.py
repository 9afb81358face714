"""The console's trace search finds a message from the ``ref`` of an error reply (its turn's
correlation id) as ``switchboard trace`` does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.bot.harness import make_settings
from tests.console.support import Served, console_section, cookie_session, log_in, serve_console
from tests.store.support import inbound

REF = "0a3fafffb832"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async with serve_console(make_settings(tmp_path, console=console_section())) as found:
        await found.store.inbound.record_many([(inbound("m-77", chat_id="c9"), REF)])
        yield found


async def _trace(served: Served, query: str) -> str:
    async with cookie_session() as client:
        await log_in(client, served.base)
        async with client.get(f"{served.base}/console/trace?{query}") as response:
            assert response.status == 200
            return await response.text()


async def test_the_ref_of_an_error_reply_finds_its_message(served: Served) -> None:
    page = await _trace(served, f"id={REF}")
    assert "No journal entry" not in page
    assert "Message m-77 on telegram, chat c9" in page


async def test_a_ref_on_another_channel_is_missing(served: Served) -> None:
    page = await _trace(served, f"id={REF}&channel=slack")
    assert "No journal entry" in page


async def test_a_message_id_is_found_as_before(served: Served) -> None:
    page = await _trace(served, "id=m-77")
    assert "Message m-77 on telegram, chat c9" in page
