"""The fake Telegram's world: chats, users, messages, files and the update queue.

Not thread-safe by itself: ``FakeTelegram`` guards the one ``World`` with its lock.
Update semantics follow the Bot API: an update stays pending until a ``getUpdates`` with a
higher ``offset`` confirms it (or a webhook delivery succeeds); ``redeliver`` offers a
confirmed update once more, as if the confirmation had been lost.
"""

from __future__ import annotations

import copy
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]
FIRST_MESSAGE_ID = 1000
_NOT_BY_DEFAULT = frozenset({"chat_member", "message_reaction", "message_reaction_count"})


@dataclass(slots=True)
class StoredMessage:
    message: Json
    by_bot: bool

    @property
    def thread_id(self) -> int | None:
        thread: int | None = self.message.get("message_thread_id")
        return thread


@dataclass(slots=True)
class StoredFile:
    file_id: str
    unique_id: str
    content: bytes
    path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CallbackAnswer:
    """How the bot answered a button press: ``text`` (shown to the presser alone) is empty
    for an answer that only stops the spinner; ``show_alert``: a dialog, not a toast."""

    text: str
    show_alert: bool


@dataclass(slots=True)
class Webhook:
    url: str
    secret: str | None


@dataclass(slots=True)
class World:
    bot_user: Json
    privacy_mode: bool = True
    """BotFather's default: ``getMe`` says ``can_read_all_group_messages: false``."""
    chats: dict[int, Json] = field(default_factory=dict)
    users: dict[int, Json] = field(default_factory=dict)
    threads: dict[int, set[int]] = field(default_factory=dict)
    messages: dict[int, dict[int, StoredMessage]] = field(default_factory=dict)
    files: dict[str, StoredFile] = field(default_factory=dict)
    paths: dict[str, StoredFile] = field(default_factory=dict)
    callback_queries: dict[str, bool] = field(default_factory=dict)
    callback_answers: dict[str, CallbackAnswer] = field(default_factory=dict)
    webhook: Webhook | None = None
    deliveries: list[tuple[int, int]] = field(default_factory=list)
    commands: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    reactions: dict[tuple[int, int], list[Json]] = field(default_factory=dict)
    pending: list[Json] = field(default_factory=list)
    forced: list[Json] = field(default_factory=list)
    history: dict[int, Json] = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)
    allowed_updates: frozenset[str] = frozenset()
    _next_message_id: dict[int, int] = field(default_factory=dict)
    _next_update_id: int = 1
    _serial: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # ------------------------------------------------------------------ chats and messages

    def register_chat(self, chat: Json, user: Json, thread_id: int | None) -> None:
        self.chats[chat["id"]] = chat
        self.users[user["id"]] = user
        if chat.get("is_forum") and thread_id is not None:
            self.threads.setdefault(chat["id"], set()).add(thread_id)

    def message(self, chat_id: int, message_id: int) -> StoredMessage | None:
        return self.messages.get(chat_id, {}).get(message_id)

    def store_message(self, message: Json, *, by_bot: bool) -> Json:
        chat_id, message_id = message["chat"]["id"], message["message_id"]
        floor = self._next_message_id.get(chat_id, FIRST_MESSAGE_ID)
        self._next_message_id[chat_id] = max(floor, message_id + 1)
        self.messages.setdefault(chat_id, {})[message_id] = StoredMessage(message, by_bot)
        return message

    def next_message_id(self, chat_id: int) -> int:
        return self._next_message_id.get(chat_id, FIRST_MESSAGE_ID)

    def post(
        self, chat_id: int, content: Json, *, thread_id: int | None, reply: Json | None
    ) -> Json:
        """Stores a message the bot sent and returns it as the API's ``result``."""
        chat = self.chats[chat_id]
        message: Json = {
            "message_id": self.next_message_id(chat_id),
            "date": int(time.time()),
            "chat": chat,
            "from": self.bot_user,
        }
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            if chat.get("is_forum"):
                message["is_topic_message"] = True
        if reply is not None:
            message["reply_to_message"] = without_reply(reply)
        message.update(content)
        return copy.deepcopy(self.store_message(message, by_bot=True))

    def bot_messages(self, chat_id: int) -> list[Json]:
        stored = sorted(self.messages.get(chat_id, {}).items())
        return [copy.deepcopy(entry.message) for _, entry in stored if entry.by_bot]

    # ------------------------------------------------------------------ files

    def add_file(
        self, file_id: str, content: bytes, path: str | None, *, folder: str, suffix: str = ""
    ) -> StoredFile:
        serial = next(self._serial)
        stored = StoredFile(
            file_id=file_id,
            unique_id=f"AgADfake{serial}",
            content=content,
            path=path or f"tgfake/{folder}/file_{serial}{suffix}",
        )
        self.files[file_id] = stored
        self.paths[stored.path] = stored
        return stored

    def new_file_id(self, kind: str) -> str:
        return f"BQACAgfake-{kind}-{next(self._serial)}"

    def new_callback_query_id(self) -> str:
        return str(4_000_000_000 + next(self._serial))

    # ------------------------------------------------------------------ updates

    def enqueue(self, update: Json) -> int:
        update_id = update.setdefault("update_id", self._next_update_id)
        self._next_update_id = max(self._next_update_id, update_id + 1)
        self.history[update_id] = copy.deepcopy(update)
        self.pending.append(update)
        self.pending.sort(key=lambda u: u["update_id"])
        return int(update_id)

    def redeliver(self, update_id: int) -> None:
        if update_id not in self.history:
            raise KeyError(f"update {update_id} was never pushed")
        if not any(u["update_id"] == update_id for u in self.pending + self.forced):
            self.forced.append(copy.deepcopy(self.history[update_id]))

    def confirm(self, offset: int) -> None:
        """``offset`` confirms every update below it; a negative one keeps the last ``-offset``."""
        if offset > 0:
            self.pending = [u for u in self.pending if u["update_id"] >= offset]
        elif offset < 0:
            self.pending = self.pending[offset:]

    def take(self, limit: int) -> list[Json]:
        """What a getUpdates answers now; redelivered updates are offered once."""
        self._drop_unwanted()
        batch = sorted(self.forced + self.pending, key=lambda u: u["update_id"])[:limit]
        self.forced = [u for u in self.forced if all(u is not b for b in batch)]
        return copy.deepcopy(batch)

    def next_for_webhook(self) -> Json | None:
        self._drop_unwanted()
        queue = self.forced or self.pending
        return copy.deepcopy(queue[0]) if queue else None

    def webhook_done(self, update_id: int, status: int, *, max_attempts: int) -> None:
        """Records a delivery; a 2xx confirms the update, repeated failures give it up."""
        self.deliveries.append((update_id, status))
        attempts = self.attempts[update_id] = self.attempts.get(update_id, 0) + 1
        if 200 <= status < 300 or attempts >= max_attempts:
            self.attempts.pop(update_id, None)
            self.forced = [u for u in self.forced if u["update_id"] != update_id]
            self.pending = [u for u in self.pending if u["update_id"] != update_id]

    def _drop_unwanted(self) -> None:
        """Update kinds outside ``allowed_updates`` never reach the bot, as with Telegram."""
        self.pending = [u for u in self.pending if self._wanted(u)]
        self.forced = [u for u in self.forced if self._wanted(u)]

    def _wanted(self, update: Json) -> bool:
        kinds = set(update) - {"update_id"}
        if self.allowed_updates:
            return bool(kinds & self.allowed_updates)
        return not kinds <= _NOT_BY_DEFAULT

    def drop_pending(self) -> None:
        self.pending.clear()
        self.forced.clear()


def without_reply(message: Json) -> Json:
    """A message as it appears inside ``reply_to_message`` (one level deep, like Telegram)."""
    inner = copy.deepcopy(message)
    inner.pop("reply_to_message", None)
    return inner
