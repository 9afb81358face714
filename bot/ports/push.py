"""The push port (design §19): what the operator, a schedule or a handoff asks to send, what came
of it, and which outbox rows deliver a push (known below the pipeline so the delivery path can
count how pushes end, ``switchboard_push_deliveries_total``).

A push's delivery id is its rows' correlation id (``push-`` + hex). A text or file push is its
rows keyed ``<id>/push/<n>``; a ``run_agent`` push is delivered by its answer's rows
(``<id>/final/<n>``): its progress placeholder is no delivery (it is withdrawn or edited).

The HTTP push API and ``switchboard send`` validate their input with pydantic at the edge
(``bot/push/body.py``) and hand the pipeline these frozen values.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final, Protocol

from bot.errors import BotError
from bot.messages import ChatType, OutboundFile
from bot.records import OutboxItem

DELIVERY_PREFIX: Final = "push-"
PUSH_TAG: Final = "push"
"""The outbox rows of a text or file push are keyed ``<delivery id>/push/<n>``."""
ANSWER_TAG: Final = "final"

AWAITING_PICKUP = "push: recorded, waiting for the daemon"
"""The journal reason of a ``run_agent`` prompt the CLI recorded into a store no replica
sweeps (SQLite): the daemon's ``pushes`` loop takes it (``Pusher.pick_up``)."""
PICKED_UP = "push: picked up"


class PushKind(StrEnum):
    TEXT = "text"
    FILE = "file"
    RUN_AGENT = "run_agent"


@dataclass(frozen=True, slots=True, kw_only=True)
class PushTarget:
    """Where a push goes. ``account_id`` and ``chat_type`` are looked up from what the store
    journaled from the chat when not given; ``user_id`` names a member's conversation in a
    ``user``-scoped group."""

    channel: str
    chat_id: str
    account_id: str | None = None
    topic_id: str | None = None
    user_id: str | None = None
    chat_type: ChatType | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PushText:
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PushFile:
    """A file on the daemon's disk (``path``, read only from under
    ``http.push_api.file_roots``) or sent along (``content``); either way its bytes are kept
    under ``<workspace_dir>/pushes/<delivery id>/`` when the push is recorded."""

    name: str
    path: Path | None = None
    content: bytes | None = None
    caption: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunAgent:
    prompt: str


PushBody = PushText | PushFile | RunAgent


def kind_of(body: PushBody) -> PushKind:
    match body:
        case PushText():
            return PushKind.TEXT
        case PushFile():
            return PushKind.FILE
        case RunAgent():
            return PushKind.RUN_AGENT


@dataclass(frozen=True, slots=True, kw_only=True)
class PushRequest:
    target: PushTarget
    body: PushBody
    idempotency_key: str | None = None
    actor: str = "api"
    """Who the audit table names: ``api`` or ``cli:<login>``."""


class DeliveryState(StrEnum):
    """A push's delivery, apart from any agent run: ``queued`` (nothing attempted yet),
    ``running`` (the turn runs, or some of its messages are out or being retried), ``sent``
    (all of it), ``dead`` (given up, with the platform's error)."""

    QUEUED = "queued"
    RUNNING = "running"
    SENT = "sent"
    DEAD = "dead"


@dataclass(frozen=True, slots=True, kw_only=True)
class PushReceipt:
    delivery_id: str
    kind: PushKind
    status: DeliveryState
    repeated: bool = False
    """The same request (``Idempotency-Key``) was accepted before: nothing was added."""
    note: str | None = None
    """Worth telling the caller (the channel is down: the delivery waits until it runs)."""


class PushProblem(StrEnum):
    """Why a push was refused; the API answers 400, 404, 409 and 503 for these."""

    INVALID = "invalid"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    UNAVAILABLE = "unavailable"


class PushRefused(BotError):
    """A push that was not accepted; ``field`` names the part of the request at fault."""

    def __init__(self, problem: PushProblem, field: str, message: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.field = field
        self.message = message


def delivery_id_for(channel: str, account_id: str, idempotency_key: str | None) -> str:
    """The push's correlation id: derived from the key (so a repeat, from any replica, is
    the same delivery), else random."""
    if idempotency_key is None:
        return DELIVERY_PREFIX + secrets.token_hex(10)
    seed = f"{channel}|{account_id}|{idempotency_key}".encode()
    return DELIVERY_PREFIX + hashlib.sha256(seed).hexdigest()[:20]


def push_kind(item: OutboxItem) -> str | None:
    """``text``, ``file`` or ``run_agent`` for a row that delivers a push, else ``None``."""
    delivery_id = item.correlation_id
    if not delivery_id.startswith(DELIVERY_PREFIX):
        return None
    key = item.idempotency_key
    if key.startswith(f"{delivery_id}/{PUSH_TAG}/"):
        return "file" if isinstance(item.delivery, OutboundFile) else "text"
    if key.startswith(f"{delivery_id}/{ANSWER_TAG}/"):
        return "run_agent"
    return None


class Push(Protocol):
    """Says something nobody in the chat asked for (the daemon's ``Pusher``): what schedules and
    handoffs deliver through, as the push API does. Raises ``PushRefused``."""

    async def __call__(self, request: PushRequest) -> PushReceipt: ...
