"""What every channel's "bad credentials park it" test checks while the daemon keeps serving."""

from __future__ import annotations

from bot.hub import ChannelState
from bot.kernel import Kernel
from tests.fakes.channel import FakeChannel, dm
from tests.fakes.common.waiting import eventually


async def parks_while_another_serves(kernel: Kernel, name: str, other: FakeChannel) -> None:
    """Channel ``name`` parks for refused credentials while ``other`` still gets answers."""

    async def parked() -> bool:
        return kernel.hub.state(name) is ChannelState.PARKED

    await eventually(parked)
    await other.inject(dm("still here?", message_id="m1"))
    await other.wait_text("echo: still here?")
    assert kernel.hub.reason(name).startswith("auth_failed")
