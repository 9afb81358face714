"""Which outbox rows belong to a push (design §19), known below the pipeline so the delivery
path can count how pushes end (``switchboard_push_deliveries_total``).

A push's delivery id is its rows' correlation id (``push-`` + hex). A text or file push is
its rows keyed ``<id>/push/<n>``; a ``run_agent`` push is delivered by its answer's rows
(``<id>/final/<n>``): its progress placeholder is no delivery (it is withdrawn or edited).
"""

from __future__ import annotations

from typing import Final

from bot.messages import OutboundFile
from bot.records import OutboxItem

DELIVERY_PREFIX: Final = "push-"
PUSH_TAG: Final = "push"
"""The outbox rows of a text or file push are keyed ``<delivery id>/push/<n>``."""
ANSWER_TAG: Final = "final"


def push_kind(item: OutboxItem) -> str | None:
    """``text``, ``file`` or ``run_agent`` for a row that delivers a push, else ``None``."""
    delivery_id = item.correlation_id
    if not delivery_id.startswith(DELIVERY_PREFIX):
        return None
    key = item.idempotency_key
    if key.startswith(f"{delivery_id}/{PUSH_TAG}/"):
        return "file" if isinstance(item.delivery, OutboundFile) else "text"
    if key.startswith(f"{delivery_id}/{ANSWER_TAG}/"):
        return "run_agent"
    return None
