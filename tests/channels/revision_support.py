"""What the edit and recall tests share (design §21): waiting for a revision's outcome and
switching the running daemon's ``conversations`` settings, as a reload does."""

from __future__ import annotations

from typing import Any

from bot.app import Daemon
from bot.kernel import Kernel
from tests.bot.harness import inbound_outcomes
from tests.fakes.common.waiting import eventually


async def outcome(kernel: Kernel, name: str, count: int = 1, within: float = 10.0) -> None:
    """Wait until ``count`` inbound events were routed with outcome ``name``."""
    await eventually(lambda: inbound_outcomes(kernel).get(name, 0) >= count, within)


def set_conversations(daemon: Daemon | None, **changes: Any) -> None:
    """Change ``conversations`` settings of a running daemon (what a reload applies)."""
    assert daemon is not None
    settings = daemon.settings
    conversations = settings.conversations.model_copy(update=changes)
    daemon.settings = settings.model_copy(update={"conversations": conversations})
