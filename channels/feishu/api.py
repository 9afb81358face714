"""The Open API over our own ``httpx.AsyncClient``, with the tenant token cached and refreshed.

Why not lark-oapi's REST client: its ``a*`` coroutines fetch the tenant token with blocking
``requests`` inside the coroutine (a stall on the daemon loop, and a deadlock against a fake
on the same loop), keep the token in a process-global cache keyed by app id, open a new
``httpx.AsyncClient`` per call and lose file names on downloads (design §17.3). The calls
a bot makes are a dozen small JSON endpoints, so one client here does them all: one pooled
connection, timeouts, error translation at the boundary (``errors.py``), and a token that is

- fetched asynchronously (``tenant_access_token/internal``) under a lock, so concurrent sends
  share one fetch;
- cached until ``REFRESH_MARGIN_S`` before Feishu's ``expire``;
- refreshed and the call retried once when Feishu answers ``99991661``/``99991663`` (expired
  or revoked early); still refused → ``AuthFailed``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from bot.errors import DownloadError, SendError, TransientSendError
from channels.feishu.errors import TOKEN_CODES, FeishuApiError, translate, transport_errors

logger = logging.getLogger(__name__)

Json = dict[str, Any]
TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal"  # noqa: S105 - a path
REFRESH_MARGIN_S = 300.0
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
CHUNK = 64 * 1024


def new_http(domain: str) -> httpx.AsyncClient:
    """The adapter's one connection pool to ``domain`` (the environment's proxies apply)."""
    return httpx.AsyncClient(base_url=domain, timeout=TIMEOUT, follow_redirects=False)


def decoded(response: httpx.Response) -> Json:
    """The decoded JSON body, or a synthetic envelope for a non-JSON answer."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        return body
    return {"code": -1 if response.status_code < 400 else 0, "msg": "not a JSON answer"}


def failure(response: httpx.Response, body: Json) -> SendError | None:
    """The error a response stands for, or ``None`` for success."""
    code = int(body.get("code") or 0)
    if code == 0 and response.status_code < 400:
        return None
    msg = str(body.get("msg") or "")
    error = translate(response.status_code, code, msg, response.headers)
    error.__cause__ = FeishuApiError(code, msg, response.status_code)
    return error


class TenantToken:
    """The app's tenant access token, fetched on demand and cached until near its expiry."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        app_id: str,
        app_secret: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._http = http
        self._app_id = app_id
        self._app_secret = app_secret
        self._clock = clock
        self._token = ""
        self._valid_until = 0.0
        self._lock = asyncio.Lock()

    async def get(self) -> str:
        async with self._lock:
            if not self._token or self._clock() >= self._valid_until:
                await self._fetch()
            return self._token

    def invalidate(self, token: str) -> None:
        """Forget ``token`` (Feishu refused it); a newer one fetched meanwhile is kept."""
        if token == self._token:
            self._token = ""

    async def _fetch(self) -> None:
        body = {"app_id": self._app_id, "app_secret": self._app_secret}
        with transport_errors():
            response = await self._http.post(TOKEN_PATH, json=body)
        answer = decoded(response)
        error = failure(response, answer)
        if error is not None:
            raise error
        token = str(answer.get("tenant_access_token") or "")
        if not token:
            raise TransientSendError("tenant_access_token missing from the answer")
        expire = float(answer.get("expire") or 0)
        self._token = token
        self._valid_until = self._clock() + max(0.0, expire - REFRESH_MARGIN_S)
        logger.debug("feishu tenant token refreshed (valid %.0fs)", expire)


class FeishuApi:
    def __init__(self, http: httpx.AsyncClient, token: TenantToken) -> None:
        self._http = http
        self._token = token

    async def call(  # noqa: PLR0913 - the parts of one HTTP request
        self,
        method: str,
        path: str,
        *,
        body: Json | None = None,
        params: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
        files: Mapping[str, tuple[str, bytes]] | None = None,
    ) -> Json:
        """One Open API call; the envelope's ``data`` (``{}`` when absent) or a ``SendError``."""
        answer = await self.envelope(method, path, body=body, params=params, form=form, files=files)
        data = answer.get("data")
        return data if isinstance(data, dict) else {}

    async def envelope(  # noqa: PLR0913 - the parts of one HTTP request
        self,
        method: str,
        path: str,
        *,
        body: Json | None = None,
        params: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
        files: Mapping[str, tuple[str, bytes]] | None = None,
    ) -> Json:
        """The whole answer (``bot/v3/info`` puts its result beside ``code``, not in ``data``)."""
        for attempt in range(2):
            token = await self._token.get()
            headers = {"Authorization": f"Bearer {token}"}
            with transport_errors():
                response = await self._http.request(
                    method,
                    path,
                    json=body,
                    params=params,
                    data=form,
                    files=files,
                    headers=headers,
                )
            answer = decoded(response)
            error = failure(response, answer)
            if error is None:
                return answer
            if attempt == 0 and int(answer.get("code") or 0) in TOKEN_CODES:
                logger.info("feishu refused the tenant token; fetching a new one")
                self._token.invalidate(token)
                continue
            raise error
        raise AssertionError("unreachable")  # pragma: no cover

    async def download(
        self, path: str, params: Mapping[str, str], max_bytes: int
    ) -> tuple[bytes, httpx.Headers]:
        """Raw bytes of a resource, capped; every failure is a ``DownloadError``."""
        try:
            return await self._download(path, params, max_bytes)
        except SendError as exc:
            raise DownloadError(f"download failed: {exc}") from exc

    async def _download(
        self, path: str, params: Mapping[str, str], max_bytes: int
    ) -> tuple[bytes, httpx.Headers]:
        for attempt in range(2):
            token = await self._token.get()
            headers = {"Authorization": f"Bearer {token}"}
            with transport_errors():
                request = self._http.build_request("GET", path, params=params, headers=headers)
                response = await self._http.send(request, stream=True)
                try:
                    if response.status_code == 200 and not _is_json(response):
                        return await _read_capped(response, max_bytes), response.headers
                    await response.aread()
                finally:
                    await response.aclose()
            answer = decoded(response)
            if attempt == 0 and int(answer.get("code") or 0) in TOKEN_CODES:
                self._token.invalidate(token)
                continue
            error = failure(response, answer)
            raise error or TransientSendError(f"http_{response.status_code}")
        raise AssertionError("unreachable")  # pragma: no cover


def _is_json(response: httpx.Response) -> bool:
    return str(response.headers.get("content-type", "")).startswith("application/json")


async def _read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise DownloadError(f"the file is larger than {max_bytes} bytes")
    data = bytearray()
    async for chunk in response.aiter_bytes(CHUNK):
        data += chunk
        if len(data) > max_bytes:
            raise DownloadError(f"the file is larger than {max_bytes} bytes")
    return bytes(data)


def dumps(value: object) -> str:
    """JSON as Feishu's ``content`` fields expect it: compact, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
