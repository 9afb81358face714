"""The operator's actions on the store, shared by the CLI (``actions``) and the browser
console (``bot.console``): each changes the store and writes the audit row naming its actor
(``cli:<login>``, ``console:<name>``), so both leave the same trace (design §9, §23).

They return what happened and raise ``OperationRefused`` for a request that cannot be done;
printing, exit codes and pages are their callers'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.messages import utc_now
from bot.ports import Store
from bot.records import OutboxState, PairingRequest, UserStatus


class OperationRefused(Exception):
    """The request names nothing that can be acted on; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Revived:
    revived: int
    refused: dict[int, str] = field(default_factory=dict)
    """Rows asked for that are not dead letters, and why."""


async def retry_dead(store: Store, row_ids: Sequence[int], actor: str) -> Revived:
    """Move dead rows back to pending (all of them when ``row_ids`` is empty)."""
    refused = await _not_dead(store, row_ids)
    wanted = [row_id for row_id in row_ids if row_id not in refused]
    revived = 0
    if wanted or not row_ids:
        revived = await store.outbox.revive(wanted or None)
    detail = f"{revived} revived" + (f" of rows {' '.join(map(str, row_ids))}" if row_ids else "")
    await store.audit.record(actor, "outbox retry", detail)
    return Revived(revived=revived, refused=refused)


async def _not_dead(store: Store, row_ids: Sequence[int]) -> dict[int, str]:
    refused: dict[int, str] = {}
    for row_id in row_ids:
        row = await store.outbox.get(row_id)
        if row is None:
            refused[row_id] = "no such row"
        elif row.state is not OutboxState.DEAD:
            refused[row_id] = f"it is {row.state}, not dead"
    return refused


async def purge_rows(store: Store, state: OutboxState, actor: str) -> int:
    """Forget every sent or dead row; pending ones are replies still to go, never purged."""
    if state is OutboxState.PENDING:
        raise OperationRefused(
            "refusing to purge pending rows: they are replies still to be delivered"
        )
    purged = await store.outbox.purge(state)
    await store.audit.record(actor, "outbox purge", f"{purged} {state} rows")
    return purged


async def approve_pairing(store: Store, code: str, actor: str) -> PairingRequest:
    """Let the requester in (the code works once)."""
    code = code.strip().upper()
    request = await store.access.take_pairing(code, utc_now())
    if request is None:
        raise _no_request(code)
    await store.access.set_status(request.channel, request.user_id, UserStatus.APPROVED, actor)
    await store.audit.record(
        actor, "pairing approve", f"{code} {request.channel}:{request.user_id}"
    )
    return request


async def deny_pairing(store: Store, code: str, actor: str) -> None:
    code = code.strip().upper()
    if not await store.access.drop_pairing(code):
        raise _no_request(code)
    await store.audit.record(actor, "pairing deny", code)


async def set_user_status(
    store: Store, channel: str, user_id: str, status: UserStatus, actor: str
) -> None:
    """``/allow`` and ``/deny`` of the chat admin commands, from outside a chat."""
    if not channel.strip() or not user_id.strip():
        raise OperationRefused("both the channel and the user id are needed")
    await store.access.set_status(channel.strip(), user_id.strip(), status, actor)
    verb = "allow" if status is UserStatus.APPROVED else "deny"
    await store.audit.record(actor, f"user {verb}", f"{channel.strip()}:{user_id.strip()}")


def _no_request(code: str) -> OperationRefused:
    return OperationRefused(f"no pending request with code {code} (it may have expired)")
