"""What every console page shares: the request's session, the page frame, notes after an
action, and refusals."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final
from urllib.parse import quote

from aiohttp import web

from bot.console.auth import Session, SessionSigner
from bot.console.context import ConsoleDeps
from bot.console.render import render
from bot.operator.actions import OperationRefused

DEPS: Final = web.AppKey("console_deps", ConsoleDeps)
CURRENT: Final = web.RequestKey("console_session", tuple[Session, SessionSigner])
"""The request's session and its signer, set by the guard before it calls the handler."""
NAV: Final = (
    ("overview", "/console/", "Overview"),
    ("conversations", "/console/conversations", "Conversations"),
    ("trace", "/console/trace", "Trace"),
    ("outbox", "/console/outbox", "Outbox"),
    ("access", "/console/access", "Access"),
    ("approvals", "/console/approvals", "Approvals"),
    ("schedules", "/console/schedules", "Schedules"),
    ("usage", "/console/usage", "Usage"),
    ("audit", "/console/audit", "Audit"),
)


def deps(request: web.Request) -> ConsoleDeps:
    return request.config_dict[DEPS]


def session(request: web.Request) -> Session:
    return request[CURRENT][0]


def page(request: web.Request, template: str, section: str, **context: object) -> web.Response:
    """A page in the frame: navigation, the operator's name, the CSRF token for its forms."""
    current, signer = request[CURRENT]
    frame: dict[str, object] = {
        "nav": NAV,
        "active": section,
        "operator": current.name,
        "csrf": signer.csrf_token(current),
        "note": request.query.get("note", "")[:300],
        "failed": request.query.get("failed", "")[:300],
    }
    return render(template, {**frame, **context})


def back(path: str, *, note: str = "", failed: str = "") -> web.HTTPSeeOther:
    """After an action: back to the page, saying what happened (303, so a reload is a GET)."""
    query = "&".join(
        f"{name}={quote(text, safe='')}"
        for name, text in (("note", note), ("failed", failed))
        if text
    )
    return web.HTTPSeeOther(f"{path}?{query}" if query else path)


@contextmanager
def refusals_go_back(path: str) -> Iterator[None]:
    """An action the operator actions refuse: back to the page ``path``, saying why."""
    try:
        yield
    except OperationRefused as exc:
        raise back(path, failed=str(exc)) from None


def refusal(status: int, message: str) -> web.Response:
    return render("refused.html", {"status_code": status, "message": message}, status=status)


async def form(request: web.Request) -> dict[str, str]:
    """The posted form's text fields (the guard has read it already)."""
    data = await request.post()
    return {name: value for name, value in data.items() if isinstance(value, str)}
