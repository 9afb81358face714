"""Telegram updates → ``InboundMessage`` (design §3, §14).

Only the adapter knows how Telegram spells things, so this is where a mention of the bot is
detected and removed, a forum topic becomes the message's thread, a reply to the bot is
noticed, and photos, documents, voice, audio and video become attachments whose ``ref`` is
the Telegram ``file_id``.

Forum topics and reply anchors share ``Destination.topic_id`` in the kernel. A forum topic is
encoded as ``topic:<message_thread_id>`` so the outbound side can tell, without remembering
anything across restarts, whether a conversation lives in a forum topic (send with
``message_thread_id``) or is anchored at a plain message id (reply to it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from telegram import CallbackQuery, Chat, Message, MessageEntity, Update, User

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

TOPIC_PREFIX = "topic:"
EDIT_MARK = "/edited/"
_CALLBACK_PREFIX = "cb:"
_MENTION_TRAILERS = " \t\n,:"
_CHAT_TYPES = {
    Chat.PRIVATE: ChatType.DM,
    Chat.GROUP: ChatType.GROUP,
    Chat.SUPERGROUP: ChatType.GROUP,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class BotMe:
    """Who the bot is, from ``getMe``."""

    channel: str
    user_id: int
    username: str

    @property
    def account_id(self) -> str:
        return str(self.user_id)


def topic_id_for(message_thread_id: int) -> str:
    return f"{TOPIC_PREFIX}{message_thread_id}"


def forum_thread_of(topic_id: str | None) -> int | None:
    """The ``message_thread_id`` a destination's topic stands for, if it is a forum topic."""
    if topic_id is None or not topic_id.startswith(TOPIC_PREFIX):
        return None
    number = topic_id.removeprefix(TOPIC_PREFIX)
    return int(number) if number.lstrip("-").isdigit() else None


def to_inbound(update: Update, me: BotMe) -> InboundMessage | None:
    """The message an update carries, or ``None`` for updates the bot does not act on."""
    if update.callback_query is not None:
        return _from_callback(update.callback_query, me)
    if update.edited_message is not None:
        return _from_edit(update.edited_message, update.update_id, me)
    message = update.message
    if message is None:
        return None  # channel posts, member updates: nothing to answer
    return _from_message(message, me)


def _from_edit(message: Message, update_id: int, me: BotMe) -> InboundMessage | None:
    """An ``edited_message``: the new text of ``message_id`` (design §21). Its own id is
    unique per edit (the update's id: ``edit_date`` counts whole seconds, and a redelivery
    keeps the update id), so the journal keeps each edit once. Telegram tells a bot nothing
    about deleted messages, so there is no withdrawal here."""
    edited = _from_message(message, me)
    if edited is None:
        return None
    return replace(
        edited,
        message_id=f"{message.message_id}{EDIT_MARK}{update_id}",
        revision=Revision(kind=RevisionKind.EDITED, message_id=edited.message_id),
    )


def _from_message(message: Message, me: BotMe) -> InboundMessage | None:
    chat_type = _CHAT_TYPES.get(message.chat.type)
    if chat_type is None:
        return None
    text, entities = _text_and_entities(message)
    attachments = _attachments(message)
    if not text.strip() and not attachments:
        return None  # service messages (members joined, topic created, pinned...)
    stripped, mentioned = _strip_leading_mentions(text, entities, me)
    mentioned = mentioned or _mentions(text, entities, me)
    replied = _replied_message(message)
    return InboundMessage(
        channel=me.channel,
        account_id=me.account_id,
        chat_id=str(message.chat.id),
        chat_type=chat_type,
        message_id=str(message.message_id),
        sender=_sender(message),
        text=stripped,
        attachments=attachments,
        reply_to_message_id=str(replied.message_id) if replied is not None else None,
        reply_to_bot=replied is not None and _is_me(replied.from_user, me),
        thread_root_id=_thread_of(message),
        mentions_bot=mentioned,
    )


def _from_callback(query: CallbackQuery, me: BotMe) -> InboundMessage | None:
    """A button press; ``message_id`` is unique per press so dedupe sees each one once."""
    message = query.message
    if message is None or query.data is None:
        return None
    chat_type = _CHAT_TYPES.get(message.chat.type)
    if chat_type is None:
        return None
    user = query.from_user
    thread = _thread_of(message) if isinstance(message, Message) else None
    return InboundMessage(
        channel=me.channel,
        account_id=me.account_id,
        chat_id=str(message.chat.id),
        chat_type=chat_type,
        message_id=f"{_CALLBACK_PREFIX}{query.id}",
        sender=Sender(id=str(user.id), display_name=user.full_name, is_bot=user.is_bot),
        thread_root_id=thread,
        button=ButtonPress(payload=query.data, message_id=str(message.message_id)),
    )


def _thread_of(message: Message) -> str | None:
    if message.is_topic_message and message.message_thread_id is not None:
        return topic_id_for(message.message_thread_id)
    return None


def _replied_message(message: Message) -> Message | None:
    """The message this one replies to; a topic's implicit reply to its creation is none."""
    replied = message.reply_to_message
    if replied is None:
        return None
    if message.is_topic_message and replied.message_id == message.message_thread_id:
        return None
    return replied


def _sender(message: Message) -> Sender:
    user = message.from_user
    if user is not None:
        return Sender(id=str(user.id), display_name=user.full_name, is_bot=user.is_bot)
    chat = message.sender_chat or message.chat  # anonymous admins post as the chat
    return Sender(id=str(chat.id), display_name=chat.title or chat.full_name or "")


def _is_me(user: User | None, me: BotMe) -> bool:
    return user is not None and user.id == me.user_id


# --------------------------------------------------------------------------- mentions


def _text_and_entities(message: Message) -> tuple[str, tuple[MessageEntity, ...]]:
    if message.text is not None:
        return message.text, tuple(message.entities)
    return message.caption or "", tuple(message.caption_entities)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


def _entity_text(encoded: bytes, entity: MessageEntity) -> str:
    start = entity.offset * 2
    return encoded[start : start + entity.length * 2].decode("utf-16-le", "surrogatepass")


def _is_bot_mention(encoded: bytes, entity: MessageEntity, me: BotMe) -> bool:
    if entity.type == MessageEntity.TEXT_MENTION:
        return _is_me(entity.user, me)
    if entity.type == MessageEntity.MENTION:
        return _entity_text(encoded, entity).lower() == f"@{me.username}".lower()
    return False


def _mentions(text: str, entities: tuple[MessageEntity, ...], me: BotMe) -> bool:
    encoded = _utf16(text)
    return any(_is_bot_mention(encoded, entity, me) for entity in entities)


def _strip_leading_mentions(
    text: str, entities: tuple[MessageEntity, ...], me: BotMe
) -> tuple[str, bool]:
    """Remove mentions of the bot that open the message (``@bot, what is…`` → ``what is…``)."""
    encoded = _utf16(text)
    cut = 0  # in UTF-16 code units
    found = False
    for entity in sorted(entities, key=lambda e: e.offset):
        gap = encoded[cut * 2 : entity.offset * 2].decode("utf-16-le", "surrogatepass")
        if gap.strip(_MENTION_TRAILERS) or not _is_bot_mention(encoded, entity, me):
            break
        cut = entity.offset + entity.length
        found = True
    if not found:
        return text, False
    rest = encoded[cut * 2 :].decode("utf-16-le", "surrogatepass")
    return rest.lstrip(_MENTION_TRAILERS), True


# --------------------------------------------------------------------------- attachments


def _attachments(message: Message) -> tuple[Attachment, ...]:
    found: list[Attachment] = []
    if message.photo:
        largest = max(message.photo, key=lambda p: (p.width * p.height, p.file_size or 0))
        found.append(
            Attachment(
                kind=AttachmentKind.IMAGE,
                name=f"photo_{largest.file_unique_id}.jpg",
                mime="image/jpeg",
                size=largest.file_size,
                ref=largest.file_id,
            )
        )
    if message.document is not None:
        doc = message.document
        mime = doc.mime_type or "application/octet-stream"
        kind = AttachmentKind.IMAGE if mime.startswith("image/") else AttachmentKind.FILE
        name = doc.file_name or f"document_{doc.file_unique_id}"
        found.append(
            Attachment(kind=kind, name=name, mime=mime, size=doc.file_size, ref=doc.file_id)
        )
    found.extend(_media(message))
    return tuple(found)


def _media(message: Message) -> list[Attachment]:
    """Voice, audio, video and round video notes."""
    found: list[Attachment] = []
    if message.voice is not None:
        voice = message.voice
        found.append(
            Attachment(
                kind=AttachmentKind.AUDIO,
                name=f"voice_{voice.file_unique_id}.ogg",
                mime=voice.mime_type or "audio/ogg",
                size=voice.file_size,
                ref=voice.file_id,
            )
        )
    if message.audio is not None:
        audio = message.audio
        found.append(
            Attachment(
                kind=AttachmentKind.AUDIO,
                name=audio.file_name or f"audio_{audio.file_unique_id}.mp3",
                mime=audio.mime_type or "audio/mpeg",
                size=audio.file_size,
                ref=audio.file_id,
            )
        )
    video = message.video or message.video_note
    if video is not None:
        name = getattr(video, "file_name", None) or f"video_{video.file_unique_id}.mp4"
        mime = getattr(video, "mime_type", None) or "video/mp4"
        found.append(
            Attachment(
                kind=AttachmentKind.VIDEO,
                name=name,
                mime=mime,
                size=video.file_size,
                ref=video.file_id,
            )
        )
    return found
