"""Bolt listeners: every Slack request ends in ``publish`` and an ack, nothing more (design §5).

The app runs with ``process_before_response=True``: bolt acknowledges (Socket Mode envelope
ack, HTTP 200) only after the listener returned, and a listener returns right after
``publish`` recorded the message durably. When the kernel cannot take a message (queue full,
shutting down) the listener answers 503, so Slack keeps the event and redelivers it. No agent
work happens here; the one follow-up (marking the choice on a clicked question, never on
other buttons: ``channels.base.marks_choice``) runs as a task the adapter owns.

Redeliveries and the ``app_mention``/``message`` pair: the kernel dedupes durably on the
message ``ts``; this module also remembers recent ``event_id``s and (channel, ts) keys so a
redelivery (``retry_attempt`` > 0) or the second event of a pair is acked without touching
the store. A key is claimed before publishing and released if the kernel refused it, so a
refused event is never marked as seen.

Catch-all listeners ack every other event, action, shortcut and view: bolt leaves requests
without a listener unacknowledged, and Slack would keep retrying them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.response import BoltResponse

from bot.delivery.bounded import RecentSet
from bot.messages import InboundMessage
from bot.ports import Publish
from channels.base import marks_choice
from channels.slack.inbound import REVISION_SUBTYPES, ChoiceClick, Json, Translator
from channels.slack.render import ACTION_PREFIX

logger = logging.getLogger(__name__)

RECENT_KEYS = 8192
ANY = re.compile(".*")


class RecentKeys:
    """A bounded set of recently handled keys (LRU)."""

    def __init__(self, size: int = RECENT_KEYS) -> None:
        self._keys: RecentSet[str] = RecentSet(size)

    def claim(self, keys: Sequence[str]) -> bool:
        """Claim all ``keys`` unless one of them is already held."""
        if any(key in self._keys for key in keys):
            return False
        for key in keys:
            if key not in self._keys:  # a key named twice keeps its first place
                self._keys.add(key)
        return True

    def release(self, keys: Sequence[str]) -> None:
        for key in keys:
            self._keys.discard(key)


class Listeners:
    def __init__(
        self,
        translator: Translator,
        publish: Publish,
        on_choice: Callable[[ChoiceClick], None],
        accepting: Callable[[], bool],
    ) -> None:
        self._translator = translator
        self._publish = publish
        self._on_choice = on_choice
        self._accepting = accepting
        self._recent = RecentKeys()

    def register(self, app: AsyncApp) -> None:
        """Specific listeners first: bolt runs the first one that matches."""
        app.event("message")(self.on_message)
        app.event("app_mention")(self.on_mention)
        app.action(re.compile(f"^{re.escape(ACTION_PREFIX)}"))(self.on_button)
        app.command(ANY)(self.on_command)
        app.event(ANY)(self.on_other_event)
        app.action(ANY)(self.ack_only)
        app.shortcut(ANY)(self.ack_only)
        app.view(ANY)(self.ack_only)

    async def on_message(self, body: Json, event: Json) -> BoltResponse | None:
        return await self._on_event(body, event, via_mention=False)

    async def on_mention(self, body: Json, event: Json) -> BoltResponse | None:
        return await self._on_event(body, event, via_mention=True)

    async def on_other_event(self, body: Json) -> None:
        logger.debug("ignored event type=%s", (body.get("event") or {}).get("type"))

    async def ack_only(self, ack: AsyncAck) -> None:
        await ack()

    async def on_button(self, ack: AsyncAck, body: Json) -> BoltResponse | None:
        found = await self._translator.button(body)
        if found is None:
            await ack()
            return None
        message, click = found
        refused = await self._publish_once(message, (f"action:{message.message_id}",))
        if refused is not None:
            return refused
        await ack()
        if message.button is not None and marks_choice(message.button.payload):
            self._on_choice(click)
        return None

    async def on_command(self, ack: AsyncAck, body: Json) -> BoltResponse | None:
        message = await self._translator.command(body)
        if message is None:
            await ack()
            return None
        refused = await self._publish_once(message, (message.message_id,))
        if refused is None:
            await ack()
        return refused

    async def _on_event(self, body: Json, event: Json, *, via_mention: bool) -> BoltResponse | None:
        if event.get("subtype") in REVISION_SUBTYPES:
            message = await self._translator.revision(event)  # an edit or deletion (design §21)
        elif self._translator.is_ignored(event):
            return None
        else:
            message = await self._translator.message(event, via_mention=via_mention)
        if message is None:
            return None
        keys = [f"message:{message.chat_id}:{message.message_id}"]
        if body.get("event_id"):
            keys.append(f"event:{body['event_id']}")
        return await self._publish_once(message, keys)

    async def _publish_once(
        self, message: InboundMessage, keys: Sequence[str]
    ) -> BoltResponse | None:
        """``None`` to acknowledge; a 503 response when the kernel did not take it."""
        if not self._accepting():
            return BoltResponse(status=503, body="not accepting events")
        if not self._recent.claim(keys):
            logger.debug("already handled %s", keys[0])
            return None
        try:
            admission = await self._publish(message)
        except BaseException:
            self._recent.release(keys)
            raise
        if admission.ack:
            return None
        self._recent.release(keys)
        return BoltResponse(status=503, body=f"not accepted: {admission}")
