"""``console:``: the operator console in the browser on the daemon's HTTP server (design §23).

Off unless enabled, and then only with a login ``token`` (``${VAR}``, checked at load like
``http.push_api.token``). Not ``channels.console``: that is the local stdin chat channel.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


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
    """Failed logins allowed per client address per minute; more get 429."""
    login_link_ttl_s: int = Field(default=600, ge=30, le=24 * 3600)
    """How long a ``switchboard console-url`` link stays usable (it works once)."""

    @property
    def token_text(self) -> str:
        return "" if self.token is None else self.token.get_secret_value().strip()
