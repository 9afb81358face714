"""``/console/conversations``: chats by their newest message, searchable by chat, user and
the text of that message; ``/console/conversations/{channel}/{chat}``: one chat's thread
(messages and the bot's replies, their Markdown rendered safely by ``markdown``, files by
name and size), its recent turns with outcome and duration, the questions it waits on, and
the mutes in force (human takeover).

Both read the newest journal entries (``bot.ports.activity``), so they reach back
``daemon.journal_retention_days`` at most, and the search the newest ``SEARCHED`` messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web
from markupsafe import Markup

from bot.console.markdown import to_html
from bot.console.pages import deps, page
from bot.messages import (
    ConversationKey,
    Delivery,
    MessageRemoval,
    OutboundFile,
    OutboundText,
    TextEdit,
)
from bot.operator.trace import MessageTrace, answering_turn, run_outcome
from bot.ports import Store
from bot.ports.activity import journal_window_of
from bot.ports.mutes import Mute, mutes_of
from bot.records import UNFINISHED_INBOUND, Clarification, JournalEntry, OutboxRow

SEARCHED = 1000
SHOWN = 100
THREAD = 40


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRow:
    channel: str
    chat_id: str
    chat_type: str
    last: JournalEntry
    messages: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadItem:
    entry: JournalEntry
    outcome: str
    duration_s: float | None
    replies: tuple[tuple[OutboxRow, Markup], ...]
    """The rows answering it, each with what it sent as HTML: the text rendered, a file's
    name and size, what a reaction or a removal did."""


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/conversations", _search)
    router.add_get("/conversations/{channel}/{chat_id:.+}", _chat)  # ids may hold a slash


def _matches(entry: JournalEntry, needle: str) -> bool:
    message = entry.message
    haystack = (message.chat_id, message.sender.id, message.sender.display_name, message.text)
    return any(needle in text.lower() for text in haystack)


async def _search(request: web.Request) -> web.Response:
    store = deps(request).store
    needle = request.query.get("q", "").strip()[:200]
    channel = request.query.get("channel", "").strip() or None
    window = journal_window_of(store)
    entries = [] if window is None else await window.recent(limit=SEARCHED, channel=channel)
    chats: dict[tuple[str, str], ChatRow] = {}
    for entry in entries:  # newest first: the first one of a chat is its newest
        where = (entry.message.channel, entry.message.chat_id)
        known = chats.get(where)
        if known is None:
            chats[where] = ChatRow(
                channel=where[0],
                chat_id=where[1],
                chat_type=str(entry.message.chat_type),
                last=entry,
                messages=1,
            )
        else:
            chats[where] = ChatRow(
                channel=known.channel,
                chat_id=known.chat_id,
                chat_type=known.chat_type,
                last=known.last,
                messages=known.messages + 1,
            )
    found = [row for row in chats.values() if not needle or _matches(row.last, needle.lower())]
    return page(
        request,
        "conversations.html",
        "conversations",
        needle=needle,
        channel=channel or "",
        chats=found[:SHOWN],
        has_history=window is not None,
        searched=SEARCHED,
        active_count=await store.conversations.count(),
    )


def size_text(size: int) -> str:
    """``512 bytes``, ``2.0 KB``, ``3.4 MB``."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def reply_html(delivery: Delivery) -> Markup:
    """What an outbox row sent, as the thread shows it."""
    if isinstance(delivery, OutboundText):
        return to_html(delivery.text)
    if isinstance(delivery, TextEdit):
        return Markup('<span class="kind">edit of {}</span>{}').format(
            delivery.message_id, to_html(delivery.text)
        )
    if isinstance(delivery, OutboundFile):
        kind = "image" if delivery.is_image else "file"
        named = Markup('<p class="file">📎 <b>{}</b> ({}, {})</p>').format(
            delivery.name, kind, size_text(delivery.size)
        )
        return named + (to_html(delivery.caption) if delivery.caption else Markup())
    if isinstance(delivery, MessageRemoval):
        return Markup('<span class="kind">removed message {}</span>').format(delivery.message_id)
    return Markup('<span class="kind">reaction {} on {}</span>').format(
        delivery.reaction, delivery.message_id
    )


async def _thread_item(store: Store, entry: JournalEntry) -> ThreadItem:
    turn = answering_turn(entry.reason)
    rows = await store.outbox.for_correlation(turn or entry.correlation_id)
    finished = entry.status not in UNFINISHED_INBOUND
    return ThreadItem(
        entry=entry,
        outcome=run_outcome(MessageTrace(entry=entry, answered_by=turn, rows=())),
        duration_s=(entry.updated_at - entry.recorded_at).total_seconds() if finished else None,
        replies=tuple((row, reply_html(row.item.delivery)) for row in rows),
    )


async def _questions(store: Store, entries: list[JournalEntry]) -> list[Clarification]:
    keys: dict[ConversationKey, None] = dict.fromkeys(e.key for e in entries if e.key is not None)
    questions: list[Clarification] = []
    for key in keys:
        questions += await store.clarifications.pending_for_key(key)
    return questions


async def _mutes(store: Store, channel: str, chat_id: str) -> list[Mute] | None:
    """The chat's mutes in force (the whole chat's, a topic's, a member's); ``None``: the
    store keeps no mutes."""
    book = mutes_of(store)
    if book is None:
        return None
    return [
        mute
        for mute in await book.active(datetime.now(UTC))
        if mute.key.channel == channel and mute.key.chat_id == chat_id
    ]


async def _chat(request: web.Request) -> web.Response:
    store = deps(request).store
    channel, chat_id = request.match_info["channel"], request.match_info["chat_id"]
    window = journal_window_of(store)
    entries = (
        []
        if window is None
        else await window.recent(limit=THREAD, channel=channel, chat_id=chat_id)
    )
    entries.reverse()  # oldest first, as a chat reads
    items = [await _thread_item(store, entry) for entry in entries]
    threads = sorted({e.thread_id for e in entries if e.thread_id})
    return page(
        request,
        "conversation.html",
        "conversations",
        channel=channel,
        chat_id=chat_id,
        items=items,
        questions=await _questions(store, entries),
        threads=threads,
        mutes=await _mutes(store, channel, chat_id),
        shown=THREAD,
    )
