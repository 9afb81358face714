"""Where a PostgreSQL URL points, said without its password (logs, errors, ``status``).

The URL is parsed by libpq's own rules (``conninfo_to_dict``), so ``postgresql://`` URLs and
``key=value`` strings both work. Only the host, port, database and user are ever shown; a
message that came from the server or from libpq is scrubbed of the password as well, in case
one ever echoes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import psycopg
from psycopg.conninfo import conninfo_to_dict

from bot.errors import ConfigError

CONNECT_TIMEOUT_S: Final = 10
"""How long connecting may take when the URL does not say (libpq waits forever by default)."""
APPLICATION_NAME: Final = "switchboard"


@dataclass(frozen=True, slots=True, kw_only=True)
class Server:
    host: str
    port: str
    dbname: str
    user: str
    defaults: dict[str, Any] = field(default_factory=dict)
    """Connection options this URL leaves unset and Switchboard fills in."""
    password: str = field(default="", repr=False)

    @classmethod
    def parse(cls, url: str) -> Server:
        """The server of ``url``; ``ConfigError`` (naming ``store.url``) when it is not one."""
        try:
            params = conninfo_to_dict(url)
        except psycopg.Error:
            # libpq's message may quote the malformed part, which can be the password.
            raise ConfigError(
                "store.url is not a PostgreSQL URL (postgresql://USER:PASSWORD@HOST:PORT/DATABASE)"
            ) from None
        port = str(params.get("port") or "")
        if not all(part.isdigit() or not part for part in port.split(",")):
            raise ConfigError(f"store.url has a port that is not a number: {port!r}")
        defaults: dict[str, Any] = {}
        if "connect_timeout" not in params:
            defaults["connect_timeout"] = CONNECT_TIMEOUT_S
        if "application_name" not in params:
            defaults["application_name"] = APPLICATION_NAME
        return cls(
            host=str(params.get("host") or "localhost"),
            port=port or "5432",
            dbname=str(params.get("dbname") or ""),
            user=str(params.get("user") or ""),
            defaults=defaults,
            password=str(params.get("password") or ""),
        )

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url_for_logs(self) -> str:
        """``postgresql://USER@HOST:PORT/DATABASE``: the URL minus the password and options."""
        user = f"{self.user}@" if self.user else ""
        return f"postgresql://{user}{self.address}/{self.dbname}"

    def scrub(self, message: str) -> str:
        """``message`` on one line, with the password (if any) masked."""
        if self.password:
            message = message.replace(self.password, "***")
        return " ".join(message.split())
