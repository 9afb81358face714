"""Questions the agent asks and the answers that resume it (design §7).

A question is recorded before it is posted, so an answer that races the send still finds
it, and it survives restarts. Answers are matched in this order: a button press, a reply
to the question message, then the next plain message from the asked user in that chat
(oldest pending question first) within ``clarification_ttl_s``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.delivery.progress import OutboxSend
from bot.delivery.replies import ReplyContext
from bot.messages import (
    Button,
    Destination,
    InboundMessage,
    OutboundKind,
    OutboundText,
    TextEdit,
    utc_now,
)
from bot.ports import ChannelCapabilities, ClarificationRequest, Store
from bot.records import ChatRef, Clarification, ClarificationState

logger = logging.getLogger(__name__)

BUTTON_PREFIX = "c"
NONE_PENDING_MEMORY = 10_000


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


def question_text(request: ClarificationRequest, *, with_buttons: bool) -> str:
    if not request.options or with_buttons:
        return f"❓ {request.question}"
    numbered = "\n".join(f"{i}. {option}" for i, option in enumerate(request.options, 1))
    return f"❓ {request.question}\n\n{numbered}\n\n_Reply with a number or your own answer._"


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
        buttons = tuple(
            Button(label=option, payload=button_payload(clarification.id, index))
            for index, option in enumerate(request.options)
        ) if caps.buttons else ()  # fmt: skip
        delivery = OutboundText(
            destination=ctx.destination,
            text=question_text(request, with_buttons=bool(buttons)),
            kind=OutboundKind.FINAL,
            reply_to=ctx.reply_to,
            buttons=buttons,
        )
        ref = await send(ctx.tagged("question").item(clarification.id, delivery))
        if ref is not None and ref.message_ids:
            await self._store.clarifications.set_question_message(clarification.id, ref.last)
        logger.info("clarification asked id=%s key=%s", clarification.id, ctx.key.describe())
        return clarification

    async def match(self, message: InboundMessage, *, is_command: bool) -> Answer | None:
        """The pending question this message answers, claimed atomically; else ``None``."""
        candidate = await self._candidate(message, is_command=is_command)
        if candidate is None:
            return None
        clarification, text = candidate
        if not await self._store.clarifications.resolve(clarification.id, text):
            return None
        return Answer(clarification=clarification, text=text)

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
        text=f"⌛ ~{clarification.question}~ (this question expired)",
        kind=OutboundKind.NOTICE,
    )
