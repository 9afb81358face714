"""``/approve ID``, ``/reject ID [reason]`` and ``/edit ID {json}`` (design §24): decide the
request whose id is typed, never "the oldest pending one", with the same rules as its buttons.

A typed decision naming a request the book holds is taken by the route's approval step
(``step.py``) before the commands, so the resumed run carries the message; these handlers
answer the rest (an admin's pairing code, a usage mistake, an id nobody holds) and serve the
command list."""

from __future__ import annotations

import functools

from bot.approvals.book import ApprovalBook
from bot.approvals.step import person_of, resume, typed_decision
from bot.commands.admin import approve_pairing
from bot.commands.registry import Command, CommandCall, CommandRegistry
from bot.pipeline.access import Role
from bot.pipeline.lanes import Lanes
from bot.ports.agent import DecisionType

OFF = "Approvals are not available here (the store keeps none)."
USAGE = {
    "approve": "/approve ID",
    "reject": "/reject ID [reason]",
    "edit": "/edit ID {json}",
}


async def _decide(
    book: ApprovalBook | None, lanes: Lanes | None, choice: DecisionType, call: CommandCall
) -> str:
    approval_id, _, rest = call.raw_args.strip().partition(" ")
    if (
        choice == "approve"
        and call.role is Role.ADMIN
        and not await _is_approval(book, approval_id)
    ):
        reply = await approve_pairing(call)  # an access request's code (design §10)
        await call.env.store.audit.record(call.actor, "/approve", call.raw_args)
        return reply
    if book is None or lanes is None or not book.available:
        return OFF
    typed = typed_decision(choice, call.raw_args)
    if typed is None and choice == "approve" and rest.strip():
        return f"Usage: `{USAGE[choice]}`; to change the arguments use `/edit ID {{json}}`."
    if typed is None:
        return f"Usage: `{USAGE[choice]}` (the ID is on the request's message)."
    # A request the book holds was decided by the route's approval step (``step.py``), which
    # carries the message into the resumed run; this answers the rest the same way.
    verdict = await book.decide(*typed, person_of(call.message, call.role))
    if verdict.run is not None and verdict.resumption is not None:
        resume(lanes, verdict.run, verdict.resumption, ())
    return verdict.text


async def _is_approval(book: ApprovalBook | None, approval_id: str) -> bool:
    return book is not None and bool(approval_id) and await book.get(approval_id) is not None


def register_approval_commands(
    registry: CommandRegistry, book: ApprovalBook | None, lanes: Lanes | None
) -> None:
    """The typed decisions acting on ``book`` (``None``: a registry that only lists them)."""
    summaries = {
        "approve": "run the tool call waiting under this ID (admins: or an access request's code)",
        "reject": "refuse the tool call waiting under this ID (the reason goes to the agent)",
        "edit": "run the waiting tool call with these arguments instead",
    }
    choices: tuple[DecisionType, ...] = ("approve", "reject", "edit")
    for choice in choices:
        registry.add(
            Command(
                name=choice,
                usage=USAGE[choice],
                handler=functools.partial(_decide, book, lanes, choice),
                summary=summaries[choice],
            )
        )
