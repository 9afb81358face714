"""Turn a final answer into outbox items: chunks, long-answer files, presented files (design §8).

Text goes first, then files, all in the conversation's destination. The first chunk
replaces the progress placeholder when the platform can edit. Idempotency keys derive from
the correlation id, so recording the same final twice (a crash between recording and
finishing a turn) sends it once.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from bot.delivery.chunking import measure, split_markdown
from bot.delivery.files import FileRefused, size_beneath
from bot.messages import (
    ConversationKey,
    Delivery,
    Destination,
    InboundMessage,
    MessageOrigin,
    MessageRemoval,
    OutboundFile,
    OutboundKind,
    OutboundText,
    TextEdit,
)
from bot.ports import ChannelCapabilities, PresentedFile
from bot.records import OutboxItem
from bot.workspace import PathEscape, ThreadWorkspace

MAX_CHUNKS_INLINE = 5
SUMMARY_CHARS = 600


class Answered(Protocol):
    """What a reply answers: a journaled message (``Accepted`` on the bus, a ``JournalEntry``
    in recovery) with the correlation id its replies are keyed by."""

    @property
    def message(self) -> InboundMessage: ...

    @property
    def correlation_id(self) -> str: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyContext:
    key: ConversationKey
    thread_id: str | None
    destination: Destination
    reply_to: str | None
    correlation_id: str
    turn_tag: str = "final"

    @classmethod
    def answering(  # noqa: PLR0913 - keyword options, each with its default
        cls,
        key: ConversationKey,
        answered: Answered | None,
        *,
        destination: Destination | None = None,
        thread_id: str | None = None,
        tag: str = "final",
        correlation_id: str = "",
    ) -> ReplyContext:
        """Replies in ``key``'s conversation to ``answered``, keyed by its correlation id.

        ``destination`` defaults to the conversation's chat; ``correlation_id`` is the key
        used when nothing is answered (a turn with no message left).
        """
        if destination is None:
            if answered is None:
                raise ValueError("a reply needs a message or a destination")
            destination = Destination.of(key, answered.message.chat_type)
        return cls(
            key=key,
            thread_id=thread_id,
            destination=destination,
            reply_to=_reply_target(answered),
            correlation_id=answered.correlation_id if answered is not None else correlation_id,
            turn_tag=tag,
        )

    def tagged(self, turn_tag: str) -> ReplyContext:
        """The same conversation, with idempotency keys in their own namespace."""
        return replace(self, turn_tag=turn_tag)

    def item(self, index: int | str, delivery: Delivery) -> OutboxItem:
        return OutboxItem(
            idempotency_key=f"{self.correlation_id}/{self.turn_tag}/{index}",
            delivery=delivery,
            key=self.key,
            thread_id=self.thread_id,
            correlation_id=self.correlation_id,
        )


def _reply_target(answered: Answered | None) -> str | None:
    """The platform message a reply answers; a pushed prompt has none (design §19)."""
    if answered is None or answered.message.origin is MessageOrigin.OPERATOR:
        return None
    return answered.message.message_id


def split_reply(text: str, caps: ChannelCapabilities) -> tuple[str, ...]:
    """A reply's messages, split in the platform's unit; never none."""
    return split_markdown(text, caps.text_limit, caps.text_unit) or ("(empty reply)",)


def plan_text(
    ctx: ReplyContext,
    text: str,
    caps: ChannelCapabilities,
    *,
    kind: OutboundKind = OutboundKind.FINAL,
    placeholder_id: str | None = None,
) -> list[Delivery]:
    """The text part of a reply, split in the platform's unit."""
    return plan_chunks(ctx, split_reply(text, caps), caps, kind=kind, placeholder_id=placeholder_id)


def plan_chunks(
    ctx: ReplyContext,
    chunks: tuple[str, ...],
    caps: ChannelCapabilities,
    *,
    kind: OutboundKind = OutboundKind.FINAL,
    placeholder_id: str | None = None,
) -> list[Delivery]:
    """Messages for already split text; the first replaces the placeholder if there is one."""
    deliveries: list[Delivery] = []
    for index, chunk in enumerate(chunks):
        if index == 0 and placeholder_id is not None and caps.edits:
            deliveries.append(
                TextEdit(
                    destination=ctx.destination, message_id=placeholder_id, text=chunk, kind=kind
                )
            )
        else:
            reply_to = ctx.reply_to if index == 0 else None
            deliveries.append(
                OutboundText(destination=ctx.destination, text=chunk, kind=kind, reply_to=reply_to)
            )
    return deliveries


def take_back(
    destination: Destination, message_id: str, caps: ChannelCapabilities, instead: str
) -> Delivery:
    """A message of the bot's that should not stand: deleted where the platform lets the bot
    delete, else edited to say ``instead``."""
    if caps.deletes:
        return MessageRemoval(destination=destination, message_id=message_id)
    return TextEdit(
        destination=destination, message_id=message_id, text=instead, kind=OutboundKind.FINAL
    )


LONG_ANSWER_NOTE = "_The full answer is long, so it is attached as a Markdown file._"


def long_answer_summary(text: str, caps: ChannelCapabilities) -> str:
    """The answer's first paragraph, shortened so that it and the note fit one message."""
    room = min(SUMMARY_CHARS, caps.text_limit - measure(LONG_ANSWER_NOTE, caps.text_unit) - 8)
    head = text.strip().split("\n\n", 1)[0]
    if measure(head, caps.text_unit) > room:
        head = head[: max(0, room)]
        while head and measure(head, caps.text_unit) > room:
            head = head[:-1]
        head = f"{head.rstrip()}…" if head.strip() else ""
    return f"{head}\n\n{LONG_ANSWER_NOTE}" if head else LONG_ANSWER_NOTE


def plan_files(
    ctx: ReplyContext,
    files: Sequence[PresentedFile],
    workspace: ThreadWorkspace,
    caps: ChannelCapabilities,
) -> tuple[list[Delivery], list[str]]:
    """Files to upload, and notes for files that cannot be sent (outside, missing, a link or
    not a regular file, too big). A row records the file's path with no link in it and its
    size: each send attempt re-checks both (``bot.delivery.files.read_outbound``)."""
    uploads: list[Delivery] = []
    notes: list[str] = []
    seen: set[Path] = set()
    for presented in files:
        checked = _regular_in_outputs(workspace, presented.path)
        if checked is None:
            notes.append(f"`{presented.name}` could not be sent: it is not a file in outputs/.")
            continue
        path, size = checked
        if path in seen:
            continue
        seen.add(path)
        if size > caps.max_file_bytes:
            notes.append(
                f"`{presented.name}` is too large to send here ({_mb(size)}; "
                f"the limit is {_mb(caps.max_file_bytes)})."
            )
            continue
        mime = mimetypes.guess_type(presented.name)[0] or ""
        uploads.append(
            OutboundFile(
                destination=ctx.destination,
                path=str(path),
                name=presented.name,
                size=size,
                is_image=mime.startswith("image/") and size <= caps.max_image_bytes,
            )
        )
    return uploads, notes


def _regular_in_outputs(workspace: ThreadWorkspace, path: Path) -> tuple[Path, int] | None:
    """The path (no link in it) and size of a regular file in ``outputs/``, else ``None``."""
    try:
        parts = workspace.locate(str(path))
        if parts[:1] != ("outputs",):
            return None
        return workspace.root.joinpath(*parts), size_beneath(workspace.root, parts)
    except (PathEscape, FileRefused):
        return None


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
