"""Slack events and interactive payloads → ``InboundMessage`` (design §3, §4, §14).

Only this module knows how Slack spells things:

- ``message_id`` is the message ``ts`` (unique per channel), so the ``message`` and
  ``app_mention`` events Slack sends for one mention in a channel become the same message and
  the kernel's durable dedupe keeps one of them;
- ``thread_ts`` (when it differs from ``ts``) is the thread the message was posted in; a reply
  in a thread under the bot's message sets ``reply_to_bot``; a DM stays one conversation
  unless the user replies in a thread, which the kernel keys by that thread;
- the bot's own messages, other bots' messages (unless ``InboundRules`` allows them) and the
  system subtypes produce nothing; ``message_changed`` and ``message_deleted`` of a person's
  message become revisions (design §21), unless the text stayed as it was (an unfurl);
- shared files become attachments whose ``ref`` is their ``url_private_download``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from bot.messages import (
    Attachment,
    AttachmentKind,
    ButtonPress,
    ChatType,
    InboundMessage,
    Revision,
    RevisionKind,
    Sender,
)
from channels.slack.markup import (
    UserNames,
    mentioned_users,
    mentions_user,
    strip_leading_mention,
    to_text,
)
from channels.slack.render import ACTION_PREFIX

Json = dict[str, Any]

PROCESSED_SUBTYPES = frozenset({"", "file_share", "thread_broadcast", "bot_message"})
EDITED, DELETED = "message_changed", "message_deleted"
REVISION_SUBTYPES = frozenset({EDITED, DELETED})
GROUP_CHANNEL_TYPES = frozenset({"channel", "group", "mpim"})


@dataclass(frozen=True, slots=True, kw_only=True)
class BotSelf:
    """Who the bot is, from ``auth.test``."""

    team_id: str
    team: str = ""
    user_id: str
    bot_id: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class InboundRules:
    """Adapter-level filters. Other bots' messages are dropped here by default; allowing
    them still leaves the final word to the kernel, which drops ``Sender.is_bot``."""

    ignore_other_bots: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ChoiceClick:
    """A click on one of our buttons: what the adapter needs to mark the choice."""

    channel: str
    message_ts: str
    label: str
    blocks: tuple[Json, ...]
    text: str


def chat_type_of(channel: str, channel_type: str | None = None) -> ChatType:
    if channel_type:
        return ChatType.GROUP if channel_type in GROUP_CHANNEL_TYPES else ChatType.DM
    return ChatType.DM if channel.startswith("D") else ChatType.GROUP


def event_time(value: object) -> datetime:
    try:
        return datetime.fromtimestamp(float(str(value)), UTC)
    except (TypeError, ValueError, OverflowError):
        return datetime.now(UTC)


class Translator:
    def __init__(
        self, me: BotSelf, names: UserNames, rules: InboundRules, channel_name: str = "slack"
    ) -> None:
        self._me = me
        self._names = names
        self._rules = rules
        self._channel = channel_name

    def is_ignored(self, event: Json) -> bool:
        """Edits, deletions, joins, our own and (by rule) other bots' messages."""
        subtype = str(event.get("subtype") or "")
        if subtype not in PROCESSED_SUBTYPES or event.get("hidden"):
            return True
        bot_id = event.get("bot_id")
        if event.get("user") == self._me.user_id or (bot_id and bot_id == self._me.bot_id):
            return True
        is_bot = bool(bot_id) or subtype == "bot_message"
        return is_bot and self._rules.ignore_other_bots

    async def message(self, event: Json, *, via_mention: bool) -> InboundMessage | None:
        """A ``message`` or ``app_mention`` event, or ``None`` when it is not for the kernel."""
        channel, ts = str(event.get("channel") or ""), str(event.get("ts") or "")
        if not channel or not ts or self.is_ignored(event):
            return None
        raw = str(event.get("text") or "")
        attachments = attachments_of(event.get("files"))
        if not raw.strip() and not attachments:
            return None
        me = self._me
        stripped = strip_leading_mention(raw, me.user_id)
        user = str(event.get("user") or event.get("bot_id") or "")
        names = await self._names.resolve({user, *mentioned_users(stripped)} - {me.user_id})
        thread_ts = str(event.get("thread_ts") or "")
        root = thread_ts if thread_ts and thread_ts != ts else None
        return InboundMessage(
            channel=self._channel,
            account_id=me.team_id,
            chat_id=channel,
            chat_type=chat_type_of(channel, event.get("channel_type")),
            message_id=ts,
            sender=Sender(
                id=user,
                display_name=names.get(user) or str(event.get("username") or user),
                is_bot=bool(event.get("bot_id")) or event.get("subtype") == "bot_message",
            ),
            text=to_text(stripped, {**names, me.user_id: me.name or "bot"}),
            attachments=attachments,
            thread_root_id=root,
            reply_to_bot=root is not None and event.get("parent_user_id") == me.user_id,
            mentions_bot=via_mention or mentions_user(raw, me.user_id),
            received_at=event_time(event.get("event_ts") or ts),
        )

    async def revision(self, event: Json) -> InboundMessage | None:
        """A ``message_changed`` or ``message_deleted`` event of a person's message (design
        §21); its ``message_id`` is unique per event, its ``revision`` names the message."""
        channel = str(event.get("channel") or "")
        current: Json = event.get("message") or {}
        previous: Json = event.get("previous_message") or {}
        if not channel:
            return None
        if event.get("subtype") == DELETED:
            target = str(event.get("deleted_ts") or previous.get("ts") or "")
            if not target or self.is_ignored({**previous, "subtype": None}):
                return None
            return InboundMessage(
                channel=self._channel,
                account_id=self._me.team_id,
                chat_id=channel,
                chat_type=chat_type_of(channel, event.get("channel_type")),
                message_id=f"{target}/deleted",
                sender=Sender(id=str(previous.get("user") or "")),
                revision=Revision(kind=RevisionKind.RECALLED, message_id=target),
                received_at=event_time(event.get("event_ts") or event.get("ts")),
            )
        if current.get("text") == previous.get("text"):
            return None  # an unfurl, a reaction, a file shown: nothing the agent reads changed
        inner = {**current, "channel": channel, "channel_type": event.get("channel_type")}
        edited = await self.message({**inner, "subtype": None}, via_mention=False)
        if edited is None:
            return None
        stamp = str((current.get("edited") or {}).get("ts") or event.get("ts") or "")
        return replace(
            edited,
            message_id=f"{edited.message_id}/edited/{stamp}",
            revision=Revision(kind=RevisionKind.EDITED, message_id=edited.message_id),
            received_at=event_time(event.get("event_ts") or stamp),
        )

    async def button(self, body: Json) -> tuple[InboundMessage, ChoiceClick] | None:
        """A ``block_actions`` payload from one of our buttons."""
        action = next(
            (a for a in body.get("actions") or () if _ours(a)),
            None,
        )
        container: Json = body.get("container") or {}
        message: Json = body.get("message") or {}
        channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
        message_ts = str(container.get("message_ts") or message.get("ts") or "")
        if action is None or not channel or not message_ts:
            return None
        user: Json = body.get("user") or {}
        user_id = str(user.get("id") or "")
        names = await self._names.resolve([user_id])
        label = str((action.get("text") or {}).get("text") or action.get("value") or "")
        chat_type = chat_type_of(channel)
        thread_ts = str(container.get("thread_ts") or message.get("thread_ts") or "")
        root = thread_ts if thread_ts and thread_ts != message_ts else None
        if chat_type is ChatType.GROUP and root is None:
            root = message_ts  # a notice about this button belongs under the question
        inbound = InboundMessage(
            channel=self._channel,
            account_id=self._me.team_id,
            chat_id=channel,
            chat_type=chat_type,
            message_id=f"{message_ts}/{action.get('action_ts') or action.get('action_id')}",
            sender=Sender(
                id=user_id,
                display_name=names.get(user_id) or str(user.get("name") or user_id),
            ),
            text=label,
            thread_root_id=root,
            button=ButtonPress(payload=str(action.get("value") or ""), message_id=message_ts),
            received_at=event_time(action.get("action_ts")),
        )
        click = ChoiceClick(
            channel=channel,
            message_ts=message_ts,
            label=label,
            blocks=tuple(message.get("blocks") or ()),
            text=str(message.get("text") or ""),
        )
        return inbound, click

    async def command(self, body: Json) -> InboundMessage | None:
        """A slash command (``/new``) typed to the bot; the kernel parses it as a command."""
        channel = str(body.get("channel_id") or "")
        trigger = str(body.get("trigger_id") or "")
        user_id = str(body.get("user_id") or "")
        if not channel or not trigger or not user_id:
            return None
        names = await self._names.resolve([user_id])
        is_dm = body.get("channel_name") == "directmessage" or channel.startswith("D")
        text = f"{body.get('command') or ''} {body.get('text') or ''}".strip()
        return InboundMessage(
            channel=self._channel,
            account_id=self._me.team_id,
            chat_id=channel,
            chat_type=ChatType.DM if is_dm else ChatType.GROUP,
            message_id=f"command/{trigger}",
            sender=Sender(
                id=user_id, display_name=names.get(user_id) or str(body.get("user_name") or "")
            ),
            text=to_text(text, names),
            mentions_bot=True,
        )


def _ours(action: Json) -> bool:
    return str(action.get("action_id") or "").startswith(ACTION_PREFIX)


def attachments_of(files: object) -> tuple[Attachment, ...]:
    """Shared files that can be downloaded (tombstoned or hidden files have no URL)."""
    if not isinstance(files, list):
        return ()
    found = []
    for item in files:
        if not isinstance(item, dict):
            continue
        url = item.get("url_private_download") or item.get("url_private")
        if not url:
            continue
        mime = str(item.get("mimetype") or "application/octet-stream")
        size = item.get("size")
        found.append(
            Attachment(
                kind=_kind(mime),
                name=str(item.get("name") or item.get("title") or item.get("id") or "file"),
                mime=mime,
                size=size if isinstance(size, int) else None,
                ref=str(url),
            )
        )
    return tuple(found)


def _kind(mime: str) -> AttachmentKind:
    major = mime.split("/", 1)[0]
    kinds = {
        "image": AttachmentKind.IMAGE,
        "audio": AttachmentKind.AUDIO,
        "video": AttachmentKind.VIDEO,
    }
    return kinds.get(major, AttachmentKind.FILE)
