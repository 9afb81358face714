"""Decisions in chat, a step of the route (design §5, §24) before the chat commands and the
answers to questions: a press of an approval button, or a typed ``/approve ID``,
``/reject ID [reason]`` or ``/edit ID {json}`` naming a request the book holds. Each carries its
request's own id, so it decides that request and no other.

Approve and Reject decide at once (a reason goes with ``/reject ID reason``); Edit's button
answers the presser with the ``/edit`` command filled in with the current arguments. A press by
someone not allowed, or on a request already decided or expired, changes nothing and is told so
privately where the platform can (``OutboundText.private_to``); a typed decision is answered in
the chat, as a command is. The decision that decides a run's last pending request resumes the
run in its conversation's lane, carrying the message, so the journal holds it until the resumed
turn ends: after a crash, recovery replays it and the run goes on. Typed commands that name no
request (a pairing code, a usage mistake) are left to the commands (``commands.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from typing_extensions import override

from bot.approvals.book import ApprovalBook
from bot.approvals.permits import Person, may_decide
from bot.approvals.render import parse_button_payload
from bot.config.settings import BusyPolicy
from bot.messages import Destination, InboundMessage
from bot.pipeline.access import Role
from bot.pipeline.bus import Accepted
from bot.pipeline.lanes import Lanes, Resumption, TurnRequest
from bot.pipeline.route import Asked, RouteActions, RouteStep, Routing
from bot.ports.agent import Decision, DecisionType
from bot.ports.approvals import ApprovalRun, ApprovalState
from bot.records import ChatRef

logger = logging.getLogger(__name__)

APPROVAL = "approval"
"""The outcome of a press or command that decided (the inbound metric's ``outcome``)."""
APPROVAL_REFUSED = "approval_refused"

RoleOf = Callable[[InboundMessage], Role]
TYPED: dict[str, DecisionType] = {"approve": "approve", "reject": "reject", "edit": "edit"}
"""The commands that decide a request by its id, and their decisions."""


def person_of(message: InboundMessage, role: Role) -> Person:
    return Person(
        ref=message.user_ref,
        user_id=message.sender.id,
        name=message.sender.display_name or message.sender.id,
        admin=role is Role.ADMIN,
        chat=ChatRef(message.channel, message.account_id, message.chat_id),
    )


def typed_decision(choice: DecisionType, raw_args: str) -> tuple[str, Decision] | None:
    """``(approval id, decision)`` of ``/approve ID``, ``/reject ID [reason]`` or
    ``/edit ID {json}``; ``None`` when the arguments are not of that form."""
    approval_id, _, rest = raw_args.strip().partition(" ")
    rest = rest.strip()
    if not approval_id or (choice == "approve" and rest) or (choice == "edit" and not rest):
        return None
    decision = Decision(
        type=choice,
        args=rest if choice == "edit" else None,
        message=(rest or None) if choice == "reject" else None,
    )
    return approval_id, decision


def resume(
    lanes: Lanes, run: ApprovalRun, resumption: Resumption, items: tuple[Accepted, ...]
) -> None:
    """Queue the resumed run in its conversation's lane (never merged, never refused)."""
    request = TurnRequest(
        key=run.key,
        destination=Destination.of(run.key, run.chat_type),
        items=items,
        resumed=resumption,
    )
    lanes.submit(request, BusyPolicy.QUEUE)


class ApprovalPresses(RouteStep):
    def __init__(
        self, book: ApprovalBook, lanes: Lanes, actions: RouteActions, role_of: RoleOf
    ) -> None:
        self._book = book
        self._lanes = lanes
        self._actions = actions
        self._role_of = role_of

    @override
    async def route(self, item: Accepted, ctx: Routing) -> str | None:
        typed = await self._typed(ctx.asked)
        if typed is not None:
            return await self._decide(item, *typed, typed=True)
        button = item.message.button
        parsed = None if button is None else parse_button_payload(button.payload)
        if parsed is None:
            return None
        approval_id, choice = parsed
        if choice == "edit":
            person = person_of(item.message, self._role_of(item.message))
            return await self._edit(item, approval_id, person)
        return await self._decide(item, approval_id, _decision(choice), typed=False)

    async def _typed(self, asked: Asked | None) -> tuple[str, Decision] | None:
        """A typed decision naming a request the book holds."""
        choice = None if asked is None else TYPED.get(asked.command.name)
        if asked is None or choice is None or not self._book.available:
            return None
        typed = typed_decision(choice, asked.command.raw_args)
        if typed is None or await self._book.get(typed[0]) is None:
            return None
        return typed

    async def _decide(
        self, item: Accepted, approval_id: str, decision: Decision, *, typed: bool
    ) -> str:
        person = person_of(item.message, self._role_of(item.message))
        verdict = await self._book.decide(approval_id, decision, person)
        if not verdict.decided and item.recovered:
            verdict = await self._book.recovered(approval_id, person) or verdict
        if typed and verdict.text:  # a command is answered in the chat
            await self._actions.tell_sender(item, verdict.text)
        if verdict.run is not None and verdict.resumption is not None:
            resume(self._lanes, verdict.run, verdict.resumption, (item,))
            return APPROVAL
        if not typed and verdict.decided:
            await self._actions.tell_sender(item, verdict.text)
        elif not typed:
            await self._actions.tell_privately(item, verdict.text)
        await self._actions.finish(item, "approval decided" if verdict.decided else "approval")
        return APPROVAL if verdict.decided else APPROVAL_REFUSED

    async def _edit(self, item: Accepted, approval_id: str, person: Person) -> str:
        approval = await self._book.get(approval_id)
        refusal = None
        if approval is None or not may_decide(approval, person):
            refusal = "You are not allowed to decide on this request."
        elif approval.state is not ApprovalState.PENDING:
            refusal = f"That request was already {approval.state.value}."
        elif "edit" not in approval.allowed:
            refusal = "This request cannot be edited."
        if refusal is not None or approval is None:
            await self._actions.tell_privately(item, refusal or "")
            await self._actions.finish(item, "approval edit refused")
            return APPROVAL_REFUSED
        # In the chat: the command is copied from it (a private alert cannot be copied).
        await self._actions.tell_sender(item, self._book.edit_template(approval))
        await self._actions.finish(item, "approval edit asked")
        return APPROVAL


def _decision(choice: str) -> Decision:
    return Decision(type="approve" if choice == "approve" else "reject")
