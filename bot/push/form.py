"""A push as ``multipart/form-data`` (design §19): the file's bytes in a part named ``file``
and the target in text fields, so ``curl -F file=@report.pdf -F channel=… -F chat=…`` works.

The form stands for the JSON body ``{…, "file": {"content_base64": …}}`` and is validated
as that body is (``PushRequestBody``). Its parts are counted against ``max_body_bytes`` as
they are read; a body past it is never read whole.
"""

from __future__ import annotations

import base64
from typing import Final

from aiohttp import BodyPartReader, web

from bot.push.body import PushRequestBody

FORM_TYPE: Final = "multipart/form-data"
TARGET_FIELDS: Final = ("channel", "chat", "account", "topic", "user", "chat_type")
FILE_FIELDS: Final = ("name", "caption")
READ_CHUNK: Final = 64 * 1024


class FormProblem(ValueError):
    """A form that is not a push: the message names the part at fault."""


async def form_body(request: web.Request, limit: int) -> PushRequestBody | None:
    """The push the form describes; ``None`` past ``limit`` bytes. Raises ``FormProblem``
    and pydantic's ``ValidationError``."""
    if request.content_length is not None and request.content_length > limit:
        return None
    fields: dict[str, str] = {}
    upload: tuple[str | None, bytes] | None = None
    size = 0
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                raise FormProblem("nested multipart bodies are not accepted")
            data = bytearray()
            while chunk := await part.read_chunk(READ_CHUNK):
                size += len(chunk)
                if size > limit:
                    return None
                data.extend(chunk)
            if part.name == "file":
                upload = (part.filename, bytes(data))
            elif part.name in TARGET_FIELDS + FILE_FIELDS:
                fields[part.name] = _text(part.name, bytes(data))
            else:
                raise FormProblem(f"unknown form field {str(part.name)[:64]!r}")
    except (ValueError, RuntimeError) as exc:
        if isinstance(exc, FormProblem):
            raise
        raise FormProblem("the body is not valid multipart/form-data") from None
    return _body(fields, upload)


def _text(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FormProblem(f"form field {name!r} is not UTF-8 text") from None


def _body(fields: dict[str, str], upload: tuple[str | None, bytes] | None) -> PushRequestBody:
    if upload is None:
        raise FormProblem("a form push needs its file in a part named 'file'")
    filename, content = upload
    document: dict[str, object] = {name: fields[name] for name in TARGET_FIELDS if name in fields}
    document["file"] = {
        "name": fields.get("name") or filename or None,
        "caption": fields.get("caption", ""),
        "content_base64": base64.b64encode(content).decode(),
    }
    return PushRequestBody.model_validate(document)
