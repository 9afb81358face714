"""What the bot did, as a test reads it: calls, deliveries and acks, messages, cards, uploads.

Accessors return snapshots taken under the fake's lock; waiting is ``common.observe``'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tests.fakes.common.observe import Observing
from tests.fakes.feishu.records import (
    Ack,
    Call,
    CardView,
    Delivery,
    Ephemeral,
    Message,
    Redelivery,
    Upload,
)
from tests.fakes.feishu.server import FeishuServer


class Observations(Observing):
    _server: FeishuServer
    _who = "FakeFeishu"

    # ------------------------------------------------------------------ REST calls

    def calls(self, name_or_path: str | None = None) -> list[Call]:
        """Every REST call, or those whose ``name`` or ``path`` equals ``name_or_path``."""
        with self._guard:
            return [
                c
                for c in self._server.calls
                if name_or_path is None or name_or_path in (c.name, c.path)
            ]

    def wait_call(
        self, name: str, predicate: Callable[[Call], bool] | None = None, timeout: float = 5.0
    ) -> Call:
        """The first call named ``name`` (made so far or later) matching ``predicate``."""

        def missing() -> str:
            seen = [c.name for c in self.calls()]
            return f"no matching {name} call; calls so far: {seen}"

        return self._wait_first(lambda: self.calls(name), predicate, timeout, missing)

    async def await_call(
        self, name: str, predicate: Callable[[Call], bool] | None = None, within: float = 5.0
    ) -> Call:
        return await asyncio.to_thread(self.wait_call, name, predicate, within)

    def tokens_issued(self) -> list[str]:
        with self._guard:
            return list(self._server.world.tokens_issued)

    # ------------------------------------------------------------------ long connection

    def connections(self) -> int:
        """Long connections opened so far (a reconnect counts again)."""
        with self._guard:
            return len(self._server.longconn.conns)

    def live_connections(self) -> int:
        return len(self._server.longconn.live_conns())

    def wait_connected(self, count: int = 1, timeout: float = 5.0) -> None:
        """Block until ``count`` connections were opened and one is live."""
        self.wait_until(
            lambda: self.connections() >= count and self.live_connections() > 0, timeout
        )

    async def await_connected(self, count: int = 1, timeout: float = 5.0) -> None:  # noqa: ASYNC109
        await asyncio.to_thread(self.wait_connected, count, timeout)

    def pings(self) -> int:
        with self._guard:
            return self._server.longconn.pings

    def deliveries(self) -> list[Delivery]:
        with self._guard:
            return list(self._server.longconn.deliveries)

    def pending(self) -> list[str]:
        """Event ids queued for the next connection."""
        with self._guard:
            return [item.event_id for item in self._server.longconn.outbox]

    def acks(self) -> list[Ack]:
        with self._guard:
            return list(self._server.longconn.acks)

    def unacked(self) -> list[str]:
        """Event ids delivered whose frame the client never answered."""
        return self._server.longconn.unacked()

    def wait_ack(self, event_id: str, timeout: float = 5.0) -> Ack:
        return self._wait_first(
            self.acks,
            lambda a: a.event_id == event_id,
            timeout,
            lambda: f"no ack for event {event_id}",
        )

    async def await_ack(self, event_id: str, timeout: float = 5.0) -> Ack:  # noqa: ASYNC109
        return await asyncio.to_thread(self.wait_ack, event_id, timeout)

    def redelivery_checks(self) -> list[Redelivery]:
        """Every check ``redeliver_unacked`` made, in order (acked, redelivered, exhausted)."""
        with self._guard:
            return list(self._server.longconn.redeliveries)

    def redeliveries(self, origin: str | None = None) -> list[Redelivery]:
        """The checks that sent an event again (``new_event_id`` set), optionally only
        those of the message first delivered as event ``origin``."""
        return [
            r
            for r in self.redelivery_checks()
            if r.outcome == "redelivered" and (origin is None or r.origin == origin)
        ]

    # ------------------------------------------------------------------ tenant state

    def ephemerals(self, chat_id: str | None = None) -> list[Ephemeral]:
        """Cards the bot showed to one member (``ephemeral/v1/send``), oldest first."""
        with self._guard:
            return [e for e in self._server.world.ephemerals if chat_id in (None, e.chat_id)]

    def sent_messages(self, chat_id: str | None = None) -> list[Message]:
        """The bot's messages (sends and replies), oldest first, as they read now."""
        with self._guard:
            return self._server.world.bot_messages(chat_id)

    def message(self, message_id: str) -> Message | None:
        """Any message the fake knows (the bot's or a pushed one)."""
        with self._guard:
            found = self._server.world.messages.get(message_id)
            return None if found is None else found.view()

    def cards(self) -> dict[str, CardView]:
        with self._guard:
            world = self._server.world
            return {card_id: world.card_view(card) for card_id, card in world.cards.items()}

    def card(self, card_id: str) -> CardView:
        return self.cards()[card_id]

    def uploads(self) -> dict[str, Upload]:
        """Uploaded images and files by ``image_key`` / ``file_key``."""
        with self._guard:
            return dict(self._server.world.uploads)

    def reactions(self, message_id: str | None = None) -> list[dict[str, Any]]:
        """Live reactions: ``{"reaction_id", "message_id", "emoji_type"}``."""
        with self._guard:
            return [
                {
                    "reaction_id": r.reaction_id,
                    "message_id": r.message_id,
                    "emoji_type": r.emoji_type,
                }
                for r in self._server.world.reactions.values()
                if message_id is None or r.message_id == message_id
            ]
