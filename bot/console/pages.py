"""What every console page shares: the request's session, the page frame, notes after an
action, and refusals."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Final
from urllib.parse import quote

from aiohttp import web

from bot.console.auth import Session, SessionSigner
from bot.console.context import ConsoleDeps
from bot.console.render import render

DEPS: Final = web.AppKey("console_deps", ConsoleDeps)
CURRENT: Final[ContextVar[tuple[Session, SessionSigner]]] = ContextVar("console_session")
"""The request's session and its signer, set by the guard for the handler it calls (each
request runs in its own task, so in its own context)."""
NAV: Final = (
    ("overview", "/console/", "Overview"),
    ("conversations", "/console/conversations", "Conversations"),
    ("trace", "/console/trace", "Trace"),
    ("outbox", "/console/outbox", "Outbox"),
    ("access", "/console/access", "Access"),
    ("schedules", "/console/schedules", "Schedules"),
    ("audit", "/console/audit", "Audit"),
)


def deps(request: web.Request) -> ConsoleDeps:
    return request.config_dict[DEPS]


def session(_request: web.Request) -> Session:
    return CURRENT.get()[0]


def page(request: web.Request, template: str, section: str, **context: object) -> web.Response:
    """A page in the frame: navigation, the operator's name, the CSRF token for its forms."""
    current, signer = CURRENT.get()
    frame: dict[str, object] = {
        "nav": NAV, "active": section, "operator": current.name,
        "csrf": signer.csrf_token(current), "note": request.query.get("note", "")[:300],
        "failed": request.query.get("failed", "")[:300],
    }  # fmt: skip
    return render(template, {**frame, **context})


def back(path: str, *, note: str = "", failed: str = "") -> web.HTTPSeeOther:
    """After an action: back to the page, saying what happened (303, so a reload is a GET)."""
    query = "&".join(
        f"{name}={quote(text, safe='')}" for name, text in (("note", note), ("failed", failed))
        if text
    )  # fmt: skip
    return web.HTTPSeeOther(f"{path}?{query}" if query else path)


def refusal(status: int, message: str) -> web.Response:
    return render("refused.html", {"status_code": status, "message": message}, status=status)


async def form(request: web.Request) -> dict[str, str]:
    """The posted form's text fields (the guard has read it already)."""
    data = await request.post()
    return {name: value for name, value in data.items() if isinstance(value, str)}
