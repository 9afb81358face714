"""Sending to Telegram: text, edits, files, reactions, typing, and attachment downloads.

Every call goes through ``sdk_errors`` so the kernel only ever sees ``SendError`` kinds.
Replies are anchored with ``allow_sending_without_reply`` (a deleted anchor must not lose
the answer); a conversation in a forum topic is sent with its ``message_thread_id``.

Reactions: only ``Reaction.QUEUED`` is shown (👀 on a message that waits behind a running
turn, design §5). ``WORKING``/``DONE``/``FAILED`` are no-ops on Telegram: the typing indicator
and the streamed placeholder already show work, the answer shows completion, and a failure
is an explicit message — each extra reaction would only spend the chat's rate budget.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from telegram import (
    Bot,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    ReactionTypeEmoji,
    ReplyParameters,
)
from telegram.constants import ChatAction

from bot.delivery.files import read_outbound
from bot.errors import DownloadError, InvalidRequest, SendError
from bot.messages import (
    Attachment,
    Button,
    Destination,
    OutboundFile,
    OutboundText,
    Reaction,
    ReactionMark,
    SentRef,
    TextEdit,
)
from channels.telegram.errors import NotModified, sdk_errors
from channels.telegram.inbound import forum_thread_of
from channels.telegram.render import Rendered, render_async

logger = logging.getLogger(__name__)

MB = 1024 * 1024
PHOTO_LIMIT = 10 * MB
DOCUMENT_LIMIT = 50 * MB
DOWNLOAD_LIMIT = 20 * MB  # getFile refuses bigger files on the public Bot API
CAPTION_LIMIT = 1024
REACTIONS = {Reaction.QUEUED: "👀"}
UPLOAD_TIMEOUT_S = 120.0
DOWNLOAD_TIMEOUT_S = 60.0


class Outbound:
    def __init__(self, bot: Bot, *, secret: str) -> None:
        self._bot = bot
        self._secret = secret

    # ------------------------------------------------------------------ text

    async def send_text(self, message: OutboundText) -> SentRef:
        dest = message.destination
        body = await render_async(message.text, message.render)
        sent = await self._send_body(
            dest, body, reply_to=message.reply_to, markup=_keyboard(message.buttons)
        )
        return SentRef(message_ids=(str(sent.message_id),))

    async def _send_body(
        self,
        dest: Destination,
        body: Rendered,
        *,
        reply_to: str | None,
        markup: InlineKeyboardMarkup | None,
    ) -> Message:
        with sdk_errors(self._secret):
            return await self._bot.send_message(
                chat_id=_chat_id(dest),
                text=body.text,
                entities=body.entities or None,
                message_thread_id=forum_thread_of(dest.topic_id),
                reply_parameters=_reply(reply_to),
                reply_markup=markup,
            )

    async def edit_text(self, edit: TextEdit) -> None:
        body = await render_async(edit.text, edit.render)
        try:
            with sdk_errors(self._secret):
                await self._bot.edit_message_text(
                    chat_id=_chat_id(edit.destination),
                    message_id=_message_id(edit.message_id),
                    text=body.text,
                    entities=body.entities or None,
                    reply_markup=_keyboard(edit.buttons),
                )
        except NotModified:
            return

    # ------------------------------------------------------------------ files

    async def send_file(self, file: OutboundFile) -> SentRef:
        dest = file.destination
        chat_id = _chat_id(dest)
        data = await read_outbound(file)
        sent: Message | None = None
        if file.is_image and len(data) <= PHOTO_LIMIT:
            sent = await self._photo(file, data)
        if sent is None:
            if len(data) > DOCUMENT_LIMIT:
                raise InvalidRequest(f"{file.name} is larger than Telegram's 50 MB limit")
            with sdk_errors(self._secret):
                sent = await self._bot.send_document(
                    chat_id=chat_id,
                    document=data,
                    filename=file.name,
                    caption=file.caption[:CAPTION_LIMIT] or None,
                    message_thread_id=forum_thread_of(dest.topic_id),
                    reply_parameters=_reply(file.reply_to),
                    write_timeout=UPLOAD_TIMEOUT_S,
                    read_timeout=UPLOAD_TIMEOUT_S,
                )
        return SentRef(message_ids=(str(sent.message_id),))

    async def _photo(self, file: OutboundFile, data: bytes) -> Message | None:
        """Send as a photo; ``None`` when Telegram refuses it as one (it goes as a document)."""
        dest = file.destination
        try:
            with sdk_errors(self._secret):
                return await self._bot.send_photo(
                    chat_id=_chat_id(dest),
                    photo=data,
                    filename=file.name,
                    caption=file.caption[:CAPTION_LIMIT] or None,
                    message_thread_id=forum_thread_of(dest.topic_id),
                    reply_parameters=_reply(file.reply_to),
                    write_timeout=UPLOAD_TIMEOUT_S,
                    read_timeout=UPLOAD_TIMEOUT_S,
                )
        except InvalidRequest as exc:
            logger.info("photo %s refused (%s); sending it as a document", file.name, exc)
            return None

    # ------------------------------------------------------------------ acknowledgements

    async def react(self, mark: ReactionMark) -> None:
        emoji = REACTIONS.get(mark.reaction)
        if emoji is None or not mark.message_id.isdigit():
            return  # a no-op reaction, or a button press (no message to react to)
        with sdk_errors(self._secret):
            await self._bot.set_message_reaction(
                chat_id=_chat_id(mark.destination),
                message_id=int(mark.message_id),
                reaction=[ReactionTypeEmoji(emoji)],
            )

    async def show_typing(self, destination: Destination) -> None:
        with sdk_errors(self._secret):
            await self._bot.send_chat_action(
                chat_id=_chat_id(destination),
                action=ChatAction.TYPING,
                message_thread_id=forum_thread_of(destination.topic_id),
            )

    # ------------------------------------------------------------------ downloads

    async def download(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        """getFile, then GET the file URL. The URL holds the token: it is never logged."""
        cap = min(max_bytes, DOWNLOAD_LIMIT)
        if attachment.size is not None and attachment.size > cap:
            raise DownloadError(f"{attachment.name} is {attachment.size} bytes; the cap is {cap}")
        try:
            with sdk_errors(self._secret):
                found = await self._bot.get_file(attachment.ref)
            if found.file_size is not None and found.file_size > cap:
                raise DownloadError(f"{attachment.name} is larger than {cap} bytes")
            if not str(found.file_path or "").startswith(("https://", "http://")):
                raise DownloadError(f"Telegram gave no downloadable path for {attachment.name}")
            with sdk_errors(self._secret):
                data = await found.download_as_bytearray(read_timeout=DOWNLOAD_TIMEOUT_S)
        except SendError as exc:
            raise DownloadError(f"{attachment.name} could not be fetched: {exc}") from None
        if len(data) > cap:
            raise DownloadError(f"{attachment.name} is larger than {cap} bytes")
        return bytes(data)


def _chat_id(destination: Destination) -> int:
    return _message_id(destination.chat_id)


def _message_id(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InvalidRequest(f"{value!r} is not a Telegram id") from None


def _reply(reply_to: str | None) -> ReplyParameters | None:
    """Reply anchor; button presses (``cb:…`` ids) have no message to reply to."""
    if reply_to is None or not reply_to.lstrip("-").isdigit():
        return None
    return ReplyParameters(message_id=int(reply_to), allow_sending_without_reply=True)


def _keyboard(buttons: Sequence[Button]) -> InlineKeyboardMarkup | None:
    """One option per row: clarification options are often longer than a button's width."""
    if not buttons:
        return None
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(b.label, callback_data=b.payload)] for b in buttons]
    )
