"""Console sessions: signed cookies, their CSRF tokens, and the login rate limit.

A session cookie carries the operator's name, its expiry and a random nonce, signed with an
HMAC key derived from ``console.token``: it needs no table, works on every replica that
shares the token, survives a restart, and changing the token ends every session. Logging out
forgets the nonce on this replica (``revoke``) and clears the cookie. The CSRF token of a
session is an HMAC of its nonce, so a page cannot be made to act without having been served
to the session first.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

COOKIE_NAME: Final = "switchboard_console"
COOKIE_PATH: Final = "/console"
_VERSION: Final = "v1"
_KEY_CONTEXT: Final = b"switchboard-console-session:"
LOGIN_WINDOW_S: Final = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    name: str
    """Who logged in, as the audit table names them: ``console:<name>``."""
    nonce: str
    expires_at: float

    @property
    def actor(self) -> str:
        return f"console:{self.name}"


def clean_name(text: str) -> str:
    """A login name fit for the audit table: letters, digits and ``._@-``, at most 64."""
    kept = "".join(ch for ch in text.strip() if ch.isalnum() or ch in "._@-")[:64]
    return kept or "operator"


class SessionSigner:
    """Issues and checks session cookies under one token (a new token, a new signer)."""

    def __init__(self, token: str, clock: Callable[[], float] = time.time) -> None:
        self._key = hashlib.sha256(_KEY_CONTEXT + token.encode()).digest()
        self._clock = clock
        self._revoked: dict[str, float] = {}

    def issue(self, name: str, ttl_s: float) -> tuple[Session, str]:
        session = Session(
            name=clean_name(name), nonce=secrets.token_urlsafe(18),
            expires_at=self._clock() + ttl_s,
        )  # fmt: skip
        encoded = base64.urlsafe_b64encode(session.name.encode()).decode().rstrip("=")
        body = f"{_VERSION}.{encoded}.{int(session.expires_at)}.{session.nonce}"
        return session, f"{body}.{self._sign(body)}"

    def verify(self, cookie: str | None) -> Session | None:
        """The session a cookie stands for; ``None`` when forged, expired or logged out."""
        if not cookie:
            return None
        body, _, signature = cookie.rpartition(".")
        if not body or not hmac.compare_digest(signature, self._sign(body)):
            return None
        parts = body.split(".")
        if len(parts) != 4 or parts[0] != _VERSION or not parts[2].isdigit():
            return None
        expires_at = float(parts[2])
        if expires_at <= self._clock() or parts[3] in self._revoked:
            return None
        padded = parts[1] + "=" * (-len(parts[1]) % 4)
        try:
            name = base64.urlsafe_b64decode(padded).decode()
        except (ValueError, UnicodeDecodeError):
            return None
        return Session(name=name, nonce=parts[3], expires_at=expires_at)

    def revoke(self, session: Session) -> None:
        now = self._clock()
        self._revoked = {n: at for n, at in self._revoked.items() if at > now}
        self._revoked[session.nonce] = session.expires_at

    def csrf_token(self, session: Session) -> str:
        return self._sign(f"csrf:{session.nonce}")

    def csrf_valid(self, session: Session, offered: str | None) -> bool:
        return bool(offered) and hmac.compare_digest(offered or "", self.csrf_token(session))

    def _sign(self, text: str) -> str:
        return hmac.new(self._key, text.encode(), hashlib.sha256).hexdigest()[:43]


class LoginLimiter:
    """At most ``per_minute`` failed logins per client address in any 60 s."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def blocked(self, client: str, per_minute: int) -> float | None:
        """Seconds until ``client`` may try again; ``None``: it may now."""
        now = self._clock()
        failures = self._failures.get(client)
        if failures is None:
            return None
        while failures and failures[0] <= now - LOGIN_WINDOW_S:
            failures.popleft()
        if not failures:
            del self._failures[client]
            return None
        if len(failures) < per_minute:
            return None
        return max(1.0, failures[0] + LOGIN_WINDOW_S - now)

    def failed(self, client: str) -> None:
        if len(self._failures) > 10_000:  # an address sweep: forget the oldest
            self._failures.pop(next(iter(self._failures)))
        self._failures.setdefault(client, deque()).append(self._clock())
