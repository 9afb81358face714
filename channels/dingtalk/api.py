"""DingTalk's HTTP APIs over one ``aiohttp`` session on the daemon loop, tokens cached.

Why not the SDK's helpers: ``dingtalk_stream`` fetches tokens and posts replies with blocking
``requests`` (also inside its ``async_*`` methods), reads its endpoint from an environment
variable at import, hardcodes ``https://oapi.dingtalk.com/media/upload`` and logs failures
instead of raising them (design §17.4). A robot needs a handful of small JSON calls, so this
module makes them itself, against the configured bases only:

- ``OpenApi``: ``{api_base_url}/v1.0/...`` with the app access token
  (``POST /v1.0/oauth2/accessToken``) in ``x-acs-dingtalk-access-token``;
- ``Oapi``: ``{oapi_base_url}/...`` with the legacy token (``GET /gettoken``) as a query
  parameter, for media uploads;
- ``post_session``: a session webhook (an absolute URL DingTalk handed us; no token).

Tokens are fetched under a lock (concurrent sends share one fetch), kept until
``REFRESH_MARGIN_S`` before they expire, and refetched once when DingTalk refuses one early;
a refusal of the app's credentials is ``AuthFailed``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping

import aiohttp
from multidict import CIMultiDictProxy

from bot.errors import DownloadError, SendError, TransientSendError
from channels.dingtalk.errors import Json, failure, is_token_refusal, transport_errors

logger = logging.getLogger(__name__)

TOKEN_PATH = "/v1.0/oauth2/accessToken"  # noqa: S105 - a path
OAPI_TOKEN_PATH = "/gettoken"  # noqa: S105 - a path
TOKEN_HEADER = "x-acs-dingtalk-access-token"  # noqa: S105 - a header name
REFRESH_MARGIN_S = 300.0
TIMEOUT = aiohttp.ClientTimeout(total=30.0, connect=10.0)
CHUNK = 64 * 1024

Answer = tuple[int, Json, CIMultiDictProxy[str]]
Fetch = Callable[[], Awaitable[tuple[str, float]]]


def new_session() -> aiohttp.ClientSession:
    """The adapter's one connection pool (the environment's proxy settings apply)."""
    return aiohttp.ClientSession(timeout=TIMEOUT, trust_env=True)


async def _json(response: aiohttp.ClientResponse) -> Json:
    text = await response.text()
    try:
        body = json.loads(text) if text else {}
    except ValueError:
        body = None
    if isinstance(body, dict):
        return body
    return {"code": f"http_{response.status}", "message": "not a JSON answer"}


async def request(  # noqa: PLR0913 - the parts of one HTTP request
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    *,
    body: Json | None = None,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    data: aiohttp.FormData | None = None,
) -> Answer:
    """One call: ``(status, decoded body, headers)``; transport failures are transient."""
    async with (
        transport_errors(),
        session.request(
            method, url, json=body, params=params, headers=headers, data=data
        ) as response,
    ):
        return response.status, await _json(response), response.headers


def checked(answer: Answer) -> Json:
    status, body, headers = answer
    error = failure(status, body, headers)
    if error is not None:
        raise error
    return body


class Token:
    """One access token, fetched by ``fetch`` on demand and cached until near its expiry."""

    def __init__(self, fetch: Fetch, clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._clock = clock
        self._token = ""
        self._valid_until = 0.0
        self._lock = asyncio.Lock()

    async def get(self) -> str:
        async with self._lock:
            if not self._token or self._clock() >= self._valid_until:
                token, expires_in = await self._fetch()
                self._token = token
                self._valid_until = self._clock() + max(0.0, expires_in - REFRESH_MARGIN_S)
            return self._token

    def invalidate(self, token: str) -> None:
        """Forget ``token`` (DingTalk refused it); a newer one fetched meanwhile is kept."""
        if token == self._token:
            self._token = ""

    async def using(self, send: Callable[[str], Awaitable[Answer]]) -> Answer:
        """``send`` with the token; when DingTalk refuses the token (not the app), once more
        with a fresh one. The answer is returned unchecked."""
        token = await self.get()
        answer = await send(token)
        status, body, _headers = answer
        if not is_token_refusal(status, body):
            return answer
        logger.info("dingtalk refused the access token; fetching a new one")
        self.invalidate(token)
        return await send(await self.get())


class OpenApi:
    """``{api_base_url}/v1.0/...`` calls with the app access token."""

    def __init__(
        self, session: aiohttp.ClientSession, base: str, client_id: str, client_secret: str
    ) -> None:
        self._session = session
        self._base = base
        self._client_id = client_id
        self._client_secret = client_secret
        self.token = Token(self._fetch_token)

    @property
    def session(self) -> aiohttp.ClientSession:
        return self._session

    def url(self, path: str) -> str:
        return f"{self._base}{path}"

    async def _fetch_token(self) -> tuple[str, float]:
        body = {"appKey": self._client_id, "appSecret": self._client_secret}
        answer = checked(await request(self._session, "POST", self.url(TOKEN_PATH), body=body))
        token = str(answer.get("accessToken") or "")
        if not token:
            raise TransientSendError("accessToken missing from the answer")
        logger.debug("dingtalk access token refreshed (valid %ss)", answer.get("expireIn"))
        return token, float(answer.get("expireIn") or 0)

    async def call(self, method: str, path: str, body: Json) -> Json:
        """One OpenAPI call; a refused token is refetched and the call retried once."""

        async def send(token: str) -> Answer:
            headers = {TOKEN_HEADER: token}
            return await request(self._session, method, self.url(path), body=body, headers=headers)

        return checked(await self.token.using(send))


class Oapi:
    """The legacy ``{oapi_base_url}`` host: ``/gettoken`` and ``/media/upload``."""

    def __init__(
        self, session: aiohttp.ClientSession, base: str, client_id: str, client_secret: str
    ) -> None:
        self._session = session
        self._base = base
        self._client_id = client_id
        self._client_secret = client_secret
        self.token = Token(self._fetch_token)

    async def _fetch_token(self) -> tuple[str, float]:
        params = {"appkey": self._client_id, "appsecret": self._client_secret}
        url = f"{self._base}{OAPI_TOKEN_PATH}"
        answer = checked(await request(self._session, "GET", url, params=params))
        token = str(answer.get("access_token") or "")
        if not token:
            raise TransientSendError("access_token missing from the answer")
        return token, float(answer.get("expires_in") or 0)

    async def upload(self, kind: str, name: str, data: bytes) -> str:
        """``POST /media/upload``; the ``media_id`` to send."""

        async def send(token: str) -> Answer:
            form = aiohttp.FormData()
            form.add_field("media", data, filename=name, content_type="application/octet-stream")
            params = {"access_token": token, "type": kind}
            url = f"{self._base}/media/upload"
            return await request(self._session, "POST", url, params=params, data=form)

        media_id = str(checked(await self.token.using(send)).get("media_id") or "")
        if not media_id:
            raise TransientSendError("media_id missing from the upload answer")
        return media_id


async def post_session(session: aiohttp.ClientSession, url: str, body: Json) -> Json:
    """A message to a session webhook (the URL carries its own credential)."""
    return checked(await request(session, "POST", url, body=body))


async def download(session: aiohttp.ClientSession, url: str, max_bytes: int) -> bytes:
    """Raw bytes from a download URL, capped; every failure is a ``DownloadError``."""
    try:
        async with transport_errors(), session.get(url) as response:
            if response.status != 200:
                raise DownloadError(f"download answered HTTP {response.status}")
            if response.content_length is not None and response.content_length > max_bytes:
                raise DownloadError(f"the file is larger than {max_bytes} bytes")
            data = bytearray()
            async for chunk in response.content.iter_chunked(CHUNK):
                data += chunk
                if len(data) > max_bytes:
                    raise DownloadError(f"the file is larger than {max_bytes} bytes")
            return bytes(data)
    except SendError as exc:
        raise DownloadError(f"download failed: {exc}") from exc


def dumps(value: object) -> str:
    """JSON as DingTalk's ``msgParam`` expects it: compact, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
