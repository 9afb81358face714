"""Paused runs recorded straight into a store, as the book records them when a turn pauses: what
the operator surfaces (``switchboard approvals``, the console, ``trace``) find and decide."""

from __future__ import annotations

from datetime import timedelta

from bot.messages import ChatType, ConversationKey, utc_now
from bot.ports import Store
from bot.ports.agent import DecisionType
from bot.ports.approvals import Approval, ApprovalRun, ApprovalStore, approvals_of

CHAT = ConversationKey(channel="telegram", account_id="bot", chat_id="-100", topic_id=None)
ALL: tuple[DecisionType, ...] = ("approve", "edit", "reject")
EMAIL_ARGS = '{"to": "ada@example.com", "subject": "Grüße", "api_key": "sk-secret-1"}'


def paused_run(run_id: str, correlation: str, *, key: ConversationKey = CHAT) -> ApprovalRun:
    return ApprovalRun(
        id=run_id, key=key, chat_type=ChatType.GROUP, thread_id=f"th-{run_id}",
        correlation_id=correlation, created_at=utc_now(),
    )  # fmt: skip


def waiting(  # noqa: PLR0913 - one keyword per thing a test varies
    run: ApprovalRun,
    position: int = 0,
    *,
    tool: str = "send_email",
    args: str = EMAIL_ARGS,
    allowed: tuple[DecisionType, ...] = ALL,
    ttl: timedelta = timedelta(hours=1),
) -> Approval:
    return Approval(
        id=f"{run.id}a{position}", run_id=run.id, position=position, key=run.key,
        chat_type=run.chat_type, thread_id=run.thread_id, asker_id="u-ada", tool=tool,
        args=args, description=f"{tool} wants a person's yes", allowed=allowed,
        deciders="asker", created_at=run.created_at, expires_at=run.created_at + ttl,
    )  # fmt: skip


def approvals_in(store: Store) -> ApprovalStore:
    kept = approvals_of(store)
    assert kept is not None
    return kept


async def record(store: Store, run: ApprovalRun, *approvals: Approval) -> None:
    """The run and its approvals (one pending ``send_email`` when none are given)."""
    await approvals_in(store).add(run, list(approvals) or [waiting(run)])
