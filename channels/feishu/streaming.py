"""Streaming answers as CardKit cards (design §8 Streaming).

The kernel drives the stream: a progress send, progress edits, then one final edit of the
same message id. Here that becomes

1. progress send → ``POST cardkit/v1/cards`` (a 2.0 card, ``streaming_mode`` on, one
   markdown element) and an ``interactive`` message ``{"type":"card","data":{"card_id"}}``;
2. progress edit → ``PUT …/elements/{ELEMENT_ID}/content`` with the next ``sequence``;
3. final edit → the final content, then ``PATCH …/settings`` turning streaming off.

``sequence`` must grow strictly across every operation on a card, so each live card keeps its
counter and a lock. The live cards are remembered in memory only: after a restart, recovery's
final edit finds none and the adapter PATCHes the message with a static card instead, which
is also what happens when CardKit refuses the final (streaming timed out, card gone).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from bot.delivery.bounded import RecentMap
from channels.feishu.api import FeishuApi, dumps
from channels.feishu.render import ELEMENT_ID, Content, card_markdown, sized, streaming_card

logger = logging.getLogger(__name__)

CARDS_PATH = "/open-apis/cardkit/v1/cards"
LIVE_KEPT = 1024


@dataclass(slots=True)
class LiveCard:
    card_id: str
    sequence: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def next(self) -> int:
        self.sequence += 1
        return self.sequence


class StreamingCards:
    def __init__(self, api: FeishuApi) -> None:
        self._api = api
        self._live: RecentMap[str, LiveCard] = RecentMap(LIVE_KEPT)

    async def create(self, text: str) -> tuple[str, Content]:
        """A new streaming card; its id and the message content that shows it."""
        card = sized(Content(msg_type="interactive", content=dumps(streaming_card(text))))
        data = await self._api.call(
            "POST", CARDS_PATH, body={"type": "card_json", "data": card.content}
        )
        card_id = str(data.get("card_id") or "")
        content = {"type": "card", "data": {"card_id": card_id}}
        return card_id, Content(msg_type="interactive", content=dumps(content))

    def remember(self, message_id: str, card_id: str) -> None:
        self._live.set(message_id, LiveCard(card_id=card_id))

    def live(self, message_id: str) -> LiveCard | None:
        return self._live.get(message_id)

    def forget(self, message_id: str) -> None:
        self._live.pop(message_id)

    async def update(self, card: LiveCard, text: str) -> None:
        async with card.lock:
            await self._content(card, text)

    async def finish(self, message_id: str, card: LiveCard, text: str) -> None:
        """The final content, then streaming off; the card is forgotten either way."""
        try:
            async with card.lock:
                await self._content(card, text)
                sequence = card.next()
                settings = dumps({"config": {"streaming_mode": False}})
                await self._api.call(
                    "PATCH",
                    f"{CARDS_PATH}/{card.card_id}/settings",
                    body={
                        "settings": settings,
                        "sequence": sequence,
                        "uuid": _uuid(card, sequence),
                    },
                )
        finally:
            self.forget(message_id)

    async def _content(self, card: LiveCard, text: str) -> None:
        sequence = card.next()
        await self._api.call(
            "PUT",
            f"{CARDS_PATH}/{card.card_id}/elements/{ELEMENT_ID}/content",
            body={
                "content": card_markdown(text),
                "sequence": sequence,
                "uuid": _uuid(card, sequence),
            },
        )


def _uuid(card: LiveCard, sequence: int) -> str:
    """Feishu treats a repeated uuid as already done, so a retried update is not applied twice."""
    return f"{card.card_id}-{sequence}"
