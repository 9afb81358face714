"""The one way the pipeline replies: plan text, notices, answers and reactions, and record
them in the outbox (design §8).

Turns, the router (command replies, notices) and recovery (restart notices) all hold a
``ReplyWriter`` for the conversation they answer. It splits text in the platform's unit, lets
the first chunk replace a progress placeholder, adds files and notes, and records everything
under the context's idempotency keys, so recording the same reply twice sends it once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from bot.delivery.replies import (
    MAX_CHUNKS_INLINE,
    ReplyContext,
    long_answer_summary,
    plan_chunks,
    plan_files,
    plan_text,
    split_reply,
)
from bot.messages import Delivery, OutboundKind, OutboundText, Reaction, ReactionMark
from bot.ports import ChannelCapabilities, PresentedFile
from bot.records import OutboxItem
from bot.workspace import ThreadWorkspace


class Record(Protocol):
    """Record deliveries in the outbox (``Outbox.submit``); ``finishes`` names the journal
    entries the reply answers, marked handled in the same write."""

    async def __call__(
        self, items: Sequence[OutboxItem], *, finishes: Sequence[int] = ()
    ) -> list[int]: ...


class ReplyWriter:
    def __init__(self, ctx: ReplyContext, caps: ChannelCapabilities, record: Record) -> None:
        self.ctx = ctx
        self.caps = caps
        self._record = record

    def tagged(self, tag: str) -> ReplyWriter:
        """The same conversation, with idempotency keys in their own namespace."""
        return ReplyWriter(self.ctx.tagged(tag), self.caps, self._record)

    async def text(
        self,
        text: str,
        *,
        kind: OutboundKind = OutboundKind.FINAL,
        placeholder_id: str | None = None,
        max_messages: int | None = None,
    ) -> None:
        """Text, split in the platform's unit (at most ``max_messages`` of its messages); the
        first replaces the placeholder, if there is one."""
        deliveries = plan_text(self.ctx, text, self.caps, kind=kind, placeholder_id=placeholder_id)
        await self._submit(deliveries[:max_messages])

    async def notice(self, text: str) -> None:
        await self.text(text, kind=OutboundKind.NOTICE)

    async def private(self, text: str, user_id: str) -> None:
        """A notice for one person: shown to them alone where the platform can
        (``OutboundText.private_to``), posted in the chat elsewhere."""
        deliveries = plan_text(self.ctx, text, self.caps, kind=OutboundKind.NOTICE)
        await self._submit(
            [
                replace(d, private_to=user_id) if isinstance(d, OutboundText) else d
                for d in deliveries
            ]
        )

    async def answer(
        self,
        text: str,
        files: Sequence[PresentedFile],
        workspace: ThreadWorkspace,
        *,
        placeholder_id: str | None,
        finishes: Sequence[int],
    ) -> None:
        """A turn's final answer: its text (a long one as a Markdown file with a summary),
        then a note for files that cannot be sent, then the files."""
        ctx, caps = self.ctx, self.caps
        chunks = split_reply(text, caps)
        presented = list(files)
        if len(chunks) > MAX_CHUNKS_INLINE:
            answer_path = workspace.outputs / f"answer-{ctx.correlation_id}.md"
            await asyncio.to_thread(answer_path.write_text, text, "utf-8")
            presented.insert(0, PresentedFile(path=answer_path, name="answer.md"))
            chunks = split_reply(long_answer_summary(text, caps), caps)
        deliveries = plan_chunks(ctx, chunks, caps, placeholder_id=placeholder_id)
        uploads: list[Delivery] = []
        notes: list[str] = []
        if presented:  # the file checks block: in a worker thread, when there is a file at all
            uploads, notes = await asyncio.to_thread(plan_files, ctx, presented, workspace, caps)
        if notes:
            deliveries += plan_text(ctx, "\n".join(notes), caps, kind=OutboundKind.NOTICE)[:1]
        await self._submit([*deliveries, *uploads], finishes=finishes)

    async def react(self, reaction: Reaction) -> None:
        """Mark the message replied to, where the platform shows ``reaction``."""
        ctx = self.ctx
        if ctx.reply_to is None or reaction not in self.caps.reactions:
            return
        mark = ReactionMark(destination=ctx.destination, message_id=ctx.reply_to, reaction=reaction)
        await self._submit([mark])

    async def _submit(
        self, deliveries: Sequence[Delivery], *, finishes: Sequence[int] = ()
    ) -> None:
        items = [self.ctx.item(index, delivery) for index, delivery in enumerate(deliveries)]
        await self._record(items, finishes=finishes)


def _for(user_id: str, delivery: Delivery) -> Delivery:
    return replace(delivery, private_to=user_id) if isinstance(delivery, OutboundText) else delivery
