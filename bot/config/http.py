"""``http:``: the daemon's HTTP server, its limits against clients that hold it down, and the
push API behind it (design §13, §19)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.push.config import PushApiSettings


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HttpSettings(_Section):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(default=8787, ge=0, le=65535)
    push_api: PushApiSettings = PushApiSettings()
    header_timeout_s: float = Field(default=10, gt=0, le=600)
    """A connection whose request head has not arrived in this long is closed (slowloris);
    also how long an idle keep-alive connection stays open."""
    body_timeout_s: float = Field(default=30, gt=0, le=3600)
    """A request body must have arrived in full this long after its head, else it is cut off."""
    max_connections: int = Field(default=256, ge=1, le=100_000)
    """Open connections at most; one more is answered 503 and closed at once."""
