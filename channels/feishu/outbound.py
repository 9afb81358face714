"""Sending to Feishu: messages, edits, streaming cards, files, reactions, chosen answers (§8).

Every call goes through ``FeishuApi``, so the kernel sees ``SendError`` kinds only; nothing
here retries on its own (the kernel's outbox does, by kind), so a lost answer never becomes a
second copy of a message.

Where a message goes: a reply to the triggering message (``messages/:id/reply``) when there is
one, else a reply to the conversation's topic root (so notices and files stay in the topic or
reply chain), else a new message in the chat. ``reply_in_thread`` is set for topics the
adapter saw arrive as threads; Feishu keeps a reply to a message inside a thread in that
thread anyway. A reply whose target was recalled goes to the chat instead.

Every send carries Feishu's ``uuid``, a digest of the kernel's ``dedupe_key`` (the outbox
row's key): Feishu answers a repeated uuid with the message it made for the first one (within
an hour), so a send retried after a crash, or resent by recovery, never posts twice. A file's
caption gets its own uuid; without a key no uuid is sent. A streaming placeholder creates its
CardKit card before the message, so a repeat would answer with the old message while the new
card streams unseen: the kernel never repeats a progress send, and recovery resends a
placeholder as a notice (a static card), never as progress (design §11).

A message ``private_to`` a member of a group is a card only they see (``ephemeral/v1/send``;
Feishu shows it to members who are online, and not in topic groups, where the message is
posted instead); in a p2p chat it is an ordinary message. The toast a card callback may return
is no way to say it: the callback is answered once the press is journaled, before the kernel
has decided anything.

Reactions are stages of one message (⏳ queued, typing while working, then done or failed);
the adapter remembers the reaction it put on each recent message and removes it when the next
stage arrives, so a finished message shows only the outcome.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import PurePath

from bot.delivery.bounded import RecentMap, RecentSet
from bot.delivery.files import read_outbound
from bot.errors import InvalidRequest, MessageGone, SendError, TransientSendError
from bot.messages import (
    Button,
    ChatType,
    Destination,
    MessageRemoval,
    OutboundFile,
    OutboundKind,
    OutboundText,
    Reaction,
    ReactionMark,
    RenderMode,
    SentRef,
    TextEdit,
)
from channels.feishu.api import FeishuApi, dumps
from channels.feishu.inbound import CardPress
from channels.feishu.render import (
    ButtonScope,
    Content,
    Rung,
    button_elements,
    chosen_card,
    markdown_element,
    plain_element,
    render,
    sized,
    static_card,
)
from channels.feishu.streaming import StreamingCards

logger = logging.getLogger(__name__)

MESSAGES = "/open-apis/im/v1/messages"
EPHEMERAL = "/open-apis/ephemeral/v1/send"
REACTIONS = {
    Reaction.QUEUED: "OneSecond",
    Reaction.WORKING: "Typing",
    Reaction.DONE: "DONE",
    Reaction.FAILED: "CrossMark",
}
FILE_TYPES = {
    ".opus": "opus",
    ".mp4": "mp4",
    ".pdf": "pdf",
    ".doc": "doc",
    ".docx": "doc",
    ".xls": "xls",
    ".xlsx": "xls",
    ".ppt": "ppt",
    ".pptx": "ppt",
}
KEPT = 4096
UUID_CHARS = 32
RICH_RUNGS = (Rung.CARD, Rung.POST)

ContentCall = Callable[[Content], Awaitable[str]]


def message_uuid(dedupe_key: str, part: str = "") -> str | None:
    """Feishu's ``uuid`` for a send: a stable digest of the kernel's key (Feishu allows 50
    characters; keys can be longer), one per ``part`` of a send that posts several messages;
    ``None`` without a key."""
    if not dedupe_key:
        return None
    seed = f"{dedupe_key}\n{part}" if part else dedupe_key
    return hashlib.sha256(seed.encode()).hexdigest()[:UUID_CHARS]


def file_type_for(name: str) -> str:
    return FILE_TYPES.get(PurePath(name).suffix.lower(), "stream")


def is_message_id(value: str | None) -> bool:
    """A platform message id; the ids of button presses (``card/…``) are not messages."""
    return bool(value) and "/" not in (value or "")


def scope_of(destination: Destination) -> ButtonScope:
    return ButtonScope(chat_type=str(destination.chat_type), topic_id=destination.topic_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """A message with buttons, remembered so a press can redraw it with the choice."""

    text: str
    buttons: tuple[Button, ...]
    scope: ButtonScope


QUESTION_WAIT_S = 2.0
"""How long a press waits for its question card to be recorded (see ``_question``)."""


class Outbound:
    def __init__(self, api: FeishuApi) -> None:
        self._api = api
        self._streams = StreamingCards(api)
        self._threads: RecentSet[str] = RecentSet(KEPT)
        self._questions: RecentMap[str, Question] = RecentMap(KEPT)
        self._question_added = asyncio.Event()
        self._stages: RecentMap[str, tuple[str, str]] = RecentMap(KEPT)

    def note_thread(self, root_id: str) -> None:
        """A topic that arrived as a Feishu thread: replies into it use ``reply_in_thread``."""
        self._threads.add(root_id)

    # ------------------------------------------------------------------ text

    async def send_text(self, message: OutboundText) -> SentRef:
        dest = message.destination
        if message.private_to and dest.chat_type is ChatType.GROUP and not message.buttons:
            shown = await self._send_ephemeral(message, message.private_to)
            if shown is not None:
                return shown
        uuid = message_uuid(message.dedupe_key)
        if message.kind is OutboundKind.PROGRESS and not message.buttons:
            return SentRef(message_ids=(await self._start_stream(message, uuid),))

        async def post(content: Content) -> str:
            return await self._send(dest, message.reply_to, content, uuid)

        scope = scope_of(dest)
        message_id = await self._ladder(message.text, message.render, message.buttons, scope, post)
        if message.buttons:
            question = Question(text=message.text, buttons=message.buttons, scope=scope)
            self._remember_question(message_id, question)
        return SentRef(message_ids=(message_id,))

    async def _send_ephemeral(self, message: OutboundText, open_id: str) -> SentRef | None:
        """``ephemeral/v1/send``: a card in the group that only ``open_id`` sees ("only visible
        to you"). No message the bot could patch or recall comes of it, so the ref holds no
        id. ``None`` when Feishu refuses it (a topic group, a card it will not take): the
        message is posted for everyone instead."""
        text = message.text
        body = markdown_element(text) if message.render is RenderMode.RICH else plain_element(text)
        card = static_card([body])
        try:
            sized(Content(msg_type="interactive", content=dumps(card)))
            await self._api.call(
                "POST",
                EPHEMERAL,
                body={
                    "chat_id": message.destination.chat_id,
                    "open_id": open_id,
                    "msg_type": "interactive",
                    "card": card,
                },
            )
        except InvalidRequest as exc:
            logger.info("feishu refused a card for one member (%s); posting it instead", exc)
            return None
        return SentRef(message_ids=())

    async def _start_stream(self, message: OutboundText, uuid: str | None) -> str:
        try:
            card_id, content = await self._streams.create(message.text)
        except InvalidRequest as exc:
            logger.info("feishu refused a streaming card (%s); sending a static one", exc)
            content = render(message.text, Rung.CARD)
            return await self._send(message.destination, message.reply_to, content, uuid)
        message_id = await self._send(message.destination, message.reply_to, content, uuid)
        self._streams.remember(message_id, card_id)
        return message_id

    async def _ladder(
        self,
        text: str,
        mode: RenderMode,
        buttons: tuple[Button, ...],
        scope: ButtonScope,
        call: ContentCall,
    ) -> str:
        """Try each rung of the mode; a rejected payload (not a vanished message) falls through."""
        rungs = RICH_RUNGS if mode is RenderMode.RICH else (Rung.TEXT,)
        for rung in rungs[:-1]:
            try:
                return await call(render(text, rung, buttons, scope))
            except InvalidRequest as exc:
                if isinstance(exc, MessageGone):
                    raise
                logger.info(
                    "feishu rejected the %s rendering (%s); trying a simpler one", rung, exc
                )
        return await call(render(text, rungs[-1], buttons, scope))

    async def _send(
        self, dest: Destination, reply_to: str | None, content: Content, uuid: str | None
    ) -> str:
        target = reply_to if is_message_id(reply_to) else dest.topic_id
        body: dict[str, object] = {"msg_type": content.msg_type, "content": content.content}
        if uuid is not None:
            body["uuid"] = uuid
        if target:
            threaded = target in self._threads or (dest.topic_id or "") in self._threads
            try:
                data = await self._api.call(
                    "POST", f"{MESSAGES}/{target}/reply", body={**body, "reply_in_thread": threaded}
                )
                return str(data.get("message_id") or "")
            except MessageGone:
                logger.info("feishu: reply target %s is gone; sending to the chat", target)
        data = await self._api.call(
            "POST",
            MESSAGES,
            params={"receive_id_type": "chat_id"},
            body={**body, "receive_id": dest.chat_id},
        )
        return str(data.get("message_id") or "")

    # ------------------------------------------------------------------ edits

    async def edit_text(self, edit: TextEdit) -> None:
        live = self._streams.live(edit.message_id)
        if live is not None and edit.kind is OutboundKind.PROGRESS:
            await self._streams.update(live, edit.text)
            return
        if live is not None and not edit.buttons:
            try:
                await self._streams.finish(edit.message_id, live, edit.text)
            except InvalidRequest as exc:
                logger.info("feishu refused the streaming final (%s); replacing the card", exc)
            else:
                return
        self._streams.forget(edit.message_id)
        scope = scope_of(edit.destination)
        body = (
            markdown_element(edit.text)
            if edit.render is RenderMode.RICH
            else plain_element(edit.text)
        )
        card = static_card([body, *button_elements(edit.buttons, scope)])
        if edit.buttons:  # known before the card shows, so a quick press finds it
            self._remember_question(
                edit.message_id, Question(text=edit.text, buttons=edit.buttons, scope=scope)
            )
        await self._patch(
            edit.message_id, sized(Content(msg_type="interactive", content=dumps(card)))
        )

    async def _patch(self, message_id: str, content: Content) -> None:
        await self._api.call("PATCH", f"{MESSAGES}/{message_id}", body={"content": content.content})

    def _remember_question(self, message_id: str, question: Question) -> None:
        self._questions.keep(message_id, question)
        self._question_added.set()

    async def _question(self, message_id: str) -> Question | None:
        """The question a card shows; a press can arrive before the send that made the card
        has returned here, so it is waited for briefly (none after a restart)."""
        try:
            async with asyncio.timeout(QUESTION_WAIT_S):
                while (question := self._questions.pop(message_id)) is None:
                    self._question_added.clear()
                    await self._question_added.wait()
        except TimeoutError:
            return None
        return question

    async def mark_choice(self, press: CardPress) -> None:
        """Redraw the question with the chosen answer and every button disabled."""
        question = await self._question(press.message_id)
        card = chosen_card(
            question.text if question else None,
            question.buttons if question else (),
            question.scope if question else None,
            press.payload,
            press.label,
        )
        await self._patch(press.message_id, Content(msg_type="interactive", content=dumps(card)))

    # ------------------------------------------------------------------ files

    async def send_file(self, file: OutboundFile) -> SentRef:
        data = await read_outbound(file)
        content = await self._upload(file, data)
        uuid = message_uuid(file.dedupe_key)
        ids = [await self._send(file.destination, file.reply_to, content, uuid)]
        if file.caption.strip():
            caption = render(file.caption, Rung.TEXT)
            part = message_uuid(file.dedupe_key, "caption")
            ids.append(await self._send(file.destination, ids[0], caption, part))
        return SentRef(message_ids=tuple(ids))

    async def _upload(self, file: OutboundFile, data: bytes) -> Content:
        if file.is_image:
            try:
                found = await self._api.call(
                    "POST",
                    "/open-apis/im/v1/images",
                    form={"image_type": "message"},
                    files={"image": (file.name, data)},
                )
                return Content(msg_type="image", content=dumps({"image_key": _key(found, "image")}))
            except InvalidRequest as exc:
                logger.info(
                    "feishu refused %s as an image (%s); sending it as a file", file.name, exc
                )
        found = await self._api.call(
            "POST",
            "/open-apis/im/v1/files",
            form={"file_type": file_type_for(file.name), "file_name": file.name},
            files={"file": (file.name, data)},
        )
        return Content(msg_type="file", content=dumps({"file_key": _key(found, "file")}))

    # ------------------------------------------------------------------ reactions

    async def delete_message(self, removal: MessageRemoval) -> None:
        """Recall one of the bot's messages (``DELETE messages/:id``)."""
        await self._api.call("DELETE", f"{MESSAGES}/{removal.message_id}")

    async def show_typing(self, destination: Destination) -> None:
        """Feishu has no typing indicator for bots."""

    async def react(self, mark: ReactionMark) -> None:
        """Reactions on real messages only; button-press ids (``card/…``) are not messages."""
        message_id = mark.message_id
        if not is_message_id(message_id):
            return
        emoji = REACTIONS[mark.reaction]
        previous = self._stages.get(message_id)
        if previous is not None and previous[0] == emoji:
            return
        found = await self._api.call(
            "POST",
            f"{MESSAGES}/{message_id}/reactions",
            body={"reaction_type": {"emoji_type": emoji}},
        )
        self._stages.keep(message_id, (emoji, str(found.get("reaction_id") or "")))
        if previous is not None and previous[1]:
            try:
                await self._api.call("DELETE", f"{MESSAGES}/{message_id}/reactions/{previous[1]}")
            except SendError as exc:
                logger.debug("feishu: earlier reaction not removed: %s", exc)


def _key(answer: dict[str, object], kind: str) -> str:
    key = answer.get(f"{kind}_key")
    if not isinstance(key, str) or not key:
        raise TransientSendError(f"the {kind} upload answered without a key")
    return key
