"""The ``store:`` block: which backend holds durable state, and how to reach it (design §11)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator


class StoreBackend(StrEnum):
    SQLITE = "sqlite"
    POSTGRES = "postgres"


SQLITE_FILENAME = "switchboard.db"
SCHEMA_NAME = r"^[a-z_][a-z0-9_]{0,62}$"
"""A PostgreSQL schema name that needs no quoting."""


class StoreSettings(BaseModel):
    """Where durable state lives (design §11).

    ``url`` unset: the SQLite file ``switchboard.db`` under ``state_dir`` (the embedded
    default). ``sqlite:///ABSOLUTE/PATH`` names another file; ``postgresql://user:pass@host:port/db``
    selects PostgreSQL, with ``pool_size`` connections and every table in ``schema``; with it,
    the embedded agent's checkpoints go to the same database.
    """

    url: str | None = None
    pool_size: int = Field(default=5, ge=1, le=100)
    db_schema: str = Field(
        default="switchboard", alias="schema", pattern=r"^[a-z_][a-z0-9_]{0,62}$"
    )

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("url")
    @classmethod
    def _known_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        parts = urlsplit(value)
        if parts.scheme == "sqlite":
            if not parts.path or parts.netloc or parts.query:
                raise ValueError("a SQLite URL is sqlite:///ABSOLUTE/PATH (three slashes)")
            return value
        if parts.scheme in ("postgresql", "postgres"):
            if not parts.hostname or not parts.path.strip("/"):
                raise ValueError(
                    "a PostgreSQL URL is postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
                )
            _ = parts.port  # raises ValueError for a malformed port
            return value
        raise ValueError("must start with postgresql:// or sqlite:///")

    @property
    def backend(self) -> StoreBackend:
        if self.url is not None and self.url.startswith(("postgresql:", "postgres:")):
            return StoreBackend.POSTGRES
        return StoreBackend.SQLITE

    def sqlite_path(self, state_dir: Path) -> Path:
        if self.url is None:
            return state_dir / SQLITE_FILENAME
        return Path(urlsplit(self.url).path)

    def redacted_url(self) -> str:
        """The URL for logs and status: never the password."""
        if self.url is None:
            return "sqlite (state_dir)"
        parts = urlsplit(self.url)
        if parts.password is None:
            return self.url
        netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        return parts._replace(netloc=netloc).geturl()
