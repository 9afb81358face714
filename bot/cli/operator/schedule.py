"""``switchboard schedule list|add|cancel`` (design §19 "Schedules"): any chat's schedules,
against the configured store (``open_existing``), safe while the daemon runs.

``add`` only records: the daemon's ``schedules`` loop (any replica's) sees the new schedule
within a second. Like every operator view, ``list`` prints a schedule's text as its length
only. Its LAST column says how the newest firing went (``bot.schedules.views``, shared
with the console).
"""

from __future__ import annotations

import argparse

from bot.cli.operator.output import print_json, say, show
from bot.cli.operator.runner import EXIT_FAILED, opened_store, operator_actor
from bot.cli.options import CommandFailed
from bot.config.settings import Settings
from bot.exit_codes import EXIT_OK
from bot.messages import ChatType
from bot.operator.actions import OperationRefused
from bot.operator.labels import table, when
from bot.ports import Store
from bot.ports.chats import chats_of
from bot.ports.schedules import ScheduleAction, ScheduleRefused, ScheduleTarget
from bot.schedules.book import ScheduleBook
from bot.schedules.views import (
    HEADERS,
    cancel_schedule,
    latest_firing,
    schedule_cells,
    schedule_json,
)


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
                target,
                at=args.at,
                cron=args.cron,
                timezone=args.tz,
                action=action,
                text=args.text if args.text is not None else args.run_agent,
                actor=operator_actor(),
                misfire_grace_s=args.misfire_grace,
            )
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
        channel=args.channel,
        account_id=account or "",
        chat_id=args.chat,
        chat_type=chat_type,
        topic_id=args.topic,
        user_id=args.user,
    )


async def schedule_cancel(args: argparse.Namespace, settings: Settings) -> int:
    async with opened_store(settings) as store:
        try:
            cancelled = await cancel_schedule(
                lambda: settings, store, args.schedule_id, operator_actor()
            )
        except OperationRefused as exc:
            raise CommandFailed(str(exc), EXIT_FAILED) from None
    if args.json:
        print_json(schedule_json(cancelled, None))
    else:
        say(f"schedule {cancelled.id} cancelled")
    return EXIT_OK
