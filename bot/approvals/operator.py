"""Deciding an approval from outside chat (design §24): the console and ``switchboard approvals``
record the decision through the book, so chat's rules apply (decided once, only while pending
and unexpired, only a decision the tool allows, an edit is a JSON object whose ``•••`` values
keep the original) and the book audits it under the operator (``console:<name>``,
``cli:<user>``).

Nothing is sent from here and no run is resumed: the daemon's approvals sweep (every
``SWEEP_INTERVAL_S``, on the replica holding the chat) edits the request messages and resumes
the run once none of its approvals is pending, so this works from the command line beside a
running daemon and from any replica's console alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry

from bot.approvals.book import ApprovalBook
from bot.approvals.metrics import ApprovalMetrics
from bot.approvals.permits import OPERATOR_CHANNELS, Person
from bot.config.settings import Settings
from bot.operator.actions import OperationRefused
from bot.ports import Store
from bot.ports.agent import Decision
from bot.ports.approvals import ApprovalState, approvals_of
from bot.records import OutboxItem

VERBS = {
    ApprovalState.APPROVED: "approved",
    ApprovalState.EDITED: "approved with new arguments",
    ApprovalState.REJECTED: "rejected",
}


def operator_person(actor: str) -> Person:
    """The operator ``actor`` names (``console:<name>``, ``cli:<user>``): always allowed."""
    surface, _, name = actor.partition(":")
    if surface not in OPERATOR_CHANNELS or not name:
        raise ValueError(f"an operator is console:<name> or cli:<user>, not {actor!r}")
    return Person(ref=actor, user_id=name, name=name, admin=True)


async def _nothing_recorded(
    items: Sequence[OutboxItem], *, finishes: Sequence[int] = ()
) -> list[int]:
    """The book records request edits only for a channel it can see: here it sees none."""
    del items, finishes
    return []


async def decide_as_operator(  # noqa: PLR0913 - the decision and whom to count it for
    settings: Callable[[], Settings],
    store: Store,
    approval_id: str,
    decision: Decision,
    actor: str,
    *,
    metrics: ApprovalMetrics | None = None,
) -> str:
    """Decide one approval as ``actor``; the sentence saying what was decided and what
    happens next. Raises ``OperationRefused`` saying why nothing changed (no such request,
    already decided by whom and when, expired, a decision the tool does not allow, bad JSON).

    ``metrics``: the daemon's, in its console; a throwaway registry on the command line."""
    table = approvals_of(store)
    if table is None:
        raise OperationRefused("this store keeps no approvals")
    book = ApprovalBook(
        settings,
        store,
        _nothing_recorded,
        lambda _channel: None,
        metrics or ApprovalMetrics(CollectorRegistry()),
    )
    wanted = approval_id.strip()
    verdict = await book.decide(wanted, decision, operator_person(actor))
    if not verdict.decided:
        raise OperationRefused(verdict.text)
    found = await table.get(wanted)
    run = None if found is None else await table.run(found.run_id)
    if found is None or run is None:
        return verdict.text
    waiting = sum(1 for each in run[1] if each.state is ApprovalState.PENDING)
    after = (
        f"its run waits for {waiting} more decision(s)"
        if waiting
        else "the daemon resumes its run within a few seconds"
    )
    verb = VERBS.get(found.state, str(found.state))
    return f"{verb} {found.tool} (ID {found.id}) in {found.key.describe()}; {after}"
