"""Translating a LangGraph server's run stream into Switchboard agent events.

Same contract as the embedded backend: the final text is every assistant message of the
turn joined by a blank line, the deltas (separators included) add up to it, and errors
become ``AgentError`` with a reason a chat user can read.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent.embedded_events import PART_SEPARATOR
from agent.model_usage import model_usage
from agent.tools import PRESENT_TOOL
from bot.errors import AgentError
from bot.ports import AgentEvent, FinalAnswer, TextDelta, ToolActivity
from bot.workspace import PathEscape, ThreadWorkspace

_RUN_ERROR_REASONS = (
    ("Timeout", "The model did not answer in time."),
    ("AuthenticationError", "The model provider rejected the API key."),
    ("PermissionDenied", "The model provider rejected the API key."),
    ("RateLimit", "The model provider is rate-limiting requests; please try again shortly."),
    ("APIConnectionError", "The model endpoint could not be reached."),
    ("GraphRecursionError", "The agent took too many steps and was stopped."),
)


def raise_unless_success(status: str) -> None:
    if status == "success":
        return
    if status == "interrupted":
        raise AgentError("The run was stopped before it finished.", detail=f"run {status}")
    if status == "timeout":
        raise AgentError("The agent took too long on the server.", detail=f"run {status}")
    raise AgentError("The agent server could not finish the run.", detail=f"run {status}")


def run_error(data: Any) -> AgentError:
    """An ``error`` event of the run stream: the server names the exception class."""
    name = str(data.get("error", "")) if isinstance(data, dict) else ""
    message = str(data.get("message", "")) if isinstance(data, dict) else str(data)
    for marker, reason in _RUN_ERROR_REASONS:
        if marker in name:
            return AgentError(reason, detail=f"{name}: {message}")
    return AgentError("The agent failed on the server.", detail=f"{name or 'error'}: {message}")


def local_files(workspace: ThreadWorkspace, names: Iterable[str]) -> list[tuple[str, Path]]:
    """Presented paths (relative to the server's workspace root) that exist here, confined to
    ``outputs/``: the server is trusted with its agent, not with this machine's files."""
    found: list[tuple[str, Path]] = []
    for name in names:
        try:
            path = workspace.resolve(name, base=workspace.root)
        except PathEscape:
            continue
        if workspace.in_outputs(path) and path.is_file():
            found.append((name, path))
    return found


def message_text(message: dict[str, Any]) -> str:
    """The text of a serialised message: a string, or the text blocks of a block list."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""


class RemoteTurn:
    """Turns the server's ``messages-tuple`` and ``updates`` events into agent events.

    Same contract as the embedded backend: the final text is every assistant message of the
    turn joined by a blank line, and the deltas (separators included) add up to it; each model
    reply yields its ``ModelUsage`` (``fallback_model`` names a model the reply does not). A
    reply seen before (earlier in the turn, or in the thread before a resumed run) is not new:
    LangChain's middleware node streams the model's reply again with its calls revised.
    """

    def __init__(self, *, fallback_model: str) -> None:
        self._fallback_model = fallback_model
        self._seen: set[str] = set()
        self._parts: list[str] = []
        self._streamed: dict[str, list[str]] = {}
        self._current: str | None = None
        self._files: dict[str, None] = {}
        self.completed = False
        self.interrupt: object | None = None
        self.run_id: str | None = None

    @property
    def files(self) -> list[str]:
        return list(self._files)

    def known(self, message_ids: Iterable[str]) -> None:
        """Messages the thread held before this run: not new when the server streams them."""
        self._seen.update(message_ids)

    def feed(self, event: str, data: Any) -> list[AgentEvent]:
        if event == "error":
            raise run_error(data)
        if event == "messages" and isinstance(data, list) and data:
            message = data[0]
            return self._on_token(message) if isinstance(message, dict) else []
        if event != "updates" or not isinstance(data, dict):
            return []
        events: list[AgentEvent] = []
        for node, update in data.items():
            if node == "__interrupt__" and update and self.interrupt is None:
                first = update[0]
                self.interrupt = first.get("value") if isinstance(first, dict) else first
            elif isinstance(update, dict):
                for message in update.get("messages") or []:
                    if isinstance(message, dict):
                        events.extend(self._on_message(message))
        return events

    def _on_token(self, message: dict[str, Any]) -> list[AgentEvent]:
        text = message_text(message)
        if message.get("type") != "AIMessageChunk" or not text:
            return []
        message_id = str(message.get("id") or "")
        events: list[AgentEvent] = []
        if message_id != self._current:
            if self._parts or self._streamed:
                events.append(TextDelta(text=PART_SEPARATOR))
            self._current = message_id
        self._streamed.setdefault(message_id, []).append(text)
        events.append(TextDelta(text=text))
        return events

    def _on_message(self, message: dict[str, Any]) -> list[AgentEvent]:
        kind = message.get("type")
        if kind == "tool":
            artifact = message.get("artifact")
            if message.get("name") == PRESENT_TOOL and isinstance(artifact, list):
                self._files.update(dict.fromkeys(str(path) for path in artifact))
            return []
        if kind not in ("ai", "AIMessageChunk"):
            return []
        message_id = str(message.get("id") or "")
        if message_id in self._seen:
            return []
        if message_id:
            self._seen.add(message_id)
        events: list[AgentEvent] = []
        streamed = "".join(self._streamed.pop(message_id, []))
        text = streamed or message_text(message)
        if text and not streamed:
            if self._parts or self._streamed:
                events.append(TextDelta(text=PART_SEPARATOR))
            events.append(TextDelta(text=text))
        if text:
            self._parts.append(text)
        calls = [call for call in message.get("tool_calls") or [] if isinstance(call, dict)]
        usage, metadata = message.get("usage_metadata"), message.get("response_metadata")
        events.append(model_usage(usage, metadata, fallback_model=self._fallback_model))
        events.extend(ToolActivity(name=str(call.get("name", ""))) for call in calls)
        self.completed = not calls
        return events

    def final(self) -> FinalAnswer:
        return FinalAnswer(text=PART_SEPARATOR.join(self._parts))
