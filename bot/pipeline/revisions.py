"""Edits and recalls of chat messages change the work they started (design §21).

An adapter publishes "message X was edited to this text" or "message X was withdrawn" as an
``InboundMessage`` carrying a ``Revision``: it is journaled (under the event's own id, so the
dedupe never takes it for X) and routed to the replica holding the chat like any message.
The router hands it here, before access control — its author is X's, and X already passed
or failed there; a revision of a message the bot never took is ignored.

Where X is decides what happens:

- **queued**: an edit replaces its text in the queue; a recall drops it.
- **running**: the turn is cancelled; an edit runs it again with the new text, into the same
  placeholder (``revised_turns``); a recall ends it without a word and its placeholder
  goes. If the turn had merged X with other messages, they run again without X.
- **answered**: an edit follows ``conversations.on_edit_after_answer`` (``ignore``, or
  ``answer``: a new turn replying to the edited message, its answer labelled); a recall
  leaves the answer unless ``conversations.delete_answers_of_recalled``, which deletes what
  the bot sent in answer to X alone (an answer shared with other messages stays).

An edit that leaves the text as it was (a link preview, a reaction) changes nothing. An
edit of a queued or running X takes X's place: the lane's item becomes the edit's journal
entry with X's message id, text replaced, and correlation id; X's entry is finished as
superseded. A crash before that turn ends resumes the edit's entry, which finds X superseded
and runs as X would have — with the new text.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from typing_extensions import override

from bot.config.revisions import EditAfterAnswer
from bot.config.settings import Settings
from bot.delivery.outbox import Outbox
from bot.hub import ChannelHub
from bot.messages import (
    OutboundFile,
    OutboundText,
    Revision,
    RevisionKind,
)
from bot.pipeline.bus import Accepted
from bot.pipeline.group_context import GroupContext
from bot.pipeline.inbound_bounds import RefuseOversize
from bot.pipeline.journal import Journal
from bot.pipeline.lanes import Lanes, Revised, TurnRequest
from bot.pipeline.revised_turns import RECALLED_REASON, removal_item, remove_left_placeholder
from bot.pipeline.route import RouteStep, Routing
from bot.pipeline.sessions import Sessions, destination_for
from bot.ports import Store
from bot.records import ChatRef, InboundStatus, JournalEntry, OutboxItem, OutboxState

logger = logging.getLogger(__name__)

EDITED_LABEL = "✏️ _Answer to the edited message:_"
SUPERSEDED_REASON = "edited: superseded by its edit"
"""A message whose queued or running work an edit took over (the edit's entry carries it)."""
APPLIED_REASON = "edit applied: runs in place of its message"
ANSWERED_STATES = (InboundStatus.HANDLED, InboundStatus.FAILED)

# Outcomes (the ``outcome`` label of the inbound metric).
EDIT_APPLIED = "edit_applied"
EDIT_RESTARTED = "edit_restarted"
EDIT_ANSWERED = "edit_answered"
EDIT_IGNORED = "edit_ignored"
RECALLED = "withdrawn"
RECALL_IGNORED = "withdrawal_ignored"

Submit = Callable[[Accepted, TurnRequest], Awaitable[str]]
"""The router's way into a lane (busy policy, "queued" acknowledgement)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RevisionDeps:
    settings: Callable[[], Settings]
    store: Store
    lanes: Lanes
    outbox: Outbox
    hub: ChannelHub
    sessions: Sessions
    submit: Submit


class Revisions:
    def __init__(self, deps: RevisionDeps) -> None:
        self._deps = deps

    async def handle(self, item: Accepted) -> str:
        """Apply one revision; returns its outcome."""
        revision = item.message.revision
        assert revision is not None  # noqa: S101 - the router sends only revisions here
        if revision.kind is RevisionKind.EDITED:
            outcome = await self._edited(item, revision)
        else:
            outcome = await self._recalled(item, revision)
        logger.info(
            "%s of message %s correlation=%s outcome=%s",
            revision.kind,
            revision.message_id,
            item.correlation_id,
            outcome,
        )
        return outcome

    # ------------------------------------------------------------------ edits

    async def _edited(self, item: Accepted, revision: Revision) -> str:
        text = item.message.text

        def rewrite(request: TurnRequest, found: Accepted) -> TurnRequest | None:
            if found.message.text == text:
                return request
            # The edit's own entry takes the message's place (a crash resumes the new text);
            # the correlation id stays the turn's, so a restart finds its placeholder.
            message = dataclasses.replace(found.message, text=text)
            edited = dataclasses.replace(found, entry_id=item.entry_id, message=message)
            items = tuple(edited if each is found else each for each in request.items)
            return dataclasses.replace(request, items=items)

        entry = await self._entry(item, revision)
        if _answered(entry):
            return await self._edited_later(item, entry)
        where, found = self._deps.lanes.revise(
            ChatRef.of(item.message), revision.message_id, rewrite
        )
        if where is Revised.UNCHANGED:
            return await self._finish(item, "edit changed nothing", EDIT_IGNORED)
        if found is None:  # read again: its turn may have finished since
            return await self._edited_later(item, await self._entry(item, revision))
        journal = Journal(self._deps.store.inbound)
        await journal.handled(found.entry_id, SUPERSEDED_REASON)
        await journal.accepted(item.entry_id, APPLIED_REASON)
        return EDIT_APPLIED if where is Revised.QUEUED else EDIT_RESTARTED

    async def _edited_later(self, item: Accepted, entry: JournalEntry | None) -> str:
        """An edit of a message no longer in a lane: answered already, or never taken."""
        text = item.message.text
        if entry is None or entry.status not in ANSWERED_STATES:
            return await self._finish(item, "edit of a message not in hand", EDIT_IGNORED)
        if entry.reason == SUPERSEDED_REASON and await self._was_applied(item):
            # After a crash, an edit that had replaced its queued or running message is that
            # message now: it runs as the message would have, under its correlation id.
            await self._rerun(item, entry, correlation_id=entry.correlation_id)
            return EDIT_APPLIED
        if entry.reason == RECALLED_REASON or entry.message.text == text:
            return await self._finish(item, "edit changed nothing", EDIT_IGNORED)
        if self._deps.settings().conversations.on_edit_after_answer is EditAfterAnswer.IGNORE:
            return await self._finish(item, "edit after the answer ignored", EDIT_IGNORED)
        # A new turn for the edited text, replying to the edited message (its platform id)
        # and labelled; journaled under the edit's own entry, so a crash resumes it.
        await self._rerun(item, entry, label=EDITED_LABEL)
        return EDIT_ANSWERED

    async def _rerun(
        self,
        item: Accepted,
        entry: JournalEntry,
        *,
        correlation_id: str | None = None,
        label: str = "",
    ) -> None:
        """Submit the edited message (``entry``'s, with the edit's text) as a turn of its own."""
        message = dataclasses.replace(entry.message, text=item.message.text)
        again = dataclasses.replace(
            item, message=message, correlation_id=correlation_id or item.correlation_id
        )
        key = await self._deps.sessions.key_for(message)
        request = TurnRequest(
            key=key, destination=destination_for(message, key), items=(again,), label=label
        )
        await self._deps.submit(again, request)

    async def _was_applied(self, item: Accepted) -> bool:
        """Whether this edit had taken its message's place in a lane before a restart (its
        entry says so), rather than arriving after that message's answer."""
        message = item.message
        for entry in await self._deps.store.inbound.find(message.channel, message.message_id):
            if entry.id == item.entry_id:
                return entry.status is InboundStatus.RUNNING or entry.reason == APPLIED_REASON
        return False

    # ------------------------------------------------------------------ recalls

    async def _recalled(self, item: Accepted, revision: Revision) -> str:
        dropped_restart = False

        def rewrite(request: TurnRequest, found: Accepted) -> TurnRequest | None:
            nonlocal dropped_restart
            items = tuple(each for each in request.items if each is not found)
            dropped_restart = not items and request.restarted
            return dataclasses.replace(request, items=items) if items else None

        entry = await self._entry(item, revision)
        if not _answered(entry):
            where, found = self._deps.lanes.revise(
                ChatRef.of(item.message), revision.message_id, rewrite
            )
            if found is not None:
                await Journal(self._deps.store.inbound).handled(found.entry_id, RECALLED_REASON)
                if dropped_restart:  # its first run's placeholder; the turn agrees (same key)
                    store, submit = self._deps.store, self._deps.outbox.submit
                    await remove_left_placeholder(store, submit, found.correlation_id)
                detail = "queued message dropped" if where is Revised.QUEUED else "turn cancelled"
                return await self._finish(item, detail, RECALLED)
            entry = await self._entry(item, revision)  # read again: its turn may have finished
        if entry is None or entry.status not in ANSWERED_STATES:
            return await self._finish(item, "recall of a message not in hand", RECALL_IGNORED)
        if not self._deps.settings().conversations.delete_answers_of_recalled:
            return await self._finish(item, "withdrawn after its answer", RECALL_IGNORED)
        deleted = await self._delete_answers(entry)
        return await self._finish(item, f"withdrawn; {deleted} answer messages deleted", RECALLED)

    async def _delete_answers(self, entry: JournalEntry) -> int:
        """Delete every message the bot sent in answer to the entry (keyed by its correlation
        id: its answer, placeholder and notices; reactions need no deleting)."""
        channel = self._deps.hub.get(entry.message.channel)
        if channel is None or not channel.capabilities.deletes:
            return 0
        correlation = entry.correlation_id
        removals: list[OutboxItem] = []
        seen: set[str] = set()
        for row in await self._deps.store.outbox.for_correlation(correlation):
            delivery = row.item.delivery
            if row.state is not OutboxState.SENT:
                continue
            if not isinstance(delivery, OutboundText | OutboundFile):
                continue
            for message_id in row.sent_message_ids:
                if message_id not in seen:
                    seen.add(message_id)
                    key = f"{correlation}/recalled/{len(removals)}"
                    removals.append(removal_item(row, message_id, key))
        if removals:
            await self._deps.outbox.submit(removals)
        return len(removals)

    # ------------------------------------------------------------------ helpers

    async def _entry(self, item: Accepted, revision: Revision) -> JournalEntry | None:
        """The revised message's journal entry (its first, if the platform reused the id)."""
        message = item.message
        for entry in await self._deps.store.inbound.find(message.channel, revision.message_id):
            found = entry.message
            if found.account_id == message.account_id and found.chat_id == message.chat_id:
                return entry
        return None

    async def _finish(self, item: Accepted, reason: str, outcome: str) -> str:
        await Journal(self._deps.store.inbound).handled(item.entry_id, reason)
        return outcome


def _answered(entry: JournalEntry | None) -> bool:
    """Whether the message's answer is recorded: its turn may still be finishing (a
    reaction), but an edit or a recall now comes after the answer."""
    return (
        entry is not None and entry.status in ANSWERED_STATES and entry.reason != SUPERSEDED_REASON
    )


class RevisionStep(RouteStep):
    """The route's step for edits and recalls, before the command parse and access (their
    author's message already passed there): a long edit is dropped without a word, and
    group chatter kept as context is changed or forgotten too."""

    def __init__(self, revisions: Revisions, oversize: RefuseOversize, heard: GroupContext) -> None:
        self._revisions = revisions
        self._oversize = oversize
        self._heard = heard

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        if item.message.revision is None:
            return None
        if refused := await self._oversize.refuse(item, is_command=False):
            return refused
        self._heard.revise(item.message)
        return await self._revisions.handle(item)
