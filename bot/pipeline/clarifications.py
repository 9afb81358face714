"""Questions the agent asks and the answers that resume it (design §7).

A question is recorded before it is posted, so an answer that races the send still finds
it, and it survives restarts. Answers are matched in this order: a button press, a reply
to the question message, then the next plain message from the asked user in that chat
(oldest pending question first) within ``clarification_ttl_s``.

A question is fitted to its platform before it is sent (``bot.delivery.questions``): split
into parts, its options beyond the buttons the platform takes listed by number. A part the
platform refuses outright (a dead outbox row) cancels the question and raises
``QuestionUndelivered``, which ends the turn with a visible failure: nobody waits for the
answer to a question they never saw.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.delivery.progress import OutboxSend
from bot.delivery.questions import fit_question, shortened
from bot.delivery.replies import ReplyContext
from bot.errors import AgentError
from bot.messages import (
    Destination,
    InboundMessage,
    OutboundKind,
    OutboundText,
    TextEdit,
    utc_now,
)
from bot.ports import ChannelCapabilities, ClarificationRequest, Store
from bot.records import ChatRef, Clarification, ClarificationState, OutboxItem, OutboxState

logger = logging.getLogger(__name__)

BUTTON_PREFIX = "c"
NONE_PENDING_MEMORY = 10_000
EXPIRED_CHARS = 200
"""How much of an expired question its "expired" edit repeats (it fits any platform)."""


class QuestionUndelivered(AgentError):
    """The platform refused a question's message outright; the question was cancelled. An
    ``AgentError``, so the turn ends like a failed run: a visible message and a reference."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    clarification: Clarification
    text: str


def button_payload(clarification_id: str, index: int) -> str:
    """Short enough for Telegram's 64-byte callback data."""
    return f"{BUTTON_PREFIX}/{clarification_id}/{index}"


def parse_button_payload(payload: str) -> tuple[str, int] | None:
    parts = payload.split("/")
    if len(parts) != 3 or parts[0] != BUTTON_PREFIX or not parts[2].isdigit():
        return None
    return parts[1], int(parts[2])


class Clarifications:
    def __init__(
        self,
        store: Store,
        ttl_s: Callable[[], float],
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._store = store
        self._ttl_s = ttl_s
        self._clock = clock
        self._none_pending: dict[tuple[str, str, str, str], None] = {}
        self._asks = 0
        """Askers known to have no pending question. Questions are only added by the process
        holding the chat (this one forgets the asker then; a chat taken over from another is
        forgotten whole, ``forget_chats``); answers and expiry only remove them. So most
        messages skip the store lookup."""

    def _remember_none_pending(self, asker: tuple[str, str, str, str]) -> None:
        self._none_pending[asker] = None
        if len(self._none_pending) > NONE_PENDING_MEMORY:
            del self._none_pending[next(iter(self._none_pending))]

    def forget_chats(self, chats: Collection[ChatRef]) -> None:
        """Chats this replica just took from another: questions were asked there by another
        process, so what is remembered of their askers may be out of date."""
        gained = {(chat.channel, chat.account_id, chat.chat_id) for chat in chats}
        for asker in [a for a in self._none_pending if a[:3] in gained]:
            del self._none_pending[asker]

    async def ask(
        self,
        request: ClarificationRequest,
        ctx: ReplyContext,
        asked_user_id: str,
        caps: ChannelCapabilities,
        send: OutboxSend,
    ) -> Clarification:
        assert ctx.thread_id is not None  # noqa: S101 - questions always belong to a thread
        now = self._clock()
        clarification = Clarification(
            id=uuid.uuid4().hex[:10],
            key=ctx.key,
            chat_type=ctx.destination.chat_type,
            thread_id=ctx.thread_id,
            asked_user_id=asked_user_id,
            question=request.question,
            options=request.options,
            question_message_id=None,
            created_at=now,
            expires_at=now + timedelta(seconds=self._ttl_s()),
        )
        self._asks += 1
        await self._store.clarifications.add(clarification)
        key = ctx.key
        self._none_pending.pop((key.channel, key.account_id, key.chat_id, asked_user_id), None)
        await self._post(clarification, request, ctx.tagged("question"), caps, send)
        logger.info("clarification asked id=%s key=%s", clarification.id, ctx.key.describe())
        return clarification

    async def _post(
        self,
        clarification: Clarification,
        request: ClarificationRequest,
        ctx: ReplyContext,
        caps: ChannelCapabilities,
        send: OutboxSend,
    ) -> None:
        """Send the fitted question part by part; the last part (with the buttons) is the
        question message a reply answers, and keeps the key a single-part question had."""
        payload = functools.partial(button_payload, clarification.id)
        fitted = fit_question(request.question, request.options, caps, payload)
        count = len(fitted.parts)
        for index, text in enumerate(fitted.parts):
            last = index == count - 1
            delivery = OutboundText(
                destination=ctx.destination,
                text=text,
                kind=OutboundKind.FINAL,
                reply_to=ctx.reply_to if index == 0 else None,
                buttons=fitted.buttons if last else (),
            )
            item = ctx.item(clarification.id if last else f"{clarification.id}/{index}", delivery)
            ref = await send(item)
            if ref is None:
                await self._unless_refused(clarification, item)
            elif last and ref.message_ids:
                await self._store.clarifications.set_question_message(clarification.id, ref.last)

    async def _unless_refused(self, clarification: Clarification, item: OutboxItem) -> None:
        """A part that was not sent may still go (a retry later); one the platform refused
        for good cancels the question and ends the turn."""
        (row,) = await self._store.outbox.enqueue_rows([item])  # the row as it now stands
        if row.state is not OutboxState.DEAD:
            return
        await self._store.clarifications.cancel(clarification.id)
        logger.warning(
            "clarification refused id=%s key=%s: %r",
            clarification.id,
            clarification.key.describe(),
            row.last_error or "",
        )
        raise QuestionUndelivered(
            "this chat refused to show the question I needed to ask you",
            detail=f"question {clarification.id} undelivered: {row.last_error}",
        )

    async def match(self, message: InboundMessage, *, is_command: bool) -> Answer | None:
        """The pending question this message answers, claimed atomically; else ``None``."""
        candidate = await self._candidate(message, is_command=is_command)
        if candidate is None:
            return None
        clarification, text = candidate
        if not await self._store.clarifications.resolve(clarification.id, text):
            return None
        return Answer(clarification=clarification, text=text)

    async def awaits_answer(self, message: InboundMessage) -> bool:
        """Whether ``message`` would answer a pending question; nothing is claimed."""
        return await self._candidate(message, is_command=False) is not None

    async def _candidate(
        self, message: InboundMessage, *, is_command: bool
    ) -> tuple[Clarification, str] | None:
        store = self._store.clarifications
        if message.button is not None:
            return await self._pressed(message.button.payload)
        if is_command or not (message.text.strip() or message.attachments):
            return None
        if message.reply_to_message_id is not None:
            found = await store.by_question_message(
                message.channel, message.account_id, message.chat_id, message.reply_to_message_id
            )
            if found is not None and found.state is ClarificationState.PENDING:
                return found, _option_or_text(found, message.text)
            # A reply to an answered, expired or cancelled question may still answer a
            # pending one.
        asker = (message.channel, message.account_id, message.chat_id, message.sender.id)
        if asker in self._none_pending:
            return None
        asks_before = self._asks
        pending = await store.pending_for_user(*asker, self._clock())
        if not pending:
            if self._asks == asks_before:  # no question was asked while we looked
                self._remember_none_pending(asker)
            return None
        return pending[0], _option_or_text(pending[0], message.text)

    async def _pressed(self, payload: str) -> tuple[Clarification, str] | None:
        parsed = parse_button_payload(payload)
        if parsed is None:
            return None
        found = await self._store.clarifications.get(parsed[0])
        if found is None or not 0 <= parsed[1] < len(found.options):
            return None
        return found, found.options[parsed[1]]

    async def expire_due(
        self, caps_for: Callable[[str], ChannelCapabilities | None]
    ) -> list[tuple[Clarification, TextEdit | None]]:
        """Expire overdue questions; returns each with the edit that marks it expired."""
        expired = await self._store.clarifications.expire_due(self._clock())
        results: list[tuple[Clarification, TextEdit | None]] = []
        for clarification in expired:
            caps = caps_for(clarification.key.channel)
            edit = None
            if caps is not None and caps.edits and clarification.question_message_id:
                edit = _expired_edit(clarification)
            results.append((clarification, edit))
            logger.info("clarification expired id=%s", clarification.id)
        return results


def _option_or_text(clarification: Clarification, text: str) -> str:
    """``2`` answers the second numbered option; anything else is the answer itself."""
    stripped = text.strip()
    if stripped.isdigit() and 1 <= int(stripped) <= len(clarification.options):
        return clarification.options[int(stripped) - 1]
    return stripped


def _expired_edit(clarification: Clarification) -> TextEdit:
    return TextEdit(
        destination=Destination.of(clarification.key, clarification.chat_type),
        message_id=clarification.question_message_id or "",
        text=f"⌛ ~{shortened(clarification.question, EXPIRED_CHARS)}~ (this question expired)",
        kind=OutboundKind.NOTICE,
    )
