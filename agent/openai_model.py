"""``ChatOpenAI`` whose chat history reaches the OpenAI client as JSON it does not re-walk.

The OpenAI SDK checks every request body against its request types before sending it (the
"transform" that renames aliased keys and encodes file inputs). For the messages LangChain
builds, plain dicts of strings, that walk changes nothing, yet it tries each message against
the union of message types and costs ~0.2 ms per message on every model call: 5 to 10 ms a turn
in a thread of a few dozen messages, growing with the thread (issue 15). The SDK's own way to
send a body field as it is, ``extra_body``, carries the messages instead; the request on the
wire is the same (``extra_body`` keys replace the body's, and ``messages`` is sent once).

``_get_request_payload`` is the hook LangChain's own subclasses override for this kind of
payload adjustment (``ChatOpenAI`` does it over ``BaseChatOpenAI``). The Responses API, which
has no ``messages``, is left alone.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_openai import ChatOpenAI
from typing_extensions import override


class UnwalkedHistoryChatOpenAI(ChatOpenAI):
    @override
    def _get_request_payload(
        self,
        input_: LanguageModelInput,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        messages = payload.get("messages")
        if isinstance(messages, list) and messages:
            payload["extra_body"] = {**(payload.get("extra_body") or {}), "messages": messages}
            payload["messages"] = []  # the SDK requires the argument; extra_body fills it in
        return payload
