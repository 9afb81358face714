"""Crash recovery at startup (design §11): nothing the daemon accepted is silently lost.

For each journaled message whose turn did not complete: if its answer was already recorded
in the outbox, the outbox delivers it; otherwise the turn runs again, with a short "resuming
after restart" notice if it had started. The poison-message guard: a message whose own agent
run (model call or tool) was under way at ``MAX_INTERRUPTED_RUNS`` crashes gets an apology
instead of another attempt; a crash while it was queued, merged, waiting for the agent's load
or downloading uploads does not count (``TurnMark``).

Placeholders the crashed process left are finished here, never left "thinking": one that
was sent is edited to say the turn was interrupted and the answer follows (the re-run streams
into a placeholder of its own, ``placeholder/resumed``, so its answer comes below). One still
pending may have reached the platform anyway (a crash between the platform's answer and the
sent mark). Where the platform
dedupes sends, it is sent again under its key once its channel runs, which names the message
the platform took (or posts the interrupted notice if it took none), and that message is edited
the same way (``LeftPlaceholders``); elsewhere nothing could find that message again, so the
row is withdrawn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence

from bot.delivery.outbox import Outbox
from bot.delivery.replies import ReplyContext
from bot.delivery.writer import Record, ReplyWriter
from bot.hub import ChannelHub, ChannelState
from bot.messages import OutboundKind, OutboundText, TextEdit, utc_now
from bot.pipeline.bus import Accepted, InboundBus
from bot.pipeline.journal import Journal
from bot.pipeline.sessions import Sessions
from bot.pipeline.turn_marks import MAX_INTERRUPTED_RUNS, TurnMark
from bot.ports import ChannelCapabilities, Store
from bot.ports.push import AWAITING_PICKUP, PICKED_UP
from bot.records import ChatRef, InboundStatus, JournalEntry, OutboxItem, OutboxRow, OutboxState

logger = logging.getLogger(__name__)

Notify = Callable[[JournalEntry, str, str], Awaitable[None]]
"""Post ``text`` into the entry's conversation; the third argument names the notice (its
idempotency keys), so a later notice for the same message is never taken for an earlier one."""
Submit = Callable[[Sequence[OutboxItem]], Awaitable[list[int]]]
CapabilitiesOf = Callable[[str], ChannelCapabilities | None]

RESUMING_NOTICE = "🔄 Resuming after a restart…"
GAVE_UP_NOTICE = (
    "⚠️ Sorry — this message could not be answered after a restart. Please send it again."
)
INTERRUPTED_PLACEHOLDER = "⏹ Interrupted by a restart — the answer follows below."
PLACEHOLDER_TAG = "/placeholder/"
WITHDRAWN = "withdrawn: the turn was interrupted"
PENDING_SCAN = 10_000
"""How many pending rows the start-up scan for left placeholders reads (newest first)."""


def _turn_mark(entry: JournalEntry) -> TurnMark:
    """The entry's mark; one never given to a turn (accepted) is its own turn, not begun."""
    mark = TurnMark.parse(entry.reason) if entry.status is InboundStatus.RUNNING else None
    return mark or TurnMark(turn=entry.correlation_id, agent_started=False)


async def _answer_recorded(store: Store, correlation_id: str) -> bool:
    rows = await store.outbox.for_correlation(correlation_id)
    return any(row.item.idempotency_key.startswith(f"{correlation_id}/final/") for row in rows)


def _is_placeholder(row: OutboxRow) -> bool:
    return PLACEHOLDER_TAG in row.item.idempotency_key and isinstance(
        row.item.delivery, OutboundText
    )


def _interrupted_edit(row: OutboxRow, message_id: str) -> OutboxItem:
    """The edit that finishes a placeholder; keyed by the placeholder's own key, so finishing
    it again (a second restart) records nothing new."""
    edit = TextEdit(
        destination=row.item.delivery.destination,
        message_id=message_id,
        text=INTERRUPTED_PLACEHOLDER,
        kind=OutboundKind.NOTICE,
    )
    return OutboxItem(
        idempotency_key=finishing_key(row.item.correlation_id, row.item.idempotency_key),
        delivery=edit,
        key=row.item.key,
        thread_id=row.item.thread_id,
        correlation_id=row.item.correlation_id,
    )


def finishing_key(correlation_id: str, placeholder_key: str) -> str:
    """The key of the edit that finishes the placeholder sent under ``placeholder_key``."""
    tag = placeholder_key.removeprefix(f"{correlation_id}/")  # placeholder[/resumed]/N
    return f"{correlation_id}/recovery-{tag}"


async def sent_placeholders(store: Store, correlation_id: str) -> list[OutboxRow]:
    """The placeholders a turn of ``correlation_id`` sent, oldest first; the message each made
    is its row's first sent id."""
    return [
        row
        for row in await store.outbox.for_correlation(correlation_id)
        if _is_placeholder(row) and row.state is OutboxState.SENT and row.sent_message_ids
    ]


async def finish_placeholders(store: Store, correlation_id: str, submit: Submit) -> int:
    """Edit the placeholders an interrupted turn had sent; returns how many (the pending ones
    are ``LeftPlaceholders``' to finish)."""
    edits = [
        _interrupted_edit(row, row.sent_message_ids[0])
        for row in await sent_placeholders(store, correlation_id)
    ]
    if edits:
        await submit(edits)
    return len(edits)


class LeftPlaceholders:
    """Placeholders an earlier process recorded but never saw sent (design §11).

    At start no turn is live, so every pending placeholder row was left by a crash (or by a
    process that stopped before finishing one of these). ``collect`` runs in the daemon's
    prepare step, before the outbox worker: on a channel without ``idempotent_sends`` the row
    is withdrawn (as the platform may or may not have it, nothing could find the message
    again); otherwise the outbox reserves it, which holds its chat back. ``finish`` is the
    kernel task ``recovery:<channel>``: once the channel runs, each row is sent again under its
    key as the interrupted notice (the platform answers with the placeholder it took, or posts
    the notice), retried like a notice, and the message it names is then edited to the
    interrupted text. Only then does the chat's queue move on, so a placeholder the platform
    never took is still posted before the re-run's answer. A channel that never runs (parked,
    disabled by a reload) keeps its rows reserved and its chat waiting, with nothing retried
    meanwhile; on shutdown the rows stay pending for the next start, which collects them again.
    """

    def __init__(self, store: Store, outbox: Outbox, hub: ChannelHub) -> None:
        self._store = store
        self._outbox = outbox
        self._hub = hub
        self._left: dict[str, list[OutboxRow]] = {}

    async def collect(self, chats: Collection[ChatRef] | None = None) -> list[str]:
        """Withdraw or reserve every pending placeholder (before the outbox worker runs), or
        those of ``chats`` (taken over from a replica that is gone, while the outbox keeps
        them back); returns the channels that have some to finish now."""
        rows = await self._store.outbox.listing(OutboxState.PENDING, limit=PENDING_SCAN)
        found: set[str] = set()
        for row in sorted(rows, key=lambda row: row.id):
            if not _is_placeholder(row):
                continue
            if chats is not None and _chat_of(row) not in chats:
                continue
            channel = row.item.delivery.destination.channel
            caps = self._hub.capabilities_of(channel)
            if caps is None or not caps.idempotent_sends:
                await self._store.outbox.mark_dead(row.id, WITHDRAWN)
                continue
            self._outbox.reserve(row)
            self._left.setdefault(channel, []).append(row)
            found.add(channel)
        for channel in sorted(found):
            logger.info(
                "recovery: %d placeholder(s) to finish on %s", len(self._left[channel]), channel
            )
        return sorted(found)

    def channels(self) -> list[str]:
        """The channels with placeholders to finish (one ``finish`` task each)."""
        return sorted(self._left)

    async def finish(self, channel: str) -> None:
        """Finish the channel's left placeholders in recording order, then return. Restartable:
        a row whose resend or edit was done already is not done again."""
        left = self._left.get(channel, [])
        while left:
            row = left[0]
            message_id = await self._resend(row)
            if message_id is not None:
                await self._outbox.submit([_interrupted_edit(row, message_id)])
            left.pop(0)
            self._outbox.release(row)

    async def _resend(self, row: OutboxRow) -> str | None:
        """The message the placeholder row stands for now, sending it again if needed; ``None``
        if it went dead (the attempt logged why)."""
        placeholder = row.item.delivery
        notice = OutboundText(
            destination=placeholder.destination,
            text=INTERRUPTED_PLACEHOLDER,
            kind=OutboundKind.NOTICE,
            reply_to=placeholder.reply_to if isinstance(placeholder, OutboundText) else None,
        )
        while True:
            current = await self._store.outbox.get(row.id)
            if current is None or current.state is OutboxState.DEAD:
                return None
            if current.state is OutboxState.SENT:
                return current.sent_message_ids[0] if current.sent_message_ids else None
            await until_running(self._hub, notice.destination.channel)
            outcome = await self._outbox.resend(current, notice)
            if outcome.sent is not None:
                logger.info(
                    "recovery: placeholder row %s sent again under its key: message %s",
                    row.id,
                    outcome.sent.message_ids,
                )
                return outcome.sent.message_ids[0] if outcome.sent.message_ids else None
            if outcome.finished or outcome.retry_at is None:
                return None
            await asyncio.sleep(max(0.0, (outcome.retry_at - utc_now()).total_seconds()))


async def until_running(hub: ChannelHub, name: str) -> None:
    """Return once the channel is running (at once if it is); waits on state changes, so a
    parked channel costs nothing while it waits."""
    if hub.state(name) is ChannelState.RUNNING:
        return
    running = asyncio.Event()

    def note(channel: str, _previous: ChannelState | None, state: ChannelState) -> None:
        if channel == name and state is ChannelState.RUNNING:
            running.set()

    hub.listeners.append(note)
    try:
        await running.wait()
    finally:
        hub.listeners.remove(note)


def _chat_of(row: OutboxRow) -> ChatRef:
    destination = row.item.delivery.destination
    return ChatRef(destination.channel, destination.account_id, destination.chat_id)


async def recover(  # noqa: PLR0913 - what a recovery touches
    store: Store,
    bus: InboundBus,
    notify: Notify,
    submit: Submit,
    entries: Sequence[JournalEntry] | None = None,
    *,
    warm: Callable[[], None] = lambda: None,
) -> int:
    """Requeue unfinished messages (the whole journal's, or ``entries``: those a replica took
    over from one that is gone); returns how many will run again. ``warm`` (the agent's) is
    called if any will, so their runs need not wait for the agent to load."""
    requeued = 0
    interrupted: set[str] = set()
    resumed: set[str] = set()
    journal = Journal(store.inbound)
    for entry in await store.inbound.unfinished() if entries is None else entries:
        mark = _turn_mark(entry)
        if await _answer_recorded(store, mark.turn):
            await journal.handled(entry, "answer recorded")
            continue
        started, turn = entry.status is InboundStatus.RUNNING, mark.turn
        if started and turn not in interrupted:
            interrupted.add(turn)
            await finish_placeholders(store, turn, submit)
        left = mark.after_crash()
        if left.interrupted >= MAX_INTERRUPTED_RUNS:
            await notify(entry, GAVE_UP_NOTICE, "recovery-gave-up")
            reason = f"failed after restart: its run was interrupted {left.interrupted} times"
            await journal.failed(entry, reason)
            continue
        if left != mark:  # this crash counted: remember it before the re-run
            await journal.running(entry, left.encode())
        if entry.reason == AWAITING_PICKUP:  # a CLI prompt: requeued here, not by ``pushes``
            await journal.noted(entry, PICKED_UP)
        if started and turn not in resumed:  # one notice per interrupted turn
            resumed.add(turn)
            await notify(entry, RESUMING_NOTICE, "recovery")
        bus.put_recovered(
            Accepted(
                entry_id=entry.id,
                message=entry.message,
                correlation_id=entry.correlation_id,
                recovered=started,
                interrupted=left.interrupted,
            )
        )
        requeued += 1
    if requeued:
        logger.info("recovery: %d unfinished message(s) requeued", requeued)
        warm()
    return requeued


def notice_sender(record: Record, sessions: Sessions, caps_of: CapabilitiesOf) -> Notify:
    """A ``Notify`` that posts through the outbox into the message's conversation."""

    async def notify(entry: JournalEntry, text: str, tag: str) -> None:
        caps = caps_of(entry.message.channel)
        if caps is None:
            return
        key = entry.key or sessions.scoped_key(entry.message)
        ctx = ReplyContext.answering(key, entry, thread_id=entry.thread_id, tag=tag)
        await ReplyWriter(ctx, caps, record).text(text)

    return notify
