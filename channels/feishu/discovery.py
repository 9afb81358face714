"""Long-connection endpoint discovery: ``POST {domain}/callback/ws/endpoint`` (design §17.3).

The answer carries the ``ws://``/``wss://`` URL (with ``device_id`` and ``service_id``) and the
``ClientConfig`` the SDK paces pings and reconnects by. Codes ``1`` and ``1000040343`` mean
"busy, try again"; any other non-zero code is final (the SDK gives up on it), and the
credential codes mean the app id or secret was refused.

``discover`` runs on the daemon loop when the channel starts (so its failure is typed and
bounded); ``discover_sync`` runs on the SDK's thread for each reconnect, with a timeout the
SDK's own ``requests.post`` lacks.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from bot.errors import AuthFailed, ChannelError
from channels.feishu.errors import CREDENTIAL_CODES

PATH = "/callback/ws/endpoint"
TIMEOUT = httpx.Timeout(10.0)
RETRYABLE_CODES = frozenset({1, 1000040343})
CONFIG_KEYS = ("ReconnectCount", "ReconnectInterval", "ReconnectNonce", "PingInterval")


class EndpointError(Exception):
    def __init__(self, code: int, msg: str, *, retryable: bool) -> None:
        super().__init__(f"{code}: {msg}")
        self.code = code
        self.msg = msg
        self.retryable = retryable


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    url: str
    client_config: dict[str, int] | None = None
    """The pacing the SDK's ``ClientConfig`` takes, when the answer had all four values."""


def _body(app_id: str, app_secret: str) -> dict[str, str]:
    return {"AppID": app_id, "AppSecret": app_secret}


def parse(status: int, answer: object) -> Endpoint:
    if status != 200 or not isinstance(answer, dict):
        raise EndpointError(status, "endpoint discovery failed", retryable=True)
    code = int(answer.get("code") or 0)
    if code != 0:
        msg = str(answer.get("msg") or "")
        raise EndpointError(code, msg, retryable=code in RETRYABLE_CODES)
    data = answer.get("data") or {}
    url = str(data.get("URL") or "")
    if not url:
        raise EndpointError(-1, "no URL in the endpoint answer", retryable=True)
    return Endpoint(url=url, client_config=_client_config(data.get("ClientConfig")))


def _client_config(raw: object) -> dict[str, int] | None:
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), int) for k in CONFIG_KEYS):
        return None
    return {key: int(raw[key]) for key in CONFIG_KEYS}


async def discover(http: httpx.AsyncClient, app_id: str, app_secret: str) -> Endpoint:
    """The endpoint, or ``AuthFailed`` (credentials refused) / ``ChannelError``."""
    try:
        response = await http.post(PATH, json=_body(app_id, app_secret), timeout=TIMEOUT)
        answer = _json(response)
        return parse(response.status_code, answer)
    except httpx.HTTPError as exc:
        raise ChannelError(f"cannot reach Feishu: {type(exc).__name__}: {exc}") from exc
    except EndpointError as exc:
        if exc.code in CREDENTIAL_CODES:
            raise AuthFailed(f"Feishu refused the app credentials ({exc})") from None
        raise ChannelError(f"long-connection endpoint refused: {exc}") from None


def discover_sync(domain: str, app_id: str, app_secret: str) -> Endpoint:
    """The same on the SDK's thread; transport failures are retryable ``EndpointError``s."""
    try:
        with httpx.Client(base_url=domain, timeout=TIMEOUT) as http:
            response = http.post(PATH, json=_body(app_id, app_secret))
    except httpx.HTTPError as exc:
        raise EndpointError(-1, type(exc).__name__, retryable=True) from exc
    return parse(response.status_code, _json(response))


def _json(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None
