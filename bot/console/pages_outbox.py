"""``/console/outbox``: pending rows and dead letters; retry one or all dead letters, purge
sent or dead rows (confirmed by typing the state). The actions are the CLI's
(``bot.operator.actions``), audited as ``console:<name>``."""

from __future__ import annotations

from aiohttp import web

from bot.console.pages import back, deps, form, page, session
from bot.operator.actions import purge_rows, retry_dead
from bot.operator.labels import describe_delivery
from bot.ports.push import push_kind
from bot.records import OutboxState

PATH = "/console/outbox"
LISTED = 100


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/outbox", _outbox)
    router.add_post("/outbox/retry", _retry)
    router.add_post("/outbox/purge", _purge)


async def _outbox(request: web.Request) -> web.Response:
    store = deps(request).store
    counts = await store.outbox.counts()
    listed = {
        state: await store.outbox.listing(state, limit=LISTED)
        for state in (OutboxState.PENDING, OutboxState.DEAD)
    }
    return page(
        request,
        "outbox.html",
        "outbox",
        counts={str(s): n for s, n in counts.items()},
        pending=listed[OutboxState.PENDING],
        dead=listed[OutboxState.DEAD],
        describe=describe_delivery,
        push_kind=push_kind,
        listed=LISTED,
    )


async def _retry(request: web.Request) -> web.Response:
    fields = await form(request)
    found = deps(request)
    text = fields.get("row_id", "").strip()
    if text and not text.isdigit():
        raise back(PATH, failed=f"not a row id: {text!r}")
    ids = [int(text)] if text else []
    if not ids and fields.get("all") != "yes":
        raise back(PATH, failed="name a row, or retry all dead letters")
    done = await retry_dead(found.store, ids, session(request).actor)
    if done.revived:
        if found.repoll is not None:
            found.repoll()
        await found.store.leases.wake(["*"])  # the chat's holder sends it, on any replica
    refused = "; ".join(f"row {row_id}: {why}" for row_id, why in done.refused.items())
    raise back(PATH, note=f"revived {done.revived} dead row(s)", failed=refused)


async def _purge(request: web.Request) -> web.Response:
    fields = await form(request)
    state_text = fields.get("state", "")
    if state_text not in ("sent", "dead"):
        raise back(PATH, failed="purge takes sent or dead rows")
    if fields.get("confirm", "").strip().lower() != state_text:
        raise back(PATH, failed=f"type {state_text} in the box to confirm the purge")
    purged = await purge_rows(deps(request).store, OutboxState(state_text), session(request).actor)
    raise back(PATH, note=f"purged {purged} {state_text} row(s)")
