"""What the approval acceptance tests share (design §24): the gated agent section, the model's
scripted tool calls, the workspace files that show whether a tool ran, the model's recorded
requests, and an approval request as a chat shows it.

The agent is the embedded one against ``FakeOpenAIServer`` with ``write_file`` waiting for a
decision; its file in the thread's workspace (``<workspace>/threads/<thread>/outputs/``) is the
side effect the tests assert on.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.kernel import Kernel
from bot.ports.approvals import Approval, approvals_of
from tests.fakes.openai_server import FakeOpenAIServer, ReceivedRequest, ToolCall
from tests.fakes.telegram_api import FakeTelegram

WAIT_S = 15.0
"""Bound for one step of a conversation on a busy machine (never waited out when it works)."""
REQUEST_ID = re.compile(r"ID `?([0-9a-f]{10})`?")
"""The approval id on a request message (Markdown code, or plain where a platform drops it)."""
APPROVAL_NEEDED = "Approval needed"


def write(path: str, content: str, call_id: str) -> ToolCall:
    """The model's ``write_file`` call (the gated tool)."""
    return ToolCall(name="write_file", arguments={"path": path, "content": content}, id=call_id)


def gated_agent(model: FakeOpenAIServer, **approvals: Any) -> dict[str, Any]:
    """``agent``: embedded, on the fake model, ``write_file`` waiting for a decision."""
    return {
        "backend": "embedded",
        "run_timeout_s": 60,
        "model": {"base_url": model.base_url, "api_key": "sk-test", "name": "fake-model"},
        "approvals": {"tools": {"write_file": {}}, "deciders": "asker", **approvals},
    }


def written(workspace_root: Path, name: str) -> list[str]:
    """The contents of every ``outputs/<name>`` in any thread's workspace."""
    return [path.read_text() for path in sorted(workspace_root.glob(f"threads/*/outputs/{name}"))]


async def model_requests(model: FakeOpenAIServer, count: int) -> list[ReceivedRequest]:
    """The model's requests once there are ``count`` (off the loop: the fake's wait blocks)."""
    return await asyncio.to_thread(model.wait_for_requests, count, WAIT_S)


def tool_results(request: ReceivedRequest) -> dict[str, str]:
    """The tool messages a model request carries, by tool call id."""
    return {
        str(message.get("tool_call_id")): str(message.get("content"))
        for message in request.messages
        if message.get("role") == "tool"
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """An approval request as the chat shows it: its id, its text and what a press needs
    (platform-specific: a message id, a button's payload or value; empty without buttons)."""

    id: str
    text: str
    message_id: str
    buttons: dict[str, Any]
    """Decision -> what pressing its button sends."""


def request_id(text: str) -> str | None:
    found = REQUEST_ID.search(text)
    return None if found is None else found.group(1)


async def stored(kernel: Kernel, approval_id: str) -> Approval:
    """The approval as the store holds it now."""
    book = approvals_of(kernel.store)
    assert book is not None, "this store keeps no approvals"
    found = await book.get(approval_id)
    assert found is not None, approval_id
    return found


def telegram_request(fake: FakeTelegram, chat_id: int, needle: str) -> Request:
    """The approval request showing ``needle`` in a Telegram chat, with its inline buttons'
    callback data by decision."""
    for message in fake.chat_messages(chat_id):
        text = str(message.get("text") or "")
        approval_id = request_id(text)
        if APPROVAL_NEEDED in text and needle in text and approval_id is not None:
            rows = (message.get("reply_markup") or {}).get("inline_keyboard") or []
            data = [str(button["callback_data"]) for row in rows for button in row]
            buttons = {payload.rsplit("/", 1)[-1]: payload for payload in data}
            return Request(
                id=approval_id, text=text, message_id=str(message["message_id"]), buttons=buttons
            )
    shown = [m.get("text") for m in fake.chat_messages(chat_id)]
    raise AssertionError(f"no approval request for {needle!r} in {shown}")


def press_on_telegram(fake: FakeTelegram, chat_id: int, request: Request, decision: str) -> None:
    """The chat's user presses the request's ``decision`` button."""
    fake.push_callback_query(
        data=request.buttons[decision], chat_id=chat_id, message_id=int(request.message_id)
    )
