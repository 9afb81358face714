"""The ``access`` keys of human takeover (design §22): who counts as a human the
bot yields to, how long a yield or a handoff mutes, who may ``/mute``, and whom a handoff tells.

``AccessSettings`` extends ``TakeoverAccess``, so these are plain ``access.*`` keys.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.config.durations import parse_duration
from bot.messages import ChatType

UNTIL_UNMUTE = "until_unmute"
NO_MUTE = "off"


class YieldTo(StrEnum):
    HUMANS = "humans"
    """Only the users listed in ``access.humans``."""
    MEMBERS = "members"
    """Any member who is not a bot and not the one the running turn answers."""
    NONE = "none"


class OnCallTarget(BaseModel):
    """A chat a handoff is announced in, named as the push API names one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: str = Field(min_length=1)
    chat: str = Field(min_length=1)
    """The chat id (a user's DM chat on Telegram is their user id)."""
    topic: str | None = None
    account: str | None = None
    chat_type: ChatType | None = None
    """Needed unless the bot has heard from the chat lately (as for a push)."""


def _mute_length(value: object, *, allow_off: bool) -> object:
    """``30m`` / ``until_unmute`` / ``off`` → a timedelta / ``None`` / ``timedelta(0)``."""
    if not isinstance(value, str):
        return value
    word = value.strip().lower()
    if word == UNTIL_UNMUTE:
        return None
    if word == NO_MUTE and allow_off:
        return timedelta(0)
    if word.startswith("p"):
        return value  # ISO 8601 (``PT1H``): settings dumped as JSON and read back (a reload)
    return parse_duration(word)


class TakeoverAccess(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    humans: tuple[str, ...] = ()
    """``<channel>:<user id>`` of the people the bot yields to (support staff), as ``admins``."""
    yield_to: YieldTo = YieldTo.HUMANS
    """Whose reply in a thread makes a running turn there yield (``none``: nobody's)."""
    yield_mute: timedelta | None = timedelta(hours=1)
    """How long a thread stays muted after the bot yielded in it: a duration (``1h``),
    ``until_unmute``, or ``off`` (yield that turn only)."""
    handoff_mute: timedelta | None = None
    """How long the agent's ``handoff`` mutes its conversation (default ``until_unmute``)."""
    participants_can_mute: bool = True
    """Whether anyone who may talk to the bot in a conversation may ``/mute`` and ``/unmute``
    it; admins always may."""
    on_call: tuple[OnCallTarget, ...] = ()
    """Chats a handoff is announced in (through the push path)."""

    @field_validator("yield_mute", mode="before")
    @classmethod
    def _yield_mute(cls, value: object) -> object:
        return _mute_length(value, allow_off=True)

    @field_validator("handoff_mute", mode="before")
    @classmethod
    def _handoff_mute(cls, value: object) -> object:
        return _mute_length(value, allow_off=False)

    @field_validator("humans")
    @classmethod
    def _user_refs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for ref in value:
            channel, sep, user = ref.partition(":")
            if not (sep and channel and user):
                raise ValueError(f"{ref!r} is not <channel>:<user id> (like access.admins)")
        return value
