"""``http:``: the daemon's HTTP server, its limits against clients that hold it down, and the
push API behind it (design §13, §19)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PushApiSettings(_Section):
    """``POST /api/v1/messages`` and ``GET /api/v1/deliveries/{id}`` (design §19); off unless
    enabled, and then only with a bearer ``token`` (required: checked at load)."""

    enabled: bool = False
    token: SecretStr | None = None
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024, le=256 * 1024 * 1024)
    file_roots: tuple[Path, ...] = ()
    """Folders a push may name a ``file.path`` under (none: only bytes sent along)."""
    rate_per_minute: int = Field(default=120, ge=1, le=1_000_000)
    """Pushes per minute the token may make on average (429 beyond), after a ``rate_burst``."""
    rate_burst: int = Field(default=20, ge=1, le=100_000)

    @field_validator("file_roots")
    @classmethod
    def _absolute_roots(cls, roots: tuple[Path, ...]) -> tuple[Path, ...]:
        for root in roots:
            if not root.is_absolute():
                raise ValueError(f"file_roots entries must be absolute paths, not {str(root)!r}")
        return roots


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
