"""HTTP shapes every REST fake shares: an uploaded file part, a non-JSON answer, reading a
multipart body, naming a download, and the smallest PNG."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from urllib.parse import quote

from aiohttp import BodyPartReader, web

TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""A valid 1x1 PNG, for uploads that must be a real image."""


@dataclass(frozen=True, slots=True)
class FilePart:
    filename: str
    data: bytes
    content_type: str


@dataclass(frozen=True, slots=True)
class Raw:
    """A non-JSON answer (file downloads)."""

    body: bytes
    content_type: str
    headers: dict[str, str]


async def read_multipart(
    request: web.Request, file_fields: frozenset[str] = frozenset()
) -> tuple[dict[str, str], dict[str, FilePart]]:
    """Text fields and file parts of a multipart body. A part is a file if it has a filename
    or its name is one of ``file_fields``."""
    form: dict[str, str] = {}
    files: dict[str, FilePart] = {}
    reader = await request.multipart()
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader) or part.name is None:
            continue
        data = bytes(await part.read())
        if part.filename is not None or part.name in file_fields:
            kind = part.headers.get("Content-Type", "application/octet-stream")
            files[part.name] = FilePart(part.filename or "", data, kind)
        else:
            form[part.name] = data.decode()
    return form, files


def content_disposition(file_name: str) -> str:
    """The ``Content-Disposition`` of a download named ``file_name`` (RFC 6266 for non-ASCII)."""
    if file_name.isascii():
        return f'attachment; filename="{file_name}"'
    return f"attachment; filename*=UTF-8''{quote(file_name)}"
