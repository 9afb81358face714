"""``switchboard schedule list|add|cancel`` (design §19 "Schedules"): any chat's schedules,
against the configured store (``open_existing``), safe while the daemon runs.

``add`` only records: the daemon's ``schedules`` loop (any replica's) sees the new schedule
within a second. Like every operator view, ``list`` prints a schedule's text as its length
only. Its LAST column says how the newest firing went: ``late`` (delivered after a downtime,
within the grace) or ``skipped`` (missed by more than the grace), with the reason.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from bot.cli.operator.output import NONE, JsonObject, iso, print_json, say, show, table, when
from bot.cli.operator.runner import EXIT_FAILED, opened_store, operator_actor
from bot.cli.options import CommandFailed
from bot.config.settings import Settings
from bot.exit_codes import EXIT_OK
from bot.messages import ChatType
from bot.pipeline.schedule_book import ScheduleBook
from bot.ports import Store
from bot.ports.chats import chats_of
from bot.ports.schedules import (
    Firing,
    Schedule,
    ScheduleAction,
    ScheduleRefused,
    ScheduleTarget,
    schedules_of,
)

HEADERS = ("ID", "CHAT", "ACTION", "WHEN", "STATE", "NEXT (UTC)", "LAST", "CHARS")


async def schedule_list(args: argparse.Namespace, settings: Settings) -> int:
    async with opened_store(settings) as store:
        book = ScheduleBook(lambda: settings, store)
        found = await book.listed(channel=args.channel, chat_id=args.chat, active_only=not args.all)
        latest = {s.id: await latest_firing(store, s.id) for s in found}
    if args.json:
        print_json([schedule_json(s, latest[s.id]) for s in found])
        return EXIT_OK
    if not found:
        say("no schedules" if args.all else "no active schedules (--all shows every one)")
        return EXIT_OK
    show(table(HEADERS, [schedule_cells(s, latest[s.id]) for s in found]))
    return EXIT_OK


async def latest_firing(store: Store, schedule_id: int) -> Firing | None:
    """The schedule's newest firing (``None`` before its first, or without schedules)."""
    table_ = schedules_of(store)
    if table_ is None:
        return None
    firings = await table_.firings(schedule_id, limit=1)
    return firings[0] if firings else None


def _last(firing: Firing | None) -> str:
    if firing is None:
        return NONE
    detail = f" ({firing.detail})" if firing.detail else ""
    return f"{firing.outcome} {when(firing.due_at)}{detail}"


def schedule_cells(schedule: Schedule, latest: Firing | None) -> list[str]:
    return [
        str(schedule.id), schedule.target.describe(), str(schedule.action), schedule.when,
        str(schedule.state), when(schedule.next_fire_at), _last(latest), str(len(schedule.text)),
    ]  # fmt: skip


def schedule_json(schedule: Schedule, latest: Firing | None) -> JsonObject:
    target = schedule.target
    return {
        "id": schedule.id,
        "channel": target.channel,
        "account": target.account_id,
        "chat": target.chat_id,
        "chat_type": str(target.chat_type),
        "topic": target.topic_id,
        "user": target.user_id,
        "action": str(schedule.action),
        "at": iso(schedule.at),
        "cron": schedule.cron,
        "timezone": schedule.timezone,
        "misfire_grace_s": schedule.misfire_grace_s,
        "state": str(schedule.state),
        "next_fire_at": iso(schedule.next_fire_at),
        "created_by": schedule.created_by,
        "created_at": iso(schedule.created_at),
        "last": None if latest is None else firing_json(latest),
        "text_length": len(schedule.text),
    }


def firing_json(firing: Firing) -> JsonObject:
    return {
        "due_at": iso(firing.due_at),
        "outcome": str(firing.outcome),
        "replica": firing.replica,
        "delivery_id": firing.delivery_id,
        "detail": firing.detail,
        "at": iso(firing.at),
    }


async def schedule_add(args: argparse.Namespace, settings: Settings) -> int:
    if (args.text is None) == (args.run_agent is None):
        raise CommandFailed("give either --text or --run-agent", EXIT_FAILED)
    if args.channel not in settings.channels.enabled():
        raise CommandFailed(f"--channel: channel {args.channel!r} is not enabled", EXIT_FAILED)
    action = ScheduleAction.MESSAGE if args.text is not None else ScheduleAction.AGENT
    async with opened_store(settings) as store:
        target = await _target(args, store)
        try:
            made = await ScheduleBook(lambda: settings, store).create(
                target, at=args.at, cron=args.cron, timezone=args.tz, action=action,
                text=args.text if args.text is not None else args.run_agent,
                actor=operator_actor(), misfire_grace_s=args.misfire_grace,
            )  # fmt: skip
        except ScheduleRefused as exc:
            raise CommandFailed(str(exc), EXIT_FAILED) from None
    if args.json:
        print_json(schedule_json(made, None))
    else:
        say(f"schedule {made.id}: {made.when}, first {when(made.next_fire_at)} UTC")
    return EXIT_OK


async def _target(args: argparse.Namespace, store: Store) -> ScheduleTarget:
    """The chat's account and type from the journal unless given (as ``send`` does)."""
    account: str | None = args.account
    chat_type = None if args.chat_type is None else ChatType(args.chat_type)
    if account is None or chat_type is None:
        directory = chats_of(store)
        known = None if directory is None else await directory.find(args.channel, args.chat)
        if known is None and chat_type is None:
            raise CommandFailed(
                f"chat {args.chat!r} on {args.channel} is unknown (nothing was received from it"
                " lately): name its --chat-type (dm or group)",
                EXIT_FAILED,
            )
        if known is not None:
            account = known.account_id if account is None else account
            chat_type = known.chat_type if chat_type is None else chat_type
    assert chat_type is not None  # noqa: S101 - refused above otherwise
    return ScheduleTarget(
        channel=args.channel, account_id=account or "", chat_id=args.chat, chat_type=chat_type,
        topic_id=args.topic, user_id=args.user,
    )  # fmt: skip


async def schedule_cancel(args: argparse.Namespace, settings: Settings) -> int:
    async with opened_store(settings) as store:
        try:
            cancelled = await ScheduleBook(lambda: settings, store).cancel(
                args.schedule_id, operator_actor()
            )
        except ScheduleRefused as exc:
            raise CommandFailed(str(exc).replace(" in this chat", ""), EXIT_FAILED) from None
    if args.json:
        print_json(schedule_json(cancelled, None))
    else:
        say(f"schedule {cancelled.id} cancelled")
    return EXIT_OK


def firing_lines(schedule: Schedule, firings: Sequence[Firing]) -> list[str]:
    """``switchboard trace schedule-ID``: the schedule and each firing with its delivery."""
    lines = [
        f"schedule {schedule.id}: {schedule.action} {schedule.when} in"
        f" {schedule.target.describe()}, {schedule.state}, next {when(schedule.next_fire_at)}",
        f"  created by {schedule.created_by} at {when(schedule.created_at)}",
    ]
    if not firings:
        lines.append("  no firings yet")
        return lines
    cells = [
        [
            when(f.due_at), str(f.outcome), f.delivery_id or NONE, f.replica,
            when(f.at), f.detail or "",
        ]
        for f in firings
    ]  # fmt: skip
    headers = ("DUE (UTC)", "OUTCOME", "DELIVERY", "REPLICA", "CLAIMED", "DETAIL")
    lines.append(table(headers, cells, indent="  "))
    lines.append("  (`switchboard trace DELIVERY` shows a delivery's platform calls)")
    return lines


async def trace_schedule(store: Store, name: str) -> tuple[JsonObject, str] | None:
    """``schedule-ID`` as ``trace`` takes it: the schedule and its firings; ``None`` for
    any other id (or no such schedule)."""
    number = name.removeprefix("schedule-")
    table_ = schedules_of(store)
    if number == name or not number.isdigit() or table_ is None:
        return None
    found = await table_.get(int(number))
    if found is None:
        return None
    firings = await table_.firings(found.id)
    latest = firings[0] if firings else None
    as_json = {**schedule_json(found, latest), "firings": [firing_json(f) for f in firings]}
    return as_json, "\n".join(firing_lines(found, firings))
