"""Per-destination and per-bot send pacing shared by every send kind (design §8).

Pacing costs nothing while nothing is at risk:

- **Per chat**: group chats are paced at the platform's per-chat interval
  (``per_chat_interval_s``); private chats at ``per_dm_interval_s``, which is 0 where the
  platform does not limit one-to-one chats beyond the bot-wide rate (Telegram, as
  python-telegram-bot's own limiter).
- **Per bot**: ``global_rate_per_s`` with a burst of one second's worth (a GCRA, as the
  leaky bucket python-telegram-bot uses): a quiet bot sends at once, a busy one is held to the
  rate on average. Replicas of one store each keep their ``share`` of it (``set_share``).
- **Progress never holds a final back.** Finals, command replies and notices wait for their
  slot. Progress (a placeholder, a streaming edit) is throttled by its own interval
  (``ProgressStream``) and only goes when its chat is free *now* and the bot-wide budget has
  more than half its burst left; it reserves nothing in its chat, so the final that follows
  goes out at once.
- **Per group, per minute**: where the platform caps the new messages a bot may post in one
  group (``group_messages_per_minute``: Telegram's 20), a sliding minute per group chat. Only
  new messages count (a placeholder, a chunk, a file); edits and reactions do not, and
  private chats are not limited this way. A final waits for its place in the minute; progress
  that finds the minute full is refused at once.
- **A 429 slows exactly the chat it names** (``block``): other chats and the bot-wide budget
  are untouched.

This is the only pacing decision a send meets: adapters declare their limits in
``ChannelCapabilities`` and pace nothing themselves.

``reserve``/``may_send_progress`` decide from the injected clock alone (tests assert on them);
``acquire``/``try_acquire`` are the thin async/sync wrappers the outbox and progress use.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from bot.delivery.bounded import SWEEP_FLOOR, Until

DestinationKey = tuple[str, str, str]
"""(channel, account id, chat id)."""

MINUTE_S = 60.0


@dataclass(slots=True)
class _Pace:
    group_interval_s: float
    dm_interval_s: float
    rate_per_s: float
    """The bot's documented rate, for all replicas together."""
    global_interval_s: float = 0.0
    burst_s: float = 0.0
    """How far ahead of the steady rate the bot may run: one second's worth of sends."""
    group_per_minute: int | None = None
    """New messages a bot may post in one group per minute; ``None``: no such cap."""
    tat: float = 0.0
    """The bot's theoretical arrival time (GCRA): sends are at the rate while ``tat`` is at
    most ``burst_s`` ahead of now."""

    def take_share(self, share: float) -> None:
        """This process's part of the bot-wide rate (``RateLimiter.share``)."""
        rate = self.rate_per_s * share
        self.global_interval_s = 1.0 / rate if rate > 0 else 0.0
        interval = self.global_interval_s
        self.burst_s = max(0.0, 1.0 - interval) if interval > 0 else 0.0


class _Minutes:
    """Each group chat's last new messages (their slot times), as many as its per-minute cap;
    chats with none in the last minute are forgotten in sweeps, as ``Until`` does."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._sent: dict[DestinationKey, deque[float]] = {}
        self._sweep_at = SWEEP_FLOOR

    def __len__(self) -> int:
        return len(self._sent)

    def earliest(self, key: DestinationKey, cap: int) -> float:
        """When the chat may take its next new message (a time past: now)."""
        times = self._sent.get(key)
        if times is None or len(times) < cap:
            return 0.0
        return times[0] + MINUTE_S

    def record(self, key: DestinationKey, at: float, cap: int) -> None:
        times = self._sent.get(key)
        if times is None or times.maxlen != cap:
            times = self._sent[key] = deque(times or (), maxlen=cap)
        times.append(at)
        if len(self._sent) >= self._sweep_at:
            now = self._clock()
            self._sent = {k: t for k, t in self._sent.items() if t[-1] + MINUTE_S > now}
            self._sweep_at = max(SWEEP_FLOOR, 2 * len(self._sent))


class RateLimiter:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._paces: dict[str, _Pace] = {}
        self._next_chat: Until[DestinationKey, float] = Until(clock)
        """When each chat may send next; chats whose time has passed are forgotten."""
        self._minutes = _Minutes(clock)
        self._share = 1.0

    @property
    def share(self) -> float:
        return self._share

    def set_share(self, share: float) -> None:
        """Replicas on one store send for one bot: each keeps ``share`` of every bot-wide rate
        (``bot/delivery/budget.py``), so together they stay within the platform's limit. Per
        chat paces are not shared: a chat is sent to by the one replica holding it."""
        self._share = min(1.0, max(share, 0.0))
        for pace in self._paces.values():
            pace.take_share(self._share)

    def configure(
        self,
        channel: str,
        *,
        per_chat_interval_s: float,
        global_rate_per_s: float,
        per_dm_interval_s: float = 0.0,
        group_messages_per_minute: int | None = None,
    ) -> None:
        """``per_chat_interval_s`` paces group chats, ``per_dm_interval_s`` private ones;
        ``group_messages_per_minute`` caps the new messages per group chat and minute."""
        pace = _Pace(
            per_chat_interval_s,
            per_dm_interval_s,
            max(global_rate_per_s, 0.0),
            group_per_minute=group_messages_per_minute,
        )
        pace.take_share(self._share)
        self._paces[channel] = pace

    def reserve(self, key: DestinationKey, *, group: bool, new_message: bool = True) -> float:
        """Take the next slot for a send to ``key``; the seconds to wait for it (0: go now).

        Slots are reserved at once, so waiters queue fairly in call order. ``new_message``:
        the send posts a message (an edit does not), so it counts in a group's minute.
        Progress does not come here (``may_send_progress``).
        """
        now = self._clock()
        pace = self._paces.get(key[0])
        slot = max(now, self._next_chat.get(key) or now)
        if pace is None:
            return slot - now
        cap = pace.group_per_minute if group and new_message else None
        if cap:
            slot = max(slot, self._minutes.earliest(key, cap))
        if pace.global_interval_s > 0:
            # The bot-wide budget is charged when the slot is booked, not at the chat's own
            # (later) time: a chat held by a 429 or its interval must not hold back the others.
            shared = max(now, pace.tat - pace.burst_s)
            pace.tat = max(pace.tat, shared) + pace.global_interval_s
            slot = max(slot, shared)
        if cap:
            self._minutes.record(key, slot, cap)
        interval = pace.group_interval_s if group else pace.dm_interval_s
        if interval > 0:
            self._next_chat.set(key, slot + interval)
        return slot - now

    def may_send_progress(
        self, key: DestinationKey, *, group: bool = False, new_message: bool = False
    ) -> bool:
        """Whether progress (a placeholder, a streaming edit) may go right now: its chat is not
        waiting (a 429, a final queued ahead), a new message (the placeholder) finds room in
        its group's minute, and the bot-wide budget has more than half its burst left, which
        is kept for finals. Takes a bot-wide slot (and a placeholder its place in the minute)
        when it answers ``True``, nothing else in the chat: the final after it does not wait."""
        now = self._clock()
        if (self._next_chat.get(key) or now) > now:
            return False
        pace = self._paces.get(key[0])
        if pace is None:
            return True
        cap = pace.group_per_minute if group and new_message else None
        if cap and self._minutes.earliest(key, cap) > now:
            return False
        if pace.global_interval_s > 0:
            if pace.tat - now > pace.burst_s / 2:
                return False
            pace.tat = max(pace.tat, now) + pace.global_interval_s
        if cap:
            self._minutes.record(key, now, cap)
        return True

    def try_acquire(
        self, key: DestinationKey, *, group: bool = False, new_message: bool = False
    ) -> bool:
        """A progress send's slot if it is free now (see ``may_send_progress``)."""
        return self.may_send_progress(key, group=group, new_message=new_message)

    async def acquire(self, key: DestinationKey, *, group: bool, new_message: bool = True) -> None:
        """Reserve the next slot at once (so waiters queue fairly), then wait for it."""
        delay = self.reserve(key, group=group, new_message=new_message)
        if delay > 0:
            await asyncio.sleep(delay)

    def block(self, key: DestinationKey, seconds: float) -> None:
        """The platform said to wait (429): nothing goes to this chat until then; other chats
        and the bot-wide budget are not touched."""
        self._next_chat.extend(key, self._clock() + seconds)
