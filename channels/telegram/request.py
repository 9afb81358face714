"""PTB's HTTPX transport with a bound on Bot API calls in flight.

Each concurrent request costs CPU in httpx's connection pool (it scans every connection on
every request), so twenty chats answered at once cost far more per message than the same
answers sent a few at a time (`bench/telegram_throughput.py`). Telegram takes about 30
messages a second per bot; with a 50-150 ms round trip to the Bot API, four calls in flight
carry 25-80 calls a second. Operators far from the Bot API raise
``channels.telegram.max_requests_in_flight``.

Only calls through the bot's request object are bounded; ``getUpdates`` has its own.

Both requests of every bot the process builds share one TLS context (``tls_context``).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from dataclasses import dataclass

import httpx
from telegram import Bot
from telegram._utils.defaultvalue import DEFAULT_NONE
from telegram._utils.types import ODVInput
from telegram.request import HTTPXRequest, RequestData
from typing_extensions import override


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CAs, or ``$SSL_CERT_FILE`` / ``$SSL_CERT_DIR``),
    built once for the process.

    Each context holds a parsed copy of the CA store (about 1.2 MB); left to itself PTB builds
    one per request object, two per bot and two more at every channel restart. Sharing is safe
    because httpcore sets the same ALPN list (HTTP/1.1) on it for every connection of ours.
    """
    return httpx.create_ssl_context()


class BoundedRequest(HTTPXRequest):
    def __init__(self, in_flight: int, *, read_timeout: float, write_timeout: float) -> None:
        super().__init__(
            connection_pool_size=in_flight,
            read_timeout=read_timeout,
            write_timeout=write_timeout,
            httpx_kwargs={"verify": tls_context()},
        )
        self._slots = asyncio.Semaphore(in_flight)

    @override
    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: ODVInput[float] = DEFAULT_NONE,
        write_timeout: ODVInput[float] = DEFAULT_NONE,
        connect_timeout: ODVInput[float] = DEFAULT_NONE,
        pool_timeout: ODVInput[float] = DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        """Wait for a free slot, then send as ``HTTPXRequest`` does (the pool never waits)."""
        async with self._slots:
            return await super().do_request(
                url,
                method,
                request_data,
                read_timeout,
                write_timeout,
                connect_timeout,
                pool_timeout,
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class BotAccess:
    """How to reach the Bot API: the token, the server and the bound on calls in flight."""

    token: str
    api: str
    in_flight: int

    def new_bot(self) -> Bot:
        return Bot(
            self.token,
            base_url=f"{self.api}/bot",
            base_file_url=f"{self.api}/file/bot",
            request=BoundedRequest(self.in_flight, read_timeout=15.0, write_timeout=15.0),
            get_updates_request=HTTPXRequest(
                connection_pool_size=2, read_timeout=10.0, httpx_kwargs={"verify": tls_context()}
            ),
        )
