"""How the kernel builds the usage room's route step (design §25), from what the route has:
the settings, the store (its ``UsageStore``, if it keeps one), who is an admin, and the
route's actions."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from bot.config.settings import Settings
from bot.messages import InboundMessage, utc_now
from bot.pipeline.access import Role
from bot.pipeline.journal import Journal
from bot.pipeline.route import RouteActions
from bot.ports import Store
from bot.ports.usage import usage_of
from bot.usage.budgets import Budgets
from bot.usage.config import UsageSettings
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
