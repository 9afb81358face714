"""The push API's request body, validated at the edge (design §19): pydantic, so a bad field
is named by its location; ``to_request`` turns it into the pipeline's frozen values."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bot.messages import ChatType
from bot.ports.push import (
    PushBody,
    PushFile,
    PushRequest,
    PushTarget,
    PushText,
    RunAgent,
)
from bot.push.spool import safe_name

MAX_KEY_CHARS = 200


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileBody(_Body):
    """A file on the daemon's disk (``path``, absolute, under ``http.push_api.file_roots``:
    checked when the push is recorded) or its bytes (``content_base64``)."""

    path: str | None = None
    content_base64: str | None = None
    name: str | None = Field(default=None, min_length=1, max_length=255)
    caption: str = Field(default="", max_length=4000)

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not Path(value).is_absolute():
            raise ValueError("must be an absolute path on the daemon's machine")
        return value

    @field_validator("content_base64")
    @classmethod
    def _base64(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("is not valid base64") from None
        return value

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.path is None) == (self.content_base64 is None):
            raise ValueError("give exactly one of path and content_base64")
        if self.content_base64 is not None and not self.name:
            raise ValueError("name is required with content_base64")
        return self

    def value(self) -> PushFile:
        if self.path is not None:
            path = Path(self.path)
            return PushFile(name=safe_name(self.name or path.name), path=path, caption=self.caption)
        content = base64.b64decode(self.content_base64 or "")
        return PushFile(name=safe_name(self.name or "file"), content=content, caption=self.caption)


class RunAgentBody(_Body):
    prompt: str = Field(min_length=1, max_length=100_000)


class PushRequestBody(_Body):
    """``POST /api/v1/messages``: where (channel, chat, optional account/topic/user/chat_type)
    and exactly one of ``text``, ``file`` and ``run_agent``."""

    channel: str = Field(min_length=1, max_length=64)
    chat: str = Field(min_length=1, max_length=256)
    account: str | None = Field(default=None, max_length=256)
    topic: str | None = Field(default=None, min_length=1, max_length=256)
    user: str | None = Field(default=None, min_length=1, max_length=256)
    chat_type: ChatType | None = None
    text: str | None = Field(default=None, min_length=1, max_length=200_000)
    file: FileBody | None = None
    run_agent: RunAgentBody | None = None

    @model_validator(mode="after")
    def _one_payload(self) -> Self:
        given = [name for name in ("text", "file", "run_agent") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of text, file and run_agent")
        return self

    def payload(self) -> PushBody:
        if self.file is not None:
            return self.file.value()
        if self.run_agent is not None:
            return RunAgent(prompt=self.run_agent.prompt)
        return PushText(text=self.text or "")

    def to_request(self, *, idempotency_key: str | None, actor: str) -> PushRequest:
        target = PushTarget(
            channel=self.channel,
            chat_id=self.chat,
            account_id=self.account,
            topic_id=self.topic,
            user_id=self.user,
            chat_type=self.chat_type,
        )
        return PushRequest(
            target=target, body=self.payload(), idempotency_key=idempotency_key, actor=actor
        )


def field_problems(exc: ValidationError) -> list[dict[str, str]]:
    """Each problem with the field it is about (``file.path``; ``body`` for the whole)."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        location = ".".join(str(part) for part in error["loc"]) or "body"
        message = str(error["msg"]).removeprefix("Value error, ")
        problems.append({"field": location, "problem": message})
    return problems


def checked_key(value: str | None) -> str | None:
    """The ``Idempotency-Key`` header: printable ASCII, at most ``MAX_KEY_CHARS``."""
    if value is None:
        return None
    if not value or len(value) > MAX_KEY_CHARS or not value.isascii() or not value.isprintable():
        raise ValueError(f"must be 1 to {MAX_KEY_CHARS} printable ASCII characters")
    return value
