"""The built-in offline echo chat model (design §2): used when no model API key is configured.

It lets an operator try threads, commands, files and clarifications before a model is set up,
and lets tests drive the tool paths deterministically without a model server.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from typing_extensions import override

ECHO_PREFIX = "(offline echo model — no model API key configured)"
TRIGGER_PREFIX = "(offline echo model)"


class OfflineEchoModel(BaseChatModel):
    """Echoes the last user message, with explicit triggers for the built-in tools.

    The triggers read the first paragraph of the last user message (the backend appends context
    such as attachment lists after a blank line; that part is ignored):

    - ``ask: <question> | <option 1> | <option 2> …`` calls ``ask_clarification`` with the
      question and options (none when there is no ``|``); once the tool result arrives it
      answers ``(offline echo model) You chose: <answer>``.
    - ``file: <name> | <content>`` calls ``write_file(name, content)``, then
      ``present_files([name])``, then answers ``(offline echo model) Wrote <name>.``
    - anything else is answered with
      ``(offline echo model — no model API key configured) You said: <text>``.

    Replies stream word by word, so streaming paths are exercised too.
    """

    @property
    @override
    def _llm_type(self) -> str:
        return "switchboard-offline-echo"

    @override
    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept the tools; the triggers know the built-in tools by name."""
        return self.bind(**kwargs)

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=respond(messages))])

    @override
    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        yield from _chunks(respond(messages))

    @override
    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in _chunks(respond(messages)):
            yield chunk


def respond(messages: Sequence[BaseMessage]) -> AIMessage:
    """The model's whole decision: a pure function of the conversation so far."""
    last = messages[-1] if messages else None
    if isinstance(last, ToolMessage):
        return _after_tool(messages, last)
    text = _user_text(last) if isinstance(last, HumanMessage) else ""
    head, _, rest = text.partition(":")
    command = head.strip().lower()
    if rest and command == "ask":
        question, *options = (part.strip() for part in rest.split("|"))
        args: dict[str, Any] = {"question": question, "options": [o for o in options if o]}
        return _call("ask_clarification", args)
    if rest and command == "file" and "|" in rest:
        name, _, content = rest.partition("|")
        return _call("write_file", {"path": name.strip(), "content": content.strip()})
    return AIMessage(content=f"{ECHO_PREFIX} You said: {text}")


def _after_tool(messages: Sequence[BaseMessage], result: ToolMessage) -> AIMessage:
    call = _call_for(messages, result.tool_call_id)
    name = call["name"] if call else result.name
    if name == "ask_clarification":
        answer = str(result.content).removeprefix("The user answered:").strip()
        return AIMessage(content=f"{TRIGGER_PREFIX} You chose: {answer}")
    if name == "write_file" and call is not None:
        if str(result.content).startswith("Error"):
            return AIMessage(content=f"{TRIGGER_PREFIX} {result.content}")
        return _call("present_files", {"paths": [call["args"]["path"]]})
    if name == "present_files" and call is not None:
        return AIMessage(content=f"{TRIGGER_PREFIX} Wrote {', '.join(call['args']['paths'])}.")
    return AIMessage(content=f"{TRIGGER_PREFIX} {result.content}")


def _call_for(messages: Sequence[BaseMessage], call_id: str) -> ToolCall | None:
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["id"] == call_id:
                    return call
    return None


ADDRESSED_HEADER = "[The message addressed to you:]"
"""Separates a group's recent chatter from the message itself (``agent.embedded.turn_message``)."""


def _user_text(message: HumanMessage) -> str:
    text = message.text.rpartition(f"{ADDRESSED_HEADER}\n")[2]
    return text.split("\n\n[", 1)[0].strip()


def _call(name: str, args: dict[str, Any]) -> AIMessage:
    call = ToolCall(name=name, args=args, id=f"call_{uuid.uuid4().hex[:24]}", type="tool_call")
    return AIMessage(content="", tool_calls=[call])


def _chunks(message: AIMessage) -> Iterator[ChatGenerationChunk]:
    text = message.text
    words = text.split(" ")
    for index, word in enumerate(words):
        piece = word if index == len(words) - 1 else word + " "
        if piece:
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
    for index, call in enumerate(message.tool_calls):
        chunk = ToolCallChunk(
            name=call["name"],
            args=json.dumps(call["args"]),
            id=call["id"],
            index=index,
            type="tool_call_chunk",
        )
        yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[chunk]))
