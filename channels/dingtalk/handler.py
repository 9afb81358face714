"""The SDK's ``CallbackHandler`` for chatbot messages, acking only what the kernel recorded.

``raw_process`` (the SDK's) builds the ack in DingTalk's format from what ``process`` returns;
``process`` raises ``NotAccepted`` for a message the kernel refused, so no ack is sent and
DingTalk redelivers it. Unlike the SDK's ``AsyncChatbotHandler`` (acks first, processes on a
thread pool) nothing is acked before it is journaled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from dingtalk_stream import AckMessage, CallbackHandler, CallbackMessage, ChatbotMessage

from channels.dingtalk.connection import NotAccepted

Accept = Callable[[dict[str, Any]], Awaitable[bool]]
TOPIC = ChatbotMessage.TOPIC


class ChatbotCallbacks(CallbackHandler):
    def __init__(self, accept: Accept) -> None:
        super().__init__()
        self._accept = accept

    async def process(self, message: CallbackMessage) -> tuple[int, str]:
        data = message.data if isinstance(message.data, dict) else {}
        if not await self._accept(data):
            raise NotAccepted("the daemon did not record the message")
        return AckMessage.STATUS_OK, "OK"
