"""``http.push_api``: the push API's settings (design §19), a section of the HTTP server's."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class PushApiSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

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
