"""``console:``: the operator console in the browser on the daemon's HTTP server (design §23).

Off unless enabled, and then only with a login ``token`` (``${VAR}``, checked at load like
``http.push_api.token``). Not ``channels.console``: that is the local stdin chat channel.
"""

from __future__ import annotations

from ipaddress import ip_network
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class WebConsoleSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    token: SecretStr | None = None
    """What the login form asks for; also the key that signs session cookies, so changing it
    logs every session out."""
    session_ttl_s: int = Field(default=12 * 3600, ge=60, le=30 * 24 * 3600)
    secure_cookies: Literal["auto", "always", "never"] = "auto"
    """``auto``: ``Secure`` when the request came over TLS, or through a trusted proxy that
    says ``X-Forwarded-Proto: https``."""
    trust_forwarded_proto: bool = False
    """Believe ``X-Forwarded-Proto`` (only behind a reverse proxy that sets it)."""
    login_attempts_per_minute: int = Field(default=5, ge=1, le=1000)
    """Failed logins allowed per client address per minute; more wrong tries get 429 (the
    right token or a valid link still gets in)."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses or networks (``127.0.0.1``, ``10.0.0.0/8``) whose ``X-Forwarded-For`` is
    believed: the client address the login limit counts and the log names."""
    login_link_ttl_s: int = Field(default=600, ge=30, le=24 * 3600)
    """How long a ``switchboard console-url`` link stays usable (it works once)."""

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            try:
                ip_network(item, strict=False)
            except ValueError:
                raise ValueError("each entry must be an IP address or network") from None
        return value

    @property
    def token_text(self) -> str:
        return "" if self.token is None else self.token.get_secret_value().strip()
