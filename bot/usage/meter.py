"""What a turn's model calls used (design §25): the provider's reports summed per model, priced
from ``usage.prices``, recorded in the store and counted in the metrics.

A call whose usage the provider did not report is counted as an unreported call and adds no
tokens: unknown is never zero, so a total says how many calls it could not count. Cost is per
million tokens; cached input tokens (a part of the input) are priced ``cached``, else
``input``, and the rest of the input ``input``. A model without a price costs nothing.

Each call is recorded as the agent reports it, before the run goes on: a turn cut short (a
crash, a timeout) still counts every call the provider served. Recording never fails a turn
(the call was served either way): a store error is logged and counted
(``switchboard_usage_unrecorded_calls_total``), not raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.config.settings import Settings
from bot.errors import StoreError
from bot.ports import Store
from bot.ports.agent import ModelUsage
from bot.ports.usage import UsageRecord, usage_of
from bot.text.escape import escape_controls
from bot.usage.config import Price
from bot.usage.metrics import UsageMetrics

logger = logging.getLogger(__name__)

PER_MILLION = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnIdentity:
    """Whose turn it was, where and when: what each of its usage rows is filed under."""

    at: datetime
    channel: str
    account_id: str
    chat_id: str
    user_id: str
    thread_id: str
    correlation_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelTally:
    """One model's calls in a turn, summed."""

    calls: int = 0
    unreported_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def plus(self, call: ModelUsage) -> ModelTally:
        if call.input_tokens is None or call.output_tokens is None:
            return ModelTally(
                calls=self.calls + 1,
                unreported_calls=self.unreported_calls + 1,
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
                cached_tokens=self.cached_tokens,
            )
        return ModelTally(
            calls=self.calls + 1,
            unreported_calls=self.unreported_calls,
            input_tokens=self.input_tokens + call.input_tokens,
            output_tokens=self.output_tokens + call.output_tokens,
            cached_tokens=self.cached_tokens + (call.cached_tokens or 0),
        )


def cost_of(tally: ModelTally, price: Price | None) -> float:
    if price is None:
        return 0.0
    cached = min(tally.cached_tokens, tally.input_tokens)
    cached_price = price.input if price.cached is None else price.cached
    return (
        (tally.input_tokens - cached) * price.input
        + cached * cached_price
        + tally.output_tokens * price.output
    ) / PER_MILLION


def usage_records(
    turn: TurnIdentity, calls: Sequence[ModelUsage], prices: Mapping[str, Price]
) -> list[UsageRecord]:
    """One row per model the turn called, in the order each was first called."""
    tallies: dict[str, ModelTally] = {}
    for call in calls:
        tallies[call.model] = tallies.get(call.model, ModelTally()).plus(call)
    return [
        UsageRecord(
            at=turn.at, channel=turn.channel, account_id=turn.account_id, chat_id=turn.chat_id,
            user_id=turn.user_id, thread_id=turn.thread_id, model=model,
            correlation_id=turn.correlation_id, calls=tally.calls,
            unreported_calls=tally.unreported_calls, input_tokens=tally.input_tokens,
            output_tokens=tally.output_tokens, cached_tokens=tally.cached_tokens,
            cost=cost_of(tally, prices.get(model)),
        )
        for model, tally in tallies.items()
    ]  # fmt: skip


class UsageMeter:
    """Records each turn's usage: in the store when it keeps usage, in the metrics always."""

    def __init__(
        self, settings: Callable[[], Settings], store: Store, metrics: UsageMetrics
    ) -> None:
        self._settings = settings
        self._usage = usage_of(store)  # whether a store keeps usage never changes
        self._metrics = metrics

    async def record(
        self, turn: TurnIdentity, calls: Sequence[ModelUsage], *, counts_turn: bool = True
    ) -> list[UsageRecord]:
        """The rows of these calls of the turn (none: no call), recorded; never raises a store
        error. ``counts_turn``: they are the turn's first (``UsageStore.record``)."""
        records = usage_records(turn, calls, self._settings().usage.prices)
        self._metrics.count(records)
        if self._usage is None or not records:
            return records
        try:
            await self._usage.record(records, counts_turn=counts_turn)
        except StoreError as exc:
            self._metrics.not_recorded(turn.channel)
            logger.warning(
                "usage of turn %s not recorded: %s",
                turn.correlation_id,
                escape_controls(str(exc)),
            )
        return records
