"""``/console/access``: pending pairing requests (approve, deny), users let in or blocked
(allow, deny), and the admins of the configuration. The actions are the CLI's and the chat
commands' (``bot.operator.actions``), audited as ``console:<name>``."""

from __future__ import annotations

from datetime import UTC, datetime

from aiohttp import web

from bot.console.pages import back, deps, form, page, refusals_go_back, session
from bot.operator.actions import approve_pairing, deny_pairing, set_user_status
from bot.operator.labels import USER_HEADERS, approved, status_change, user_cells
from bot.records import UserStatus

PATH = "/console/access"


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/access", _access)
    router.add_post("/access/approve", _approve)
    router.add_post("/access/deny", _deny)
    router.add_post("/access/user", _user)


async def _access(request: web.Request) -> web.Response:
    found = deps(request)
    settings = found.settings()
    policies = {name: settings.channel_policy(name) for name in settings.channels.enabled()}
    return page(
        request,
        "access.html",
        "access",
        pairings=await found.store.access.pending_pairings(datetime.now(UTC)),
        user_headers=USER_HEADERS,
        users=[user_cells(user) for user in await found.store.access.users()],
        admins=settings.access.admins,
        policies=policies,
    )


async def _approve(request: web.Request) -> web.Response:
    code = (await form(request)).get("code", "")
    with refusals_go_back(PATH):
        done = await approve_pairing(deps(request).store, code, session(request).actor)
    raise back(PATH, note=approved(done))


async def _deny(request: web.Request) -> web.Response:
    code = (await form(request)).get("code", "")
    with refusals_go_back(PATH):
        await deny_pairing(deps(request).store, code, session(request).actor)
    raise back(PATH, note=f"dropped access request {code.strip().upper()}")


async def _user(request: web.Request) -> web.Response:
    fields = await form(request)
    verb = fields.get("status", "")
    if verb not in ("allow", "deny"):
        raise back(PATH, failed="status must be allow or deny")
    status = UserStatus.APPROVED if verb == "allow" else UserStatus.DENIED
    channel, user = fields.get("channel", ""), fields.get("user", "")
    with refusals_go_back(PATH):
        await set_user_status(deps(request).store, channel, user, status, session(request).actor)
    raise back(PATH, note=f"{channel.strip()}:{user.strip()} {status_change(status)}")
