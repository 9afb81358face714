"""The per-user message rate (design §25): ``usage.messages_per_minute`` across chats.

Each addressed message counts one in the store's per-minute count for its sender
(``UsageStore.hit``), so on a shared store every replica adds to one count. A message beyond
the limit is refused before it reaches a lane, so one user's flood cannot starve other chats
of runs. The sender is told once per minute, not once per flooded message: whom this process
told is kept until their minute ends (a bounded ``Until`` map), so with several replicas a
sender may hear it once from each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from bot.delivery.bounded import Until
from bot.messages import utc_now
from bot.ports.usage import UsageStore
from bot.usage.budgets import Requester
from bot.usage.config import UsageSettings
from bot.usage.wording import moment

MINUTE = timedelta(minutes=1)


@dataclass(frozen=True, slots=True, kw_only=True)
class RateRefusal:
    """A message past the sender's limit this minute."""

    limit: int
    count: int
    """Messages counted from the sender this minute, this one included."""
    again_at: datetime
    """When the next minute begins, and the sender may write again."""
    text: str | None
    """The reply; ``None`` when the sender was already told this minute."""


class MessageRate:
    """``usage.messages_per_minute`` held against the store's per-minute counts (``None``: no
    store keeps them, and no message is held)."""

    def __init__(
        self,
        settings: Callable[[], UsageSettings],
        store: UsageStore | None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._settings = settings
        self._store = store
        self._clock = clock
        self._told: Until[tuple[str, str], datetime] = Until(clock)

    async def check(self, who: Requester) -> RateRefusal | None:
        """Count ``who``'s message; a refusal once the count passes the limit."""
        usage = self._settings()
        limit = usage.messages_per_minute
        if self._store is None or limit is None or (who.is_admin and usage.exempt_admins):
            return None
        now = self._clock()
        minute = now.replace(second=0, microsecond=0)
        count = await self._store.hit(who.channel, who.user_id, minute)
        if count <= limit:
            return None
        again_at = minute + MINUTE
        sender = (who.channel, who.user_id)
        if self._told.get(sender) is not None:
            return RateRefusal(limit=limit, count=count, again_at=again_at, text=None)
        self._told.set(sender, again_at)
        text = rate_text(limit, again_at, now, ZoneInfo(usage.timezone))
        return RateRefusal(limit=limit, count=count, again_at=again_at, text=text)


def rate_text(limit: int, again_at: datetime, now: datetime, zone: ZoneInfo) -> str:
    """The limit, that this message went unanswered, and when the sender may write again."""
    plural = "message" if limit == 1 else "messages"
    return (
        f"⏳ You can send {limit} {plural} a minute to this bot (in all chats together), and"
        f" you have sent more: I'm not answering until the minute is over. Write again"
        f" {moment(again_at, now, zone)}."
    )
