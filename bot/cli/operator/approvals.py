"""``switchboard approvals list|approve|reject|edit`` (design §24): the tool calls waiting for a
person, decided from the shell against the configured store (SQLite or PostgreSQL), safe
while the daemon runs.

A decision is recorded through the approvals book (``bot.approvals.operator``), with chat's
rules, and audited as ``cli:<login>``; the running daemon's approvals sweep edits the request
messages and resumes the run within seconds. Arguments are shown masked and folded as in
chat (``--json``: masked, whole). The approvals room loads only when one of these runs, so
building the parser stays cheap for every other command.
"""

from __future__ import annotations

import argparse

from bot.cli.operator.output import print_json, say, show
from bot.cli.operator.runner import EXIT_FAILED, add_leaf, opened_store, operator_actor, positive
from bot.cli.options import CommandFailed, Subcommands
from bot.config.settings import Settings
from bot.exit_codes import EXIT_OK
from bot.ports.agent import Decision

HANDLERS = "bot.cli.operator.approvals"
STATES = ("pending", "approved", "edited", "rejected", "expired", "cancelled", "all")
"""``bot.ports.approvals.ApprovalState`` values and ``all``, spelled out for the parser."""
NO_APPROVALS = "this store keeps no approvals"


def add_commands(commands: Subcommands) -> None:
    approvals = commands.add_parser(
        "approvals", help="list and decide tool calls waiting for a person's approval"
    )
    actions = approvals.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = add_leaf(
        actions, "list", "approval requests, newest first", f"{HANDLERS}:approvals_list"
    )
    listing.add_argument(
        "--state", choices=STATES, default="pending", help="only this state (pending)"
    )
    listing.add_argument("--limit", type=positive, default=50, help="at most N (50)")
    approve = add_leaf(
        actions, "approve", "let the waiting tool call run", f"{HANDLERS}:approvals_approve"
    )
    approve.add_argument("approval_id", metavar="ID", help="as `approvals list` shows it")
    reject = add_leaf(
        actions, "reject", "refuse the waiting tool call", f"{HANDLERS}:approvals_reject"
    )
    reject.add_argument("approval_id", metavar="ID", help="as `approvals list` shows it")
    reject.add_argument("--reason", metavar="TEXT", help="why (the agent reads it)")
    edit = add_leaf(
        actions, "edit", "run the tool call with other arguments", f"{HANDLERS}:approvals_edit"
    )
    edit.add_argument("approval_id", metavar="ID", help="as `approvals list` shows it")
    edit.add_argument(
        "new_args", metavar="JSON", help='a JSON object; a value left as "•••" keeps the original'
    )


async def approvals_list(args: argparse.Namespace, settings: Settings) -> int:
    from bot.approvals.views import HEADERS, approval_cells, approval_json  # noqa: PLC0415
    from bot.operator.labels import table  # noqa: PLC0415 - only when run (see above)
    from bot.ports.approvals import ApprovalState, approvals_of  # noqa: PLC0415

    state = None if args.state == "all" else ApprovalState(args.state)
    async with opened_store(settings) as store:
        kept = approvals_of(store)
        if kept is None:
            raise CommandFailed(NO_APPROVALS, EXIT_FAILED)
        found = await kept.listed(state=state, limit=args.limit)
    config = settings.agent.approvals
    if args.json:
        print_json([approval_json(approval, config) for approval in found])
    elif not found:
        say(f"no {args.state} approval requests" if state else "no approval requests")
    else:
        show(table(HEADERS, [approval_cells(approval, config) for approval in found]))
    return EXIT_OK


async def approvals_approve(args: argparse.Namespace, settings: Settings) -> int:
    return await _decide(args, settings, Decision(type="approve"))


async def approvals_reject(args: argparse.Namespace, settings: Settings) -> int:
    reason = (args.reason or "").strip() or None
    return await _decide(args, settings, Decision(type="reject", message=reason))


async def approvals_edit(args: argparse.Namespace, settings: Settings) -> int:
    return await _decide(args, settings, Decision(type="edit", args=args.new_args))


async def _decide(args: argparse.Namespace, settings: Settings, decision: Decision) -> int:
    """Exit status 1, saying why, when nothing was decided."""
    from bot.approvals.operator import decide_as_operator  # noqa: PLC0415 - only when run
    from bot.approvals.views import approval_json  # noqa: PLC0415
    from bot.operator.actions import OperationRefused  # noqa: PLC0415
    from bot.ports.approvals import approvals_of  # noqa: PLC0415

    async with opened_store(settings) as store:
        kept = approvals_of(store)
        if kept is None:
            raise CommandFailed(NO_APPROVALS, EXIT_FAILED)
        try:
            said = await decide_as_operator(
                lambda: settings, store, args.approval_id, decision, operator_actor()
            )
        except OperationRefused as exc:
            raise CommandFailed(str(exc), EXIT_FAILED) from None
        decided = await kept.get(args.approval_id.strip())
    if args.json:
        shown = None if decided is None else approval_json(decided, settings.agent.approvals)
        print_json({"done": said, "approval": shown})
    else:
        say(said)
    return EXIT_OK
