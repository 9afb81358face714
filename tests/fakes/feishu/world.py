"""The tenant the fake Feishu models: identity, chats, messages, uploads, cards, reactions.

All of it is guarded by the fake's one lock (``records.Guard``); nothing here locks itself.
"""

from __future__ import annotations

import copy
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.feishu.records import CardView, Ephemeral, Message, Upload

UUID_TTL_S = 3600.0  # Feishu dedupes a message ``uuid`` for one hour


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    app_id: str
    app_secret: str
    bot_open_id: str
    bot_name: str
    tenant_key: str
    verification_token: str
    encrypt_key: str


@dataclass(slots=True, kw_only=True)
class StoredMessage:
    message_id: str
    chat_id: str
    chat_type: str
    msg_type: str
    content: dict[str, Any]
    raw_content: str
    sender_id: str
    sender_type: str
    parent_id: str = ""
    root_id: str = ""
    thread_id: str = ""
    reply_in_thread: bool = False
    uuid: str | None = None
    card_id: str | None = None
    deleted: bool = False
    updated: bool = False
    create_time: int = field(default_factory=lambda: int(time.time() * 1000))
    update_time: int = 0
    versions: list[dict[str, Any]] = field(default_factory=list)

    def view(self) -> Message:
        return Message(
            message_id=self.message_id,
            chat_id=self.chat_id,
            chat_type=self.chat_type,
            msg_type=self.msg_type,
            content=copy.deepcopy(self.content),
            raw_content=self.raw_content,
            sender_id=self.sender_id,
            sender_type=self.sender_type,
            parent_id=self.parent_id,
            root_id=self.root_id,
            thread_id=self.thread_id,
            reply_in_thread=self.reply_in_thread,
            uuid=self.uuid,
            card_id=self.card_id,
            deleted=self.deleted,
            updated=self.updated,
            create_time=self.create_time,
            versions=tuple(copy.deepcopy(self.versions)),
        )


@dataclass(slots=True, kw_only=True)
class Card:
    card_id: str
    data: dict[str, Any]
    streaming_mode: bool
    sequence: int = 0
    message_ids: list[str] = field(default_factory=list)
    operations: list[tuple[str, int]] = field(default_factory=list)
    uuids: set[str] = field(default_factory=set)

    def view(self, elements: dict[str, dict[str, Any]]) -> CardView:
        texts = {
            eid: str(node.get("content", "")) if node.get("tag") in _TEXT else str(node.get("tag"))
            for eid, node in elements.items()
        }
        return CardView(
            card_id=self.card_id,
            data=copy.deepcopy(self.data),
            streaming_mode=self.streaming_mode,
            sequence=self.sequence,
            elements=texts,
            message_ids=tuple(self.message_ids),
            operations=tuple(self.operations),
        )


_TEXT = frozenset({"markdown", "plain_text"})


@dataclass(slots=True, kw_only=True)
class Reaction:
    reaction_id: str
    message_id: str
    emoji_type: str
    action_time: int


class World:
    def __init__(self, ids: Identity) -> None:
        self.ids = ids
        self.chats: dict[str, str] = {}  # chat_id -> chat_type ("p2p" | "group" | "topic")
        self.p2p_chats: dict[str, str] = {}  # user open_id -> their p2p chat_id
        self.messages: dict[str, StoredMessage] = {}
        self.ephemerals: list[Ephemeral] = []  # ephemeral/v1/send, in the order sent
        self.order: list[str] = []  # message ids in creation order
        self.uploads: dict[str, Upload] = {}  # image_key / file_key -> bytes
        self.resources: dict[tuple[str, str], Upload] = {}  # (message_id, key) -> bytes
        self.cards: dict[str, Card] = {}
        self.reactions: dict[str, Reaction] = {}
        self.uuids: dict[str, tuple[float, str]] = {}  # uuid -> (when, message_id)
        self.token: str | None = None
        self.tokens_issued: list[str] = []
        self.token_expire_s = 7200
        self.refuse_credentials = False
        self.image_limit = 10 * 1024 * 1024
        self.file_limit = 30 * 1024 * 1024

    # ------------------------------------------------------------------ ids

    @staticmethod
    def new_id(prefix: str, size: int = 16) -> str:
        return f"{prefix}{secrets.token_hex(size)}"

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    @staticmethod
    def new_card_id() -> str:
        return "7" + "".join(str(secrets.randbelow(10)) for _ in range(18))

    # ------------------------------------------------------------------ tokens

    def issue_token(self) -> str:
        if self.token is None:
            self.token = self.new_id("t-", 20)
            self.tokens_issued.append(self.token)
        return self.token

    # ------------------------------------------------------------------ chats and messages

    def add_chat(self, chat_id: str, chat_type: str, user: str | None = None) -> None:
        self.chats[chat_id] = chat_type
        if chat_type == "p2p" and user:
            self.p2p_chats.setdefault(user, chat_id)

    def store(self, message: StoredMessage) -> StoredMessage:
        message.versions.append(copy.deepcopy(message.content))
        self.messages[message.message_id] = message
        self.order.append(message.message_id)
        return message

    def remembered(self, uuid: str | None) -> StoredMessage | None:
        if not uuid:
            return None
        seen = self.uuids.get(uuid)
        if seen is None or time.monotonic() - seen[0] > UUID_TTL_S:
            return None
        return self.messages.get(seen[1])

    def remember(self, uuid: str | None, message_id: str) -> None:
        if uuid:
            self.uuids[uuid] = (time.monotonic(), message_id)

    def bot_messages(self, chat_id: str | None) -> list[Message]:
        found = (self.messages[m] for m in self.order)
        return [
            m.view()
            for m in found
            if m.sender_type == "app" and (chat_id is None or m.chat_id == chat_id)
        ]

    def card_view(self, card: Card) -> CardView:
        from tests.fakes.feishu.content import element_index  # noqa: PLC0415 - avoid a cycle

        return card.view(element_index(card.data))
