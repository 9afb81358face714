"""ConversationKey → thread policy (design §4), like aiogram's ``FSMStrategy``.

DMs are one conversation per chat (a platform thread inside a DM gets its own). In groups
``group_scope`` decides: ``topic`` — a platform thread is a conversation and a new top-level
message starts one anchored at itself; ``chat`` — one per group; ``user`` — one per member.
A reply to any message the bot sent continues that message's conversation on every
platform. A channel without threads degrades ``topic`` to ``user``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.config.settings import GroupScope, Settings
from bot.messages import ChatType, ConversationKey, Destination, InboundMessage, MessageOrigin
from bot.pipeline.group_context import GroupContext
from bot.ports import AgentBackend, Store
from bot.records import Conversation


class Sessions:
    def __init__(
        self,
        settings: Callable[[], Settings],
        store: Store,
        agent: AgentBackend,
        threads_supported: Callable[[str], bool],
    ) -> None:
        self._settings = settings
        self._store = store
        self._agent = agent
        self._threads_supported = threads_supported
        self.heard = GroupContext(settings)
        """What groups said before a conversation addressed the bot (``group_policy: listen``)."""

    async def replied_key(self, message: InboundMessage) -> ConversationKey | None:
        """The conversation of the bot message this one replies to, if any."""
        if message.reply_to_message_id is None:
            return None
        link = await self._store.links.lookup(
            message.channel, message.account_id, message.chat_id, message.reply_to_message_id
        )
        return link.key if link is not None else None

    async def key_for(self, message: InboundMessage) -> ConversationKey:
        replied = await self.replied_key(message)
        if replied is not None:
            return replied
        return self.scoped_key(message)

    def scoped_key(self, message: InboundMessage) -> ConversationKey:
        if message.origin is MessageOrigin.OPERATOR:
            return self.pushed_key(
                ChatAddress(
                    channel=message.channel,
                    account_id=message.account_id,
                    chat_id=message.chat_id,
                    chat_type=message.chat_type,
                    topic_id=message.thread_root_id,
                    user_id=message.sender.id or None,
                )
            )
        base = ConversationKey(
            channel=message.channel, account_id=message.account_id, chat_id=message.chat_id
        )
        if message.chat_type is ChatType.DM:
            if message.thread_root_id is not None:
                return _key_with_scope(base, topic_id=message.thread_root_id)
            return base
        scope = self._settings().channel_policy(message.channel).group_scope
        if scope is GroupScope.TOPIC and not self._threads_supported(message.channel):
            scope = GroupScope.USER
        if scope is GroupScope.CHAT:
            return base
        if scope is GroupScope.USER:
            return _key_with_scope(base, user_id=message.sender.id)
        return _key_with_scope(base, topic_id=message.thread_root_id or message.message_id)

    def pushed_key(self, address: ChatAddress) -> ConversationKey:
        """The conversation a push names (design §19): a DM's chat (and thread, if named); a
        group's by its scope, from what the push names: ``topic`` its topic (none: the chat's
        top level), ``user`` that member's (none: the whole chat), ``chat`` the chat."""
        scope = self._settings().channel_policy(address.channel).group_scope
        if scope is GroupScope.TOPIC and not self._threads_supported(address.channel):
            scope = GroupScope.USER
        return pushed_key(address, scope)

    async def ensure_thread(self, key: ConversationKey) -> Conversation:
        """The key's active thread, created on first use. Safe under concurrency: the store
        keeps exactly one active thread per key and ``bind`` returns the winner."""
        current = await self._store.conversations.current(key)
        if current is not None:
            return current
        thread_id = await self._agent.create_thread()
        return await self._store.conversations.bind(key, thread_id)

    async def new_thread(self, key: ConversationKey) -> Conversation:
        thread_id = await self._agent.create_thread()
        await self._store.clarifications.cancel_for_key(key)
        return await self._store.conversations.rotate(key, thread_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatAddress:
    """A chat (and a topic or member in it) named by the operator, not by a platform message."""

    channel: str
    account_id: str = ""
    chat_id: str
    chat_type: ChatType
    topic_id: str | None = None
    user_id: str | None = None


def pushed_key(address: ChatAddress, scope: GroupScope) -> ConversationKey:
    """``Sessions.pushed_key`` for a known ``group_scope`` (the CLI has no running channels)."""
    base = ConversationKey(
        channel=address.channel, account_id=address.account_id, chat_id=address.chat_id
    )
    if address.chat_type is ChatType.DM or scope is GroupScope.TOPIC:
        return _key_with_scope(base, topic_id=address.topic_id)
    if scope is GroupScope.USER:
        return _key_with_scope(base, user_id=address.user_id)
    return base


def destination_for(message: InboundMessage, key: ConversationKey) -> Destination:
    """Where replies for this message's conversation go."""
    return Destination.of(key, message.chat_type)


def _key_with_scope(
    base: ConversationKey, *, topic_id: str | None = None, user_id: str | None = None
) -> ConversationKey:
    return ConversationKey(
        channel=base.channel,
        account_id=base.account_id,
        chat_id=base.chat_id,
        topic_id=topic_id,
        user_id=user_id,
    )
