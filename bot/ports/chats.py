"""What the store knows of a chat it has seen, for messages nobody in the chat asked for
(design §19: the push API and ``switchboard send``).

A push names a channel and a chat id; the kernel also needs the chat's account (the Telegram
bot, the Slack team) and whether it is a DM or a group (DingTalk addresses the two through
different APIs; pacing and conversation scope differ too). Both are in the newest journaled
message of the chat. It is its own small protocol, beside the Store port rather than in it,
so a store without it still works: its pushes then name ``chat_type`` (and ``account``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bot.messages import ChatType
from bot.ports.store import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownChat:
    channel: str
    account_id: str
    chat_id: str
    chat_type: ChatType


class ChatDirectory(Protocol):
    async def find(
        self, channel: str, chat_id: str, account_id: str | None = None
    ) -> KnownChat | None:
        """The chat as its newest journaled message shows it (of any account when
        ``account_id`` is ``None``); ``None`` for a chat nothing was journaled from (or only
        longer ago than ``daemon.journal_retention_days``)."""
        ...


@runtime_checkable
class KnowsChats(Protocol):
    @property
    def chats(self) -> ChatDirectory: ...


def chats_of(store: Store) -> ChatDirectory | None:
    """The store's ``ChatDirectory``, if it has one."""
    return store.chats if isinstance(store, KnowsChats) else None
