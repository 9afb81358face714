"""/schedules and /unschedule (design §19 "Schedules"): a chat's own schedules; admins see and
cancel every chat's. Creating one is the agent's ("remind me tomorrow at 9") or the CLI's."""

from __future__ import annotations

from bot.commands.registry import Command, CommandCall, CommandRegistry
from bot.pipeline.access import Role
from bot.ports.schedules import ScheduleRefused
from bot.schedules.book import ScheduleBook, describe

LISTED = 50


def _book(call: CommandCall) -> ScheduleBook:
    return ScheduleBook(call.env.settings, call.env.store)


async def _schedules(call: CommandCall) -> str:
    everything = call.args[:1] == ("all",)
    if everything and call.role is not Role.ADMIN:
        return "`/schedules all` is for admins only; `/schedules` lists this chat's."
    message = call.message
    if everything:
        found = await _book(call).listed()
    else:
        found = await _book(call).listed(channel=message.channel, chat_id=message.chat_id)
    if not found:
        where = "" if everything else " in this chat"
        return f'No active schedules{where}. Ask the agent, e.g. "remind me tomorrow at 9".'
    lines = [describe(s, with_chat=everything) for s in found[:LISTED]]
    if len(found) > LISTED:
        lines.append(f"… and {len(found) - LISTED} more (`switchboard schedule list`)")
    return "**Schedules**\n" + "\n".join(lines) + "\n\n`/unschedule ID` cancels one."


async def _unschedule(call: CommandCall) -> str:
    raw = call.args[0].removeprefix("#").removeprefix("schedule-") if len(call.args) == 1 else ""
    if not raw.isdigit():
        return "Usage: `/unschedule ID` (the number `/schedules` shows)"
    message = call.message
    only = None if call.role is Role.ADMIN else (message.channel, message.chat_id)
    try:
        await _book(call).cancel(int(raw), call.actor, only_chat=only)
    except ScheduleRefused as exc:
        return f"Not cancelled: {exc}."
    return f"Cancelled schedule #{raw}."


def register_schedule_commands(registry: CommandRegistry) -> None:
    registry.add(
        Command(
            name="schedules",
            usage="/schedules",
            handler=_schedules,
            summary="list this chat's schedules (admins: /schedules all)",
        )
    )
    registry.add(
        Command(
            name="unschedule",
            usage="/unschedule ID",
            handler=_unschedule,
            summary="cancel one of this chat's schedules",
        )
    )
