"""A dead letter revived (``outbox retry``, the console's Retry) is sent again, also by the
very process that gave up on it: its memory of finished rows must not hold the row back."""

from __future__ import annotations

from pathlib import Path

from bot.errors import TransientSendError
from bot.records import OutboxState
from tests.bot.harness import make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, dm
from tests.fakes.common.waiting import eventually


async def test_a_revived_dead_row_is_sent_by_the_process_that_gave_up_on_it(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, daemon={"outbox_max_attempts": 1})
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    channel.fail_next.append(TransientSendError("502 from platform"))
    async with running(settings, [channel], agent) as daemon:
        store = daemon.kernel.store
        await channel.inject(dm("hi", message_id="1"))

        async def dead() -> bool:
            return bool(await store.outbox.listing(OutboxState.DEAD))

        await eventually(dead)
        assert await store.outbox.revive() == 1
        daemon.kernel.delivery.outbox.repoll()
        await channel.wait_text("echo: hi", within=10)
        await daemon.kernel.delivery.outbox.wait_idle()
        (row,) = await store.outbox.listing()
    assert row.state is OutboxState.SENT
