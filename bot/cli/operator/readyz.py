"""Asking the running daemon whether it is ready: ``GET /readyz`` on ``http.host:port``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, cast

import aiohttp

from bot.config.http import HttpSettings

READYZ_TIMEOUT_S: Final = 3.0

_WILDCARD_HOSTS: Final = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104


@dataclass(frozen=True, slots=True, kw_only=True)
class Readiness:
    """What the running daemon's ``/readyz`` said, or why it could not be asked."""

    url: str | None
    reachable: bool
    ready: bool
    reasons: tuple[str, ...]


def readyz_url(http: HttpSettings) -> str | None:
    """Where the daemon's ``/readyz`` is; ``None`` when the config gives no fixed address."""
    if not http.enabled or http.port == 0:
        return None
    host = _WILDCARD_HOSTS.get(http.host, http.host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{http.port}/readyz"


async def fetch_readiness(http: HttpSettings, timeout_s: float = READYZ_TIMEOUT_S) -> Readiness:
    url = readyz_url(http)
    if url is None:
        why = "http is disabled" if not http.enabled else "http.port is 0 (a random port)"
        reason = f"{why} in the config, so the daemon's readiness cannot be asked"
        return Readiness(url=None, reachable=False, ready=False, reasons=(reason,))
    try:
        body = await _get_json(url, timeout_s)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        reason = f"daemon not running or not reachable at {url} ({_failure(exc, timeout_s)})"
        return Readiness(url=url, reachable=False, ready=False, reasons=(reason,))
    return _parse_readyz(url, body)


def _failure(exc: Exception, timeout_s: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout_s:g} s"
    if isinstance(exc, aiohttp.ClientConnectorError):
        refused = isinstance(exc.os_error, ConnectionRefusedError)
        return "connection refused" if refused else str(exc.os_error)
    return str(exc) or type(exc).__name__


async def _get_json(url: str, timeout_s: float) -> object:
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as response:
        # 200 when ready and 503 with the reasons when not: both carry the JSON body.
        return cast(object, await response.json(content_type=None))


def _parse_readyz(url: str, body: object) -> Readiness:
    if isinstance(body, dict):
        fields = cast(dict[str, object], body)
        ready, reasons = fields.get("ready"), fields.get("reasons")
        if isinstance(ready, bool) and isinstance(reasons, list):
            found = tuple(str(reason) for reason in reasons)
            return Readiness(url=url, reachable=True, ready=ready, reasons=found)
    reason = f"unexpected answer from {url}; is that port really Switchboard's?"
    return Readiness(url=url, reachable=True, ready=False, reasons=(reason,))


def readiness_json(readiness: Readiness) -> dict[str, object]:
    return {
        "url": readiness.url,
        "reachable": readiness.reachable,
        "ready": readiness.ready,
        "reasons": list(readiness.reasons),
    }
