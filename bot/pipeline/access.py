"""Who may talk to the bot (design §10): DM policies with pairing codes, denied users, roles.

Group addressing (mention / reply / topic / pending answer) is decided by the router, which
knows about conversations and questions; this module decides about people.

Pending pairing requests are bounded per channel (``access.max_pending_pairings``), and a full
queue evicts its oldest request rather than refusing the newcomer: otherwise a few strangers
could close pairing to everyone for the hour their codes live. The operator hears of it in a
WARNING (at most one per channel per ``OVERFLOW_WARNING_INTERVAL``) and in
``switchboard_pairing_evictions_total``; the evicted user is told nothing, and asking again
gets a new code.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from prometheus_client import CollectorRegistry, Counter

from bot.config.settings import ChannelPolicy, DmPolicy, GroupPolicy, Settings
from bot.messages import ChatType, InboundMessage, utc_now
from bot.metrics import DropReason
from bot.ports import Store
from bot.records import PairingRequest, UserStatus

logger = logging.getLogger(__name__)

PAIRING_TTL = timedelta(hours=1)
OVERFLOW_WARNING_INTERVAL = timedelta(minutes=10)
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


def pairing_evictions(registry: CollectorRegistry) -> Counter:
    """``switchboard_pairing_evictions_total{channel}``: requests a full queue evicted."""
    return Counter(
        "switchboard_pairing_evictions",
        "Pending pairing requests evicted (oldest first) to make room for a new one, by"
        " channel: more strangers asked than access.max_pending_pairings holds.",
        ["channel"],
        registry=registry,
    )


class AccessControl:
    def __init__(
        self,
        settings: Callable[[], Settings],
        store: Store,
        clock: Callable[[], datetime] = utc_now,
        *,
        evictions: Counter | None = None,
    ) -> None:
        self._settings = settings
        self._store = store
        self._clock = clock
        self._evictions = evictions or pairing_evictions(CollectorRegistry())
        self._overflow = _OverflowWarnings()

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
        room = self._settings().access.max_pending_pairings
        if len(pending) >= room:
            await self._evict(message.channel, pending[: len(pending) - room + 1], now)
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
        logger.info("pairing requested channel=%s user=%r", message.channel, message.sender.id)
        return _pairing_text(request.code)

    async def _evict(self, channel: str, oldest: Sequence[PairingRequest], now: datetime) -> None:
        """Drop the oldest pending requests (their codes stop working) and tell the operator."""
        dropped = 0
        for request in oldest:
            dropped += await self._store.access.drop_pairing(request.code)
        self._evictions.labels(channel=channel).inc(dropped)
        since_last = self._overflow.note(channel, dropped, now)
        if since_last is not None:
            logger.warning(
                "pairing requests on channel=%s reached access.max_pending_pairings=%d: the"
                " oldest were evicted, their codes no longer work (%d since the last warning)."
                " Review them with /pairing or `switchboard pairing list`, or raise the bound",
                channel,
                self._settings().access.max_pending_pairings,
                since_last,
            )


class _OverflowWarnings:
    """At most one overflow warning per channel per interval, counting what it stayed
    quiet about."""

    def __init__(self) -> None:
        self._last: dict[str, datetime] = {}
        self._quiet: dict[str, int] = {}

    def note(self, channel: str, evicted: int, now: datetime) -> int | None:
        """Evictions since the last warning when one is due now, else ``None``."""
        count = self._quiet.get(channel, 0) + evicted
        last = self._last.get(channel)
        if last is not None and now - last < OVERFLOW_WARNING_INTERVAL:
            self._quiet[channel] = count
            return None
        self._last[channel] = now
        self._quiet[channel] = 0
        return count


def _pairing_text(code: str) -> str:
    return (
        "This bot only talks to approved users. Your access code is "
        f"`{code}` (valid for 1 hour). Ask an admin to approve it with `/approve {code}` "
        f"in chat or `switchboard pairing approve {code}` on the server."
    )
