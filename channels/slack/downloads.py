"""Fetching shared files: ``url_private_download`` with the bot token, size-capped (design §6).

The SDK does not download files (design §17.2). The bot token goes only to Slack's own
hosts — the API host and its subdomains (``files.slack.com`` for ``slack.com``) over the API's
scheme — so a file URL in a crafted payload can never carry the token elsewhere. Slack answers
a request it does not authorise with its HTML sign-in page and status 200; that is reported
as a failed download instead of being saved as the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

from bot.errors import DownloadError
from bot.messages import Attachment

CHUNK = 64 * 1024


def allowed_url(url: str, api_base_url: str) -> bool:
    target, api = urlsplit(url), urlsplit(api_base_url)
    host, api_host = target.hostname or "", api.hostname or ""
    same_site = host == api_host or host.endswith(f".{api_host}")
    return bool(api_host) and same_site and target.scheme == api.scheme


@dataclass(frozen=True, slots=True, kw_only=True)
class FileAccess:
    """How this bot reaches Slack (its files too): its token, the API it belongs to, the proxy."""

    token: str
    api_base_url: str
    proxy: str | None


async def fetch(
    session: aiohttp.ClientSession, attachment: Attachment, access: FileAccess, max_bytes: int
) -> bytes:
    url = attachment.ref
    if not allowed_url(url, access.api_base_url):
        raise DownloadError(f"{attachment.name}: not a Slack file URL")
    if attachment.size is not None and attachment.size > max_bytes:
        raise DownloadError(f"{attachment.name} is larger than {max_bytes} bytes")
    headers = {"Authorization": f"Bearer {access.token}"}
    try:
        async with session.get(url, headers=headers, proxy=access.proxy) as response:
            if response.status != 200:
                raise DownloadError(f"{attachment.name}: Slack answered HTTP {response.status}")
            if response.content_type == "text/html" and "html" not in attachment.mime:
                raise DownloadError(f"{attachment.name}: Slack refused the download (sign-in page)")
            return await _read_capped(response, attachment.name, max_bytes)
    except aiohttp.ClientError as exc:
        raise DownloadError(f"{attachment.name}: {type(exc).__name__}: {exc}") from exc
    except TimeoutError as exc:
        raise DownloadError(f"{attachment.name}: timed out") from exc


async def _read_capped(response: aiohttp.ClientResponse, name: str, max_bytes: int) -> bytes:
    data = bytearray()
    async for chunk in response.content.iter_chunked(CHUNK):
        data += chunk
        if len(data) > max_bytes:
            raise DownloadError(f"{name} is larger than {max_bytes} bytes")
    return bytes(data)
