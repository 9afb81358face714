"""A presented file swapped for a link between send attempts is never uploaded (design §6):
each attempt opens the recorded path without following links
(``bot.delivery.files.read_outbound``)."""

from __future__ import annotations

from pathlib import Path

from bot.messages import OutboundFile
from bot.ports import PresentedFile
from bot.records import OutboxState
from bot.workspace import ThreadWorkspace
from tests.channels.telegram_support import telegram_daemon, telegram_settings
from tests.fakes.agent import FakeAgent
from tests.fakes.common.waiting import eventually
from tests.fakes.telegram_api import FakeTelegram


async def test_a_file_swapped_for_a_link_after_a_429_is_not_uploaded(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    outputs = ThreadWorkspace.for_thread(tmp_path / "state", "t1").outputs
    outputs.mkdir(parents=True)
    report = outputs / "report.txt"
    report.write_text("the report")
    agent = FakeAgent(files_to_present=[PresentedFile(path=report, name="report.txt")])
    with FakeTelegram() as fake:
        settings = telegram_settings(tmp_path / "state", fake)
        async with telegram_daemon(settings, agent) as run:
            flood = "Too Many Requests: retry after 1"
            fake.fail_next("sendDocument", status=429, description=flood, retry_after=1)
            fake.push_message("make a report")
            await fake.await_call("sendDocument")
            report.unlink()
            report.symlink_to(secret)  # swapped in while the row waits for its retry
            store = run.kernel.store

            async def no_file_pending() -> bool:
                pending = await store.outbox.listing(OutboxState.PENDING)
                return not any(isinstance(row.item.delivery, OutboundFile) for row in pending)

            await eventually(no_file_pending, within=30)
            await run.settle()
            dead = await store.outbox.listing(OutboxState.DEAD)
        uploads = fake.calls("sendDocument")
    assert all(b"TOP SECRET" not in call.files.get("document", b"") for call in uploads)
    assert len(uploads) == 1
    assert [row.item.delivery.name for row in dead] == ["report.txt"]  # type: ignore[union-attr]
    assert "symbolic link" in (dead[0].last_error or "")
