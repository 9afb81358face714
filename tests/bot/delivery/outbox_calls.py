"""A stream's outbox made of two functions, for the progress tests."""

from __future__ import annotations

from dataclasses import dataclass

from bot.delivery.progress import OutboxSend


@dataclass(frozen=True, slots=True)
class OutboxCalls:
    """A ``PlaceholderOutbox``: ``send_now`` and ``withdraw`` as given."""

    send_now: OutboxSend
    withdraw: OutboxSend
