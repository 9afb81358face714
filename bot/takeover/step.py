"""The route's takeover step (design §22), beside ``takeover``, which the commands import.

After the conversation is known and before its turn is submitted: a muted conversation's
message, or a human's reply that the bot yields to, goes no further.
"""

from __future__ import annotations

from typing_extensions import override

from bot.pipeline.bus import Accepted
from bot.pipeline.route import RouteStep, Routing
from bot.takeover.takeover import Takeover


class HeldByHumans(RouteStep):
    """Muted, or a human stepped in: ``Takeover.intercept`` records the message as handled."""

    def __init__(self, takeover: Takeover) -> None:
        self._takeover = takeover

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        return await self._takeover.intercept(item, ctx.conversation())
