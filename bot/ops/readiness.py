"""Whether the daemon serves its chats: what ``/readyz`` answers (design §13)."""

from __future__ import annotations

from bot.hub import ChannelHub, ChannelState
from bot.ops.kernel_tasks import KernelTasks
from bot.ports import Store


class Readiness:
    """Ready means: the store takes writes, every channel is connected, and no loop of the
    kernel has died."""

    def __init__(self, store: Store, hub: ChannelHub, tasks: KernelTasks) -> None:
        self.store = store
        self.hub = hub
        self._tasks = tasks

    async def reasons(self) -> list[str]:
        """Why the daemon is not ready; empty when it is."""
        reasons = self._tasks.problems()
        if not await self.store.writable():
            reasons.append("store: not writable")
        for name in self.hub.names():
            state = self.hub.state(name)
            if state is not ChannelState.RUNNING:
                detail = self.hub.reason(name)
                reasons.append(f"channel {name}: {state}{f' ({detail})' if detail else ''}")
        return reasons
