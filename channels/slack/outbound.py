"""Sending to Slack: messages, edits, reactions, files and the "Chosen: X" mark (design §8).

Every call goes through ``sdk_errors`` so the kernel sees ``SendError`` kinds only. The client
has no retry handlers: the kernel's outbox retries by kind, so a lost response never turns
into a second copy of a message here.

Threads: a destination's ``topic_id`` is the ``thread_ts`` to post into — the user's message
for a new top-level mention, the thread for a reply — in channels and in DMs alike; a DM
conversation without a topic is answered at top level.

A message ``private_to`` someone in a channel goes out with ``chat.postEphemeral``: only they
see it, it carries no id the kernel could edit, and Slack drops it when their client reloads.
In a DM it is an ordinary message (the DM is private already, and it stays).

Reactions are stages of one message (👀 while working, then ✅ or ❌). The adapter remembers
the stage it put on each recent message and removes it when the next one arrives, so a
finished message shows only the outcome.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.bounded import RecentMap
from bot.delivery.files import read_outbound
from bot.errors import InvalidRequest, MessageGone, SendError
from bot.messages import (
    Button,
    ChatType,
    Destination,
    MessageRemoval,
    OutboundFile,
    OutboundText,
    Reaction,
    ReactionMark,
    RenderMode,
    SentRef,
    TextEdit,
)
from channels.slack.errors import error_code, sdk_errors
from channels.slack.inbound import ChoiceClick
from channels.slack.mrkdwn import escape
from channels.slack.render import Payload, Rung, chosen_blocks, render_async

logger = logging.getLogger(__name__)

REACTIONS = {
    Reaction.QUEUED: "hourglass_flowing_sand",
    Reaction.WORKING: "eyes",
    Reaction.DONE: "white_check_mark",
    Reaction.FAILED: "x",
}
IGNORED_REACTION_ERRORS = frozenset({"already_reacted", "no_reaction"})
RICH_RUNGS = (Rung.MARKDOWN, Rung.MRKDWN)
_SLACK_TS = re.compile(r"\d+\.\d+")
STAGES_KEPT = 4096
NOT_A_MEMBER = "user_not_in_channel"
"""``chat.postEphemeral``'s refusal for a user who is not in the channel."""

PayloadCall = Callable[[Payload], Awaitable[str]]
"""One platform call of a ladder: a payload in, the message ts out."""


class _NotAMember(Exception):
    """``chat.postEphemeral`` named a user who is not in the channel."""


def thread_of(destination: Destination) -> str | None:
    return destination.topic_id or None


def rungs_for(mode: RenderMode) -> tuple[Rung, ...]:
    return RICH_RUNGS if mode is RenderMode.RICH else (Rung.PLAIN,)


class Outbound:
    def __init__(self, web: AsyncWebClient) -> None:
        self._web = web
        self._stages: RecentMap[tuple[str, str], str] = RecentMap(STAGES_KEPT)

    async def send_text(self, message: OutboundText) -> SentRef:
        dest = message.destination
        if message.private_to and dest.chat_type is ChatType.GROUP and not message.buttons:
            shown = await self._send_ephemeral(message, message.private_to)
            if shown is not None:
                return shown
        thread = thread_of(dest)

        async def post(payload: Payload) -> str:
            with sdk_errors():
                response = await self._web.chat_postMessage(
                    channel=dest.chat_id,
                    text=payload.text,
                    blocks=list(payload.blocks) or None,
                    thread_ts=thread,
                    mrkdwn=payload.mrkdwn,
                )
            return str(response.get("ts") or "")

        ts = await self._ladder(message.text, message.render, message.buttons, post)
        return SentRef(message_ids=(ts,))

    async def _send_ephemeral(self, message: OutboundText, user: str) -> SentRef | None:
        """``chat.postEphemeral``: shown to ``user`` alone (until their client reloads). Slack
        cannot edit or delete it later, so the ref holds no message id. ``None`` when the user
        is not in the channel: the message is posted for everyone instead."""
        dest = message.destination

        async def post(payload: Payload) -> str:
            try:
                with sdk_errors():
                    response = await self._web.chat_postEphemeral(
                        channel=dest.chat_id,
                        user=user,
                        text=payload.text,
                        blocks=list(payload.blocks) or None,
                        thread_ts=thread_of(dest),
                    )
            except InvalidRequest as exc:
                cause = exc.__cause__
                if isinstance(cause, SlackApiError) and error_code(cause) == NOT_A_MEMBER:
                    raise _NotAMember from exc  # no other rendering would change that
                raise
            return str(response.get("message_ts") or "")

        try:
            await self._ladder(message.text, message.render, message.buttons, post)
        except _NotAMember:
            logger.info("slack: %r is not in %s; posting the private message", user, dest.chat_id)
            return None
        return SentRef(message_ids=())

    async def edit_text(self, edit: TextEdit) -> None:
        async def update(payload: Payload) -> str:
            with sdk_errors():
                await self._web.chat_update(
                    channel=edit.destination.chat_id,
                    ts=edit.message_id,
                    text=payload.text,
                    blocks=list(payload.blocks),  # [] removes blocks an earlier version had
                )
            return edit.message_id

        await self._ladder(edit.text, edit.render, edit.buttons, update)

    async def delete_message(self, removal: MessageRemoval) -> None:
        with sdk_errors():
            await self._web.chat_delete(channel=removal.destination.chat_id, ts=removal.message_id)

    async def _ladder(
        self, text: str, mode: RenderMode, buttons: tuple[Button, ...], call: PayloadCall
    ) -> str:
        """Try each rung of the mode; a rejected payload (not a vanished message) falls through."""
        rungs = rungs_for(mode)
        for rung in rungs[:-1]:
            try:
                return await call(await render_async(text, rung, buttons))
            except InvalidRequest as exc:
                if isinstance(exc, MessageGone):
                    raise
                logger.info("slack rejected the %s rendering (%s); trying a simpler one", rung, exc)
        return await call(await render_async(text, rungs[-1], buttons))

    async def react(self, mark: ReactionMark) -> None:
        """Reactions on a real message ``ts``; button and command ids are not messages."""
        if not _SLACK_TS.fullmatch(mark.message_id):
            return
        key = (mark.destination.chat_id, mark.message_id)
        name = REACTIONS[mark.reaction]
        await self._reaction("add", key, name)
        previous = self._stages.get(key)
        self._stages.keep(key, name)
        if previous is not None and previous != name:
            await self._reaction("remove", key, previous)

    async def _reaction(self, verb: str, key: tuple[str, str], name: str) -> None:
        method = self._web.reactions_add if verb == "add" else self._web.reactions_remove
        try:
            with sdk_errors():
                await method(channel=key[0], timestamp=key[1], name=name)
        except SendError as exc:
            cause = exc.__cause__
            if isinstance(cause, SlackApiError) and error_code(cause) in IGNORED_REACTION_ERRORS:
                return
            raise

    async def show_typing(self, destination: Destination) -> None:
        """Slack has no typing indicator for bots."""

    async def send_file(self, file: OutboundFile) -> SentRef:
        data = await read_outbound(file)
        dest = file.destination
        with sdk_errors():
            response = await self._web.files_upload_v2(
                channel=dest.chat_id,
                thread_ts=thread_of(dest),
                file=data,
                filename=file.name,
                title=file.name,
                initial_comment=file.caption or None,
            )
        files = response.get("files") or [{}]
        return SentRef(message_ids=(_share_ts(files[0], dest.chat_id) or str(files[0].get("id")),))

    async def mark_choice(self, click: ChoiceClick) -> None:
        """Replace the clicked buttons with "✅ Chosen: X" so the question shows its answer."""
        blocks = list(click.blocks) or [
            {"type": "section", "text": {"type": "mrkdwn", "text": click.text[:3000] or "…"}}
        ]
        with sdk_errors():
            await self._web.chat_update(
                channel=click.channel,
                ts=click.message_ts,
                text=click.text or escape(click.label),
                blocks=chosen_blocks(blocks, click.label),
            )


def _share_ts(file: dict[str, object], channel: str) -> str | None:
    """The ts of the message that shared the file, when Slack already reports it."""
    shares = file.get("shares")
    if not isinstance(shares, dict):
        return None
    for scope in ("public", "private"):
        found = shares.get(scope)
        entries = found.get(channel) if isinstance(found, dict) else None
        if isinstance(entries, list) and entries and isinstance(entries[0], dict):
            ts = entries[0].get("ts")
            return str(ts) if ts else None
    return None
