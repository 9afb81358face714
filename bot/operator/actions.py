"""The operator's actions on the store, written once for every surface that offers them: the
CLI (``cli:<login>``), the browser console (``console:<name>``) and the chat admin commands
(the admin's ``channel:user``).

Each changes the store and writes the audit row naming its actor, so every surface leaves the
same trace (design §9, §23). The chat commands pass ``audit=False``: their registry already
audits every admin command as it was typed (``/approve CODE``), and one action is one row.
They return what happened and raise ``OperationRefused`` for a request that cannot be done;
wording, exit codes and pages are their callers'.
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


# --------------------------------------------------------------------------- outbox


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


# --------------------------------------------------------------------------- access


async def approve_pairing(
    store: Store, code: str, actor: str, *, audit: bool = True
) -> PairingRequest:
    """Let the requester in (the code works once)."""
    code = code.strip().upper()
    request = await store.access.take_pairing(code, utc_now())
    if request is None:
        raise _no_request(code)
    await store.access.set_status(request.channel, request.user_id, UserStatus.APPROVED, actor)
    if audit:
        detail = f"{code} {request.channel}:{request.user_id}"
        await store.audit.record(actor, "pairing approve", detail)
    return request


async def deny_pairing(store: Store, code: str, actor: str) -> None:
    code = code.strip().upper()
    if not await store.access.drop_pairing(code):
        raise _no_request(code)
    await store.audit.record(actor, "pairing deny", code)


async def set_user_status(  # noqa: PLR0913 - who, to what, by whom; a keyword option
    store: Store, channel: str, user_id: str, status: UserStatus, actor: str, *, audit: bool = True
) -> None:
    """Let a user talk to the bot, or block them (``/allow``, ``/deny``)."""
    channel, user_id = channel.strip(), user_id.strip()
    if not channel or not user_id:
        raise OperationRefused("both the channel and the user id are needed")
    await store.access.set_status(channel, user_id, status, actor)
    if audit:
        verb = "allow" if status is UserStatus.APPROVED else "deny"
        await store.audit.record(actor, f"user {verb}", f"{channel}:{user_id}")


def _no_request(code: str) -> OperationRefused:
    return OperationRefused(f"no pending request with code {code} (it may have expired)")
