"""/mute and /unmute (design §22): keep the bot quiet in a conversation for a
while or until ``/unmute``, so people can talk (commands still work while muted).

The conversation is the one the message belongs to (``conversations.group_scope``): a thread,
a member's conversation, a DM, or the whole group in ``chat`` scope; a top-level message in a
``topic``-scoped group (which would open a new topic) mutes the whole chat. Admins may always;
others where ``access.participants_can_mute`` is on (the default).
"""

from __future__ import annotations

import functools
from datetime import timedelta

from bot.commands.registry import Command, CommandCall, CommandRegistry
from bot.config.durations import EXAMPLES, describe_duration, parse_duration
from bot.messages import ConversationKey
from bot.pipeline.access import Role
from bot.pipeline.lanes import CancelReason
from bot.ports.mutes import chat_key
from bot.takeover.mutes import MutesOff, describe_mute
from bot.takeover.takeover import Takeover

OFF = "Mutes are not available here (the store keeps none)."


def _refusal(takeover: Takeover | None, call: CommandCall, name: str) -> str | None:
    if takeover is None or not takeover.book.available:
        return OFF
    if call.role is Role.ADMIN or call.env.settings().access.participants_can_mute:
        return None
    return f"`/{name}` is for admins here (access.participants_can_mute is off)."


def _target(call: CommandCall) -> ConversationKey:
    """The conversation the command names: its own, or the whole chat for a top-level
    message that would open a topic of its own."""
    key, message = call.key, call.message
    if message.thread_root_id is None and key.topic_id == message.message_id:
        return chat_key(key)
    return key


def _length(call: CommandCall) -> timedelta | str | None:
    """The duration asked for (``None``: until /unmute), or what is wrong with it."""
    if not call.args:
        return None
    if len(call.args) > 1:
        return f"Usage: `/mute [duration]`, e.g. `/mute 2h` ({EXAMPLES}); got {call.raw_args!r}."
    try:
        return parse_duration(call.args[0])
    except ValueError as exc:
        return f"Not muted: {exc}."


def _where(target: ConversationKey) -> str:
    return "in this chat" if target.topic_id is None and target.user_id is None else "here"


async def _mute(takeover: Takeover | None, call: CommandCall) -> str:
    if (refused := _refusal(takeover, call, "mute")) is not None:
        return refused
    assert takeover is not None  # noqa: S101 - _refusal says so otherwise
    length = _length(call)
    if isinstance(length, str):
        return length
    target = _target(call)
    try:
        mute = await takeover.book.mute(target, length=length, reason="/mute", actor=call.actor)
    except MutesOff:
        return OFF
    await _end_running(takeover, {target, call.key})
    if length is None:
        return f"🔇 Muted {_where(target)} until `/unmute`."
    assert mute.until is not None  # noqa: S101 - a length was given
    until = f"{mute.until:%Y-%m-%d %H:%M} UTC"
    span = f"for {describe_duration(length)} (until {until})"
    return f"🔇 Muted {_where(target)} {span}. `/unmute` ends it sooner."


async def _end_running(takeover: Takeover, keys: set[ConversationKey]) -> None:
    for key in keys:
        await takeover.quiet(key, CancelReason.MUTE)


async def _unmute(takeover: Takeover | None, call: CommandCall) -> str:
    if (refused := _refusal(takeover, call, "unmute")) is not None:
        return refused
    if call.args:
        return "Usage: `/unmute` (it takes no arguments)."
    assert takeover is not None  # noqa: S101 - _refusal says so otherwise
    target = _target(call)
    lifted = await takeover.book.unmute(target, call.actor)
    remaining = await takeover.book.mute_over(call.key)
    if remaining is not None:
        done = "This conversation's mute is lifted, but" if lifted else "Still muted:"
        return (
            f"{done} the whole chat is {describe_mute(remaining)}; `/unmute` at the chat's top"
            " level lifts that."
        )
    if lifted is None:
        return "I'm not muted here."
    return f"🔊 Unmuted {_where(target)}: I answer again."


def register_mute_commands(registry: CommandRegistry, takeover: Takeover | None) -> None:
    """``/mute`` and ``/unmute`` acting on ``takeover`` (``None``: a registry that only lists
    them, as a menu does; they answer that mutes are off)."""
    registry.add(
        Command(
            name="mute",
            usage="/mute [duration]",
            handler=functools.partial(_mute, takeover),
            summary="keep the bot quiet here (30m, 2h, 1d; none: until /unmute)",
        )
    )
    registry.add(
        Command(
            name="unmute",
            usage="/unmute",
            handler=functools.partial(_unmute, takeover),
            summary="let the bot answer here again",
        )
    )
