"""How the kernel builds the usage room's route step (design §25), from what the route has:
the settings, the store (its ``UsageStore``, if it keeps one), who is an admin, and the
route's actions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from prometheus_client import CollectorRegistry

from bot.config.settings import Settings
from bot.messages import InboundMessage, utc_now
from bot.pipeline.access import Role
from bot.pipeline.journal import Journal
from bot.pipeline.route import RouteActions
from bot.pipeline.turn_hooks import TurnUsage
from bot.ports import Store
from bot.ports.usage import usage_of
from bot.usage.budgets import Budgets
from bot.usage.config import UsageSettings
from bot.usage.meter import TurnIdentity, UsageMeter
from bot.usage.metrics import UsageMetrics
from bot.usage.rate import MessageRate
from bot.usage.step import UsageGate


def usage_gate(
    settings: Callable[[], Settings],
    store: Store,
    *,
    role_of: Callable[[InboundMessage], Role],
    actions: RouteActions,
    clock: Callable[[], datetime] = utc_now,
) -> UsageGate:
    """The rate and budgets on ``store``'s usage (a store without one holds nothing back);
    ``settings`` is read per message, so a reload changes the limits at once."""

    def section() -> UsageSettings:
        return settings().usage

    usage = usage_of(store)
    return UsageGate(
        rate=MessageRate(section, usage, clock),
        budgets=Budgets(section, usage, clock),
        role_of=role_of,
        actions=actions,
        journal=Journal(store.inbound),
    )


def turn_meter(
    settings: Callable[[], Settings],
    store: Store,
    registry: CollectorRegistry,
    *,
    clock: Callable[[], datetime] = utc_now,
) -> Callable[[TurnUsage], Awaitable[None]]:
    """What a turn calls with each model call's usage (``TurnHooks.used``); ``clock`` stamps
    it (the budgets' clock, so a test that moves one moves both)."""
    meter = UsageMeter(settings, store, UsageMetrics(registry))

    async def used(usage: TurnUsage) -> None:
        key = usage.key
        turn = TurnIdentity(
            at=clock(),
            channel=key.channel,
            account_id=key.account_id,
            chat_id=key.chat_id,
            user_id=usage.user_id,
            thread_id=usage.thread_id,
            correlation_id=usage.correlation_id,
        )
        await meter.record(turn, [usage.call], counts_turn=usage.first)

    return used
