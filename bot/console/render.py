"""Templates (Jinja2, autoescaped) and static assets, both shipped inside the package."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Final

import jinja2
from aiohttp import web

from bot.console.markdown import to_html
from bot.operator.labels import clip, when

STATIC_TYPES: Final = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".txt": "text/plain",
}
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline';"
        " img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _ago(at: datetime | None) -> str:
    if at is None:
        return "-"
    seconds = max(0, int((datetime.now(UTC) - at).total_seconds()))
    if seconds < 60:
        return f"{seconds}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m ago"
    return f"{seconds // 3600}h ago"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bot.console", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = when
    env.filters["clip"] = clip
    env.filters["ago"] = _ago
    env.filters["markdown"] = to_html
    return env


def render(template: str, context: dict[str, object], *, status: int = 200) -> web.Response:
    text = environment().get_template(template).render(context)
    return web.Response(
        status=status,
        text=text,
        content_type="text/html",
        charset="utf-8",
        headers=SECURITY_HEADERS,
    )


@cache
def static_file(name: str) -> bytes | None:
    """A file of ``bot/console/static`` (read once), ``None`` for anything else."""
    if "/" in name or name.startswith(".") or not any(name.endswith(s) for s in STATIC_TYPES):
        return None
    resource = resources.files("bot.console").joinpath("static", name)
    return resource.read_bytes() if resource.is_file() else None


def static_response(name: str) -> web.Response:
    body = static_file(name)
    if body is None:
        raise web.HTTPNotFound
    suffix = name[name.rfind(".") :]
    headers = {**SECURITY_HEADERS, "Cache-Control": "private, max-age=3600"}
    return web.Response(body=body, content_type=STATIC_TYPES[suffix], headers=headers)
