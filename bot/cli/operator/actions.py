"""``outbox list|retry|purge`` and ``pairing list|approve|deny``: the operator's hands on the
dead-letter queue and on access requests (design §8, §10).

Every change is written to the audit table as ``cli:<login name>``, like the chat admin
commands are (design §9), through the actions (``bot.operator.actions``) the browser console
and the chat commands use too. The running
daemon needs no signal: its outbox worker looks for due rows at least every ``IDLE_POLL_S``
seconds, and access checks read the store on each message.
"""

from __future__ import annotations

import argparse

from bot.cli.operator.output import print_json, say, show
from bot.cli.operator.runner import EXIT_FAILED, opened_store, operator_actor
from bot.cli.options import CommandFailed
from bot.config.settings import Settings
from bot.delivery.outbox import IDLE_POLL_S
from bot.exit_codes import EXIT_OK
from bot.messages import utc_now
from bot.operator.actions import (
    OperationRefused,
    approve_pairing,
    deny_pairing,
    purge_rows,
    retry_dead,
)
from bot.operator.labels import (
    OUTBOX_HEADERS,
    PAIRING_HEADERS,
    approved,
    outbox_cells,
    outbox_json,
    pairing_cells,
    pairing_json,
    table,
)
from bot.records import OutboxState


def _done(args: argparse.Namespace, message: str, **facts: object) -> None:
    if args.json:
        print_json({"done": message, **facts})
    else:
        say(message)


# --------------------------------------------------------------------------- outbox


async def outbox_list(args: argparse.Namespace, settings: Settings) -> int:
    state = None if args.state is None else OutboxState(args.state)
    async with opened_store(settings) as store:
        rows = await store.outbox.listing(state, limit=args.limit)
    if args.json:
        print_json([outbox_json(row) for row in rows])
    elif not rows:
        say("no outbox rows" + (f" in state {state}" if state else ""))
    else:
        show(table(OUTBOX_HEADERS, [outbox_cells(row) for row in rows]))
    return EXIT_OK


async def outbox_retry(args: argparse.Namespace, settings: Settings) -> int:
    ids: list[int] = args.row_ids
    async with opened_store(settings) as store:
        done = await retry_dead(store, ids, operator_actor())
    revived, refused = done.revived, done.refused
    message = f"revived {revived} dead row(s); the daemon sends them within {IDLE_POLL_S:g} s"
    for row_id, why in refused.items():
        message += f"\nrow {row_id} not revived: {why}"
    _done(args, message, revived=revived, refused={str(k): v for k, v in refused.items()})
    return EXIT_FAILED if refused else EXIT_OK


async def outbox_purge(args: argparse.Namespace, settings: Settings) -> int:
    state = OutboxState(args.state)
    if state is OutboxState.PENDING:
        raise CommandFailed(
            "refusing to purge pending rows: they are replies still to be delivered"
            " (see them with `switchboard outbox list --state pending`)",
            EXIT_FAILED,
        )
    async with opened_store(settings) as store:
        purged = await purge_rows(store, state, operator_actor())
    _done(args, f"purged {purged} {state} row(s)", purged=purged)
    return EXIT_OK


# --------------------------------------------------------------------------- pairing


async def pairing_list(args: argparse.Namespace, settings: Settings) -> int:
    async with opened_store(settings) as store:
        requests = await store.access.pending_pairings(utc_now())
    if args.json:
        print_json([pairing_json(request) for request in requests])
    elif not requests:
        say("no pending access requests")
    else:
        show(table(PAIRING_HEADERS, [pairing_cells(request) for request in requests]))
    return EXIT_OK


async def pairing_approve(args: argparse.Namespace, settings: Settings) -> int:
    async with opened_store(settings) as store:
        try:
            request = await approve_pairing(store, args.code, operator_actor())
        except OperationRefused as exc:
            raise CommandFailed(str(exc), EXIT_FAILED) from None
    _done(args, approved(request), request=pairing_json(request))
    return EXIT_OK


async def pairing_deny(args: argparse.Namespace, settings: Settings) -> int:
    code = args.code.strip().upper()
    async with opened_store(settings) as store:
        try:
            await deny_pairing(store, code, operator_actor())
        except OperationRefused as exc:
            raise CommandFailed(str(exc), EXIT_FAILED) from None
    _done(args, f"dropped access request {code}")
    return EXIT_OK
