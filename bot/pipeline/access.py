"""Who may talk to the bot (design §10): DM policies with pairing codes, denied users, roles.

Group addressing (mention / reply / topic / pending answer) is decided by the router, which
knows about conversations and questions; this module decides about people.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from bot.config.settings import ChannelPolicy, DmPolicy, GroupPolicy, Settings
from bot.messages import ChatType, InboundMessage, utc_now
from bot.metrics import DropReason
from bot.ports import Store
from bot.records import PairingRequest, UserStatus

logger = logging.getLogger(__name__)

PAIRING_TTL = timedelta(hours=1)
MAX_PENDING_PAIRINGS = 3
_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I
CODE_LENGTH = 8


class Role(StrEnum):
    ADMIN = "admin"
    USER = "user"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    allowed: bool
    reason: DropReason | None = None
    reply: str | None = None


ALLOWED = Verdict(allowed=True)


def new_pairing_code() -> str:
    return "".join(secrets.choice(_CODE_ALPHABET) for _ in range(CODE_LENGTH))


class AccessControl:
    def __init__(
        self,
        settings: Callable[[], Settings],
        store: Store,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._settings = settings
        self._store = store
        self._clock = clock

    def role(self, message: InboundMessage) -> Role:
        admins = self._settings().access.admins
        return Role.ADMIN if message.user_ref in admins else Role.USER

    async def check(self, message: InboundMessage) -> Verdict:
        """Whether this sender may use the bot here; may carry a reply (a pairing code)."""
        if self.role(message) is Role.ADMIN:
            return ALLOWED
        status = await self._store.access.status(message.channel, message.sender.id)
        if status is UserStatus.DENIED:
            return Verdict(allowed=False, reason=DropReason.NOT_ALLOWED)
        policy = self._settings().channel_policy(message.channel)
        if message.chat_type is ChatType.GROUP:
            if policy.group_policy is GroupPolicy.OFF:
                return Verdict(allowed=False, reason=DropReason.NOT_ADDRESSED)
            return ALLOWED
        return await self._check_dm(message, policy, status)

    async def _check_dm(
        self, message: InboundMessage, policy: ChannelPolicy, status: UserStatus | None
    ) -> Verdict:
        if policy.dm_policy is DmPolicy.OPEN:
            return ALLOWED
        if message.sender.id in policy.allowed_users or status is UserStatus.APPROVED:
            return ALLOWED
        if policy.dm_policy is DmPolicy.ALLOWLIST:
            return Verdict(allowed=False, reason=DropReason.NOT_ALLOWED)
        return Verdict(
            allowed=False, reason=DropReason.NOT_ALLOWED, reply=await self._pairing_reply(message)
        )

    async def _pairing_reply(self, message: InboundMessage) -> str:
        now = self._clock()
        existing = await self._store.access.pairing_for_user(
            message.channel, message.sender.id, now
        )
        if existing is not None:
            return _pairing_text(existing.code)
        pending = await self._store.access.pending_pairings(now, message.channel)
        if len(pending) >= MAX_PENDING_PAIRINGS:
            return (
                "This bot only talks to approved users, and too many access requests are "
                "waiting already. Please try again later."
            )
        request = PairingRequest(
            channel=message.channel,
            user_id=message.sender.id,
            display_name=message.sender.display_name,
            chat_id=message.chat_id,
            code=new_pairing_code(),
            created_at=now,
            expires_at=now + PAIRING_TTL,
        )
        await self._store.access.add_pairing(request)
        logger.info("pairing requested channel=%s user=%s", message.channel, message.sender.id)
        return _pairing_text(request.code)


def _pairing_text(code: str) -> str:
    return (
        "This bot only talks to approved users. Your access code is "
        f"`{code}` (valid for 1 hour). Ask an admin to approve it with `/approve {code}` "
        f"in chat or `switchboard pairing approve {code}` on the server."
    )
