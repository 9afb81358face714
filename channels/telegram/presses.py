"""Button presses held open for a private answer: the one private word a Telegram bot has.

Telegram shows a spinner on a pressed inline button until the bot answers its callback query
(``answerCallbackQuery``), and that answer may carry up to 200 characters shown to the presser
alone (``show_alert`` makes it a dialog they dismiss). A bot cannot otherwise tell one member
of a group something the others do not see. The kernel decides what a press means only after
the adapter handed it over, so each press is held here for ``window_s``: an ``OutboundText``
``private_to`` the presser in that chat answers it with its text; when none comes in time the
query is answered empty, which only stops the spinner. Telegram takes an answer for about
15 s, so the default window leaves room for a slow answer.

One press is held per (chat id, user id): a newer press answers the older one empty at once.
At most ``limit`` are held; past that the oldest is answered empty. One task owned here
answers the presses whose time is up; answers go out in tasks owned here too, so neither the
update loop nor a send waits for an empty answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from telegram import Bot

from bot.errors import SendError
from bot.messages import RenderMode
from channels.telegram.errors import sdk_errors
from channels.telegram.render import render_async

logger = logging.getLogger(__name__)

PRESS_WINDOW_S = 8.0
"""How long a press waits for a private answer before it is answered empty."""
HELD_LIMIT = 1024
ALERT_LIMIT = 200
"""``answerCallbackQuery`` takes at most 200 characters of text."""
CLOSE_WAIT_S = 5.0

PressKey = tuple[str, str]
"""(chat id, user id), as the kernel spells them in ``Destination`` and ``private_to``."""


@dataclass(frozen=True, slots=True)
class _Held:
    query_id: str
    due: float


def alert_text(text: str, limit: int = ALERT_LIMIT) -> str:
    """``text`` cut to ``limit`` UTF-16 code units (Telegram's unit), ending in "…" if cut."""
    if _utf16(text) <= limit:
        return text
    cut = text[: limit - 1]
    while _utf16(cut) > limit - 1:
        cut = cut[:-1]
    return cut.rstrip() + "…"


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class PressAnswers:
    """Unanswered callback queries by (chat, user); each is answered exactly once."""

    def __init__(self, *, window_s: float, secret: str, limit: int = HELD_LIMIT) -> None:
        self._window_s = window_s
        self._secret = secret
        self._limit = limit
        self._held: dict[PressKey, _Held] = {}
        """In order of ``due``: the window is fixed and a renewed key moves to the end."""
        self._changed = asyncio.Event()
        self._bot: Bot | None = None
        self._expiry: asyncio.Task[None] | None = None
        self._answers: set[asyncio.Task[bool]] = set()

    def start(self, bot: Bot) -> None:
        self._bot = bot
        if self._expiry is None:
            self._expiry = asyncio.create_task(self._expire(), name="channel:telegram:presses")

    async def aclose(self) -> None:
        """Answer every held press empty (no spinner outlives the channel), then wait for the
        answers in flight, bounded."""
        expiry, self._expiry = self._expiry, None
        if expiry is not None:
            expiry.cancel()
            await asyncio.gather(expiry, return_exceptions=True)
        held, self._held = list(self._held.values()), {}
        for press in held:
            self.answer_empty(press.query_id)
        if self._answers:
            _, late = await asyncio.wait(self._answers, timeout=CLOSE_WAIT_S)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        self._bot = None

    def hold(self, key: PressKey, query_id: str) -> None:
        """Keep ``query_id`` open for a private answer to ``key``'s press."""
        earlier = self._held.pop(key, None)
        if earlier is not None and earlier.query_id != query_id:
            self.answer_empty(earlier.query_id)
        due = asyncio.get_running_loop().time() + self._window_s
        self._held[key] = _Held(query_id, due)
        while len(self._held) > self._limit:
            self.answer_empty(self._held.pop(next(iter(self._held))).query_id)
        self._changed.set()

    def release(self, key: PressKey, query_id: str) -> None:
        """Forget a press the kernel did not take, unanswered: Telegram delivers it again."""
        held = self._held.get(key)
        if held is not None and held.query_id == query_id:
            del self._held[key]

    async def answer_privately(self, key: PressKey, text: str, mode: RenderMode) -> bool:
        """Answer ``key``'s held press with ``text`` as an alert; ``False`` when no press is
        held for it (or the answer failed), so the caller posts the text instead."""
        held = self._held.pop(key, None)
        if held is None:
            return False
        shown = (await render_async(text, mode)).text  # the visible text, without markup
        return await self._answer(held.query_id, alert_text(shown))

    def answer_empty(self, query_id: str) -> None:
        """Stop the button's spinner, in a task of its own."""
        task = asyncio.create_task(self._answer(query_id), name="channel:telegram:answer")
        self._answers.add(task)
        task.add_done_callback(self._answers.discard)

    async def _answer(self, query_id: str, text: str | None = None) -> bool:
        bot = self._bot
        if bot is None:
            return False
        try:
            with sdk_errors(self._secret):
                await bot.answer_callback_query(query_id, text=text, show_alert=text is not None)
        except SendError as exc:
            logger.info("answerCallbackQuery failed: %s", exc)
            return False
        return True

    async def _expire(self) -> None:
        """Answer each press empty once its window has passed."""
        loop = asyncio.get_running_loop()
        while True:
            self._changed.clear()
            now = loop.time()
            while self._held:
                key, press = next(iter(self._held.items()))
                if press.due > now:
                    break
                del self._held[key]
                self.answer_empty(press.query_id)
            wait = next(iter(self._held.values())).due - now if self._held else None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._changed.wait()
