"""Translating the embedded graph's run stream into Switchboard agent events (design §6).

The final text is every assistant message of the turn joined by a blank line, and the deltas
(separators included) add up to it. Only the model node's messages are the model's: the
approval node hands the model's reply back with its calls revised, which is not a new reply.
Each model reply also says what the call used (``ModelUsage``), before the run's last event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langgraph.types import Interrupt

from agent.graph import MODEL_NODE
from agent.model_usage import model_usage
from agent.pauses import pause_from
from agent.tools import PRESENT_TOOL
from bot.ports import (
    AgentEvent,
    ClarificationRequest,
    FinalAnswer,
    PresentedFile,
    TextDelta,
    ToolActivity,
)
from bot.ports.agent import ApprovalRequest
from bot.workspace import ThreadWorkspace

PART_SEPARATOR = "\n\n"


class TurnRecorder:
    """Turns the graph's ``messages`` and ``updates`` streams into agent events.

    ``model_name`` names the model of a reply whose provider did not name it.
    """

    def __init__(self, *, model_name: str) -> None:
        self._model_name = model_name
        self._parts: list[str] = []
        self._streamed: list[str] = []
        self._files: dict[str, None] = {}
        self._interrupt: Interrupt | None = None

    def feed(self, mode: str, chunk: Any) -> list[AgentEvent]:
        if mode == "messages":
            message, metadata = chunk
            if metadata.get("langgraph_node") == MODEL_NODE:
                return self._on_token(message)
            return []
        events: list[AgentEvent] = []
        for node, update in chunk.items():
            if node == "__interrupt__":
                self._interrupt = self._interrupt or update[0]
            elif isinstance(update, dict):
                for message in update.get("messages", []):
                    events.extend(self._on_message(message, from_model=node == MODEL_NODE))
        return events

    def _on_token(self, message: Any) -> list[AgentEvent]:
        if not isinstance(message, AIMessageChunk) or not message.text:
            return []
        events: list[AgentEvent] = []
        if not self._streamed and self._parts:
            events.append(TextDelta(text=PART_SEPARATOR))
        self._streamed.append(message.text)
        events.append(TextDelta(text=message.text))
        return events

    def _on_message(self, message: Any, *, from_model: bool) -> list[AgentEvent]:
        if isinstance(message, ToolMessage):
            if message.name == PRESENT_TOOL and isinstance(message.artifact, list):
                self._files.update(dict.fromkeys(str(path) for path in message.artifact))
            return []
        if not isinstance(message, AIMessage) or not from_model:
            return []
        events: list[AgentEvent] = []
        streamed, self._streamed = "".join(self._streamed), []
        text = streamed or message.text
        if text and not streamed:
            if self._parts:
                events.append(TextDelta(text=PART_SEPARATOR))
            events.append(TextDelta(text=text))
        if text:
            self._parts.append(text)
        usage, metadata = message.usage_metadata, message.response_metadata
        events.append(model_usage(usage, metadata, fallback_model=self._model_name))
        events.extend(ToolActivity(name=call["name"]) for call in message.tool_calls)
        return events

    def outcome(
        self, workspace: ThreadWorkspace
    ) -> ClarificationRequest | ApprovalRequest | FinalAnswer:
        """The run's last event: what it paused for, else the answer and its files."""
        if self._interrupt is not None:
            return pause_from(self._interrupt.value)
        files = tuple(
            PresentedFile(path=workspace.root / name, name=Path(name).name) for name in self._files
        )
        return FinalAnswer(text=PART_SEPARATOR.join(self._parts), files=files)
