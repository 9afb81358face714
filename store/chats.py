"""``ChatDirectory`` over the inbound journal: a chat's account and type from its newest
journaled message (design §19)."""

from __future__ import annotations

from typing import Final

from typing_extensions import override

from bot.ports.chats import ChatDirectory, KnownChat
from store.codec import decode_inbound
from store.dialect import Backend

_NEWEST: Final = (
    "SELECT message FROM inbound WHERE channel = ? AND chat_id = ?{account}"
    " ORDER BY id DESC LIMIT 1"
)


class SqlChatDirectory(ChatDirectory):
    def __init__(self, db: Backend) -> None:
        self._db = db

    @override
    async def find(
        self, channel: str, chat_id: str, account_id: str | None = None
    ) -> KnownChat | None:
        params: tuple[str, ...] = (channel, chat_id)
        account = ""
        if account_id is not None:
            account, params = " AND account_id = ?", (*params, account_id)
        row = await self._db.row(_NEWEST.format(account=account), params)
        if row is None:
            return None
        message = decode_inbound(self._db.dialect.columns(row).text("message"))
        return KnownChat(
            channel=message.channel,
            account_id=message.account_id,
            chat_id=message.chat_id,
            chat_type=message.chat_type,
        )
