"""Console sessions: signed cookies, their CSRF tokens, and the login rate limit.

A session cookie carries the operator's name, its expiry and a random nonce, signed by
``itsdangerous`` (``URLSafeSerializer``, HMAC-SHA256, salted) with a key derived from
``console.token``: it works on every replica that shares the token, survives a restart, and
changing the token ends every session. The expiry is fixed when the session is issued and
checked here (a reload that changes ``console.session_ttl_s`` leaves running sessions as
they were). Logging out records the nonce in the store until the session would have expired
(``Revocations``), so the cookie stays dead after a restart and on every replica; the cookie
is cleared too. The CSRF token of a session is the signature of its nonce under another salt,
so a page cannot be made to act without having been served to the session first.

The login limit counts failures per client address: the peer, or behind a proxy listed in
``console.trusted_proxies`` the address that proxy put in ``X-Forwarded-For``. Past the limit,
wrong tries get 429, but the right token or a valid link still logs in: the operator can never
be locked out (a token of at least 16 characters cannot be guessed at any rate anyway).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network
from typing import Final

from itsdangerous import BadData, Signer, URLSafeSerializer

from bot.ports import Store
from bot.ports.console_sessions import console_sessions_of

COOKIE_NAME: Final = "switchboard_console"
COOKIE_PATH: Final = "/console"
_KEY_CONTEXT: Final = b"switchboard-console-session:"
_SESSION_SALT: Final = "switchboard-console-session"
_CSRF_SALT: Final = "switchboard-console-csrf"
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
        key = hashlib.sha256(_KEY_CONTEXT + token.encode()).digest()
        self._cookies = URLSafeSerializer(
            key, salt=_SESSION_SALT, signer_kwargs={"digest_method": hashlib.sha256}
        )
        self._csrf = Signer(key, salt=_CSRF_SALT, digest_method=hashlib.sha256)
        self._clock = clock

    def issue(self, name: str, ttl_s: float) -> tuple[Session, str]:
        session = Session(
            name=clean_name(name),
            nonce=secrets.token_urlsafe(18),
            expires_at=float(int(self._clock() + ttl_s)),
        )
        body = {"name": session.name, "nonce": session.nonce, "exp": int(session.expires_at)}
        return session, self._cookies.dumps(body)

    def verify(self, cookie: str | None) -> Session | None:
        """The session a cookie stands for; ``None`` when forged, expired or logged out."""
        if not cookie:
            return None
        try:
            body = self._cookies.loads(cookie)
        except BadData:
            return None
        if not isinstance(body, dict):
            return None
        name, nonce, expires = body.get("name"), body.get("nonce"), body.get("exp")
        if not isinstance(name, str) or not isinstance(nonce, str) or type(expires) is not int:
            return None
        if expires <= self._clock():
            return None
        return Session(name=name, nonce=nonce, expires_at=float(expires))

    def csrf_token(self, session: Session) -> str:
        return self._csrf.get_signature(session.nonce).decode()

    def csrf_valid(self, session: Session, offered: str | None) -> bool:
        """Compared as text: base64 decoding would let a token with other spare bits pass."""
        expected = self.csrf_token(session).encode()
        return bool(offered) and hmac.compare_digest((offered or "").encode(), expected)


class Revocations:
    """Logged-out sessions: in the store when it keeps them (``bot.ports.console_sessions``:
    every replica, every restart), and in this process for a quick answer."""

    def __init__(self, store: Store, clock: Callable[[], float] = time.time) -> None:
        self._table = console_sessions_of(store)
        self._clock = clock
        self._local: dict[str, float] = {}

    async def revoke(self, session: Session) -> None:
        now = self._clock()
        self._local = {n: at for n, at in self._local.items() if at > now}
        self._local[session.nonce] = session.expires_at
        if self._table is not None:
            await self._table.revoke(session.nonce, _utc(session.expires_at), _utc(now))

    async def revoked(self, session: Session) -> bool:
        if session.nonce in self._local:
            return True
        return self._table is not None and await self._table.revoked(session.nonce)


def _utc(at: float) -> datetime:
    return datetime.fromtimestamp(at, UTC)


def client_address(remote: str | None, forwarded_for: str | None, trusted: Sequence[str]) -> str:
    """Who sent a request: the peer, or, when the peer is a trusted proxy, the nearest address
    in ``X-Forwarded-For`` that is not a trusted proxy (read from the right: what lies left
    of the proxies' own entries is whatever the client claimed). Always an IP address in
    canonical form, or ``?``, so it is safe to log."""
    networks = [ip_network(item, strict=False) for item in trusted]
    peer = _address(remote)
    if peer is None:
        return "?"
    if not forwarded_for or not any(peer in network for network in networks):
        return str(peer)
    for hop in reversed(forwarded_for.split(",")):
        address = _address(hop.strip())
        if address is None:
            break
        if not any(address in network for network in networks):
            return str(address)
    return str(peer)


def _address(text: str | None) -> IPv4Address | IPv6Address | None:
    try:
        return ip_address(text or "")
    except ValueError:
        return None


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
