"""``ChatOpenAI`` whose history and tool schemas reach the OpenAI client as JSON it sends as is.

The OpenAI SDK walks every request body against its request types before sending it (the
"transform" that renames aliased keys and encodes file inputs). For what LangChain builds,
plain dicts of strings, the walk changes nothing, yet it tries each message against the union of
message types: ~0.2 ms a message on every model call, so 5 to 10 ms a turn in a thread of a few
dozen messages and growing with the thread, plus ~0.4 ms for the tool schemas. The
SDK's own way to send body fields untouched, ``extra_body``, carries them instead; the request
on the wire is the same (``extra_body`` keys replace the body's, so ``messages`` is sent once).

``_get_request_payload`` is the hook LangChain's own subclasses override to adjust a payload
(``ChatOpenAI`` does over ``BaseChatOpenAI``). The Responses API, which has no ``messages``,
is left alone.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_openai import ChatOpenAI
from typing_extensions import override

UNWALKED = ("messages", "tools")
"""Body fields LangChain fills with plain JSON: the thread's messages and the tool schemas."""


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
        if not isinstance(payload.get("messages"), list):
            return payload  # the Responses API
        as_is = {key: payload.pop(key) for key in UNWALKED if payload.get(key)}
        if as_is:
            payload["extra_body"] = {**(payload.get("extra_body") or {}), **as_is}
            payload["messages"] = []  # the SDK requires the argument; extra_body fills it in
        return payload
