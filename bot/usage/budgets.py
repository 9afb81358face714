"""Token and cost budgets per day or month (design §25): checked before a turn starts.

Each configured ``usage.budgets`` entry that applies to a message (its channel filter; admins
exempt unless the budget or ``usage.exempt_admins`` says otherwise) is summed from the usage
store since its period began in ``usage.timezone`` (local midnight, or the 1st of the month),
and the message is refused once the sum reaches the limit.

The check reads the shared store, so on PostgreSQL every replica sees one total (cluster-wide).
A call's usage is recorded as the provider reports it, and a budget is checked before a turn
starts, so the overshoot is bounded by the runs already in flight when the limit is reached:
those finish and count, nothing new starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from bot.messages import InboundMessage, utc_now
from bot.pipeline.access import Role
from bot.ports.usage import UsageFilter, UsageStore
from bot.usage.config import Budget, BudgetPeriod, BudgetScope, UsageSettings
from bot.usage.wording import amount, moment, money, platform

Measure = Literal["tokens", "cost"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Requester:
    """Whose message would start a turn, as budgets and the message rate see it."""

    channel: str
    account_id: str
    chat_id: str
    user_id: str
    is_admin: bool


def requester(message: InboundMessage, role: Role) -> Requester:
    return Requester(
        channel=message.channel,
        account_id=message.account_id,
        chat_id=message.chat_id,
        user_id=message.sender.id,
        is_admin=role is Role.ADMIN,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Period:
    """A budget's day or month: where it began and where the next one begins (aware)."""

    start: datetime
    end: datetime


def period_of(now: datetime, per: BudgetPeriod, zone: ZoneInfo) -> Period:
    """The day or month ``now`` falls in, as the clocks in ``zone`` show it."""
    today = now.astimezone(zone).date()
    if per == "day":
        return Period(start=_midnight(today, zone), end=_midnight(today + timedelta(days=1), zone))
    first = today.replace(day=1)
    following = (first + timedelta(days=32)).replace(day=1)
    return Period(start=_midnight(first, zone), end=_midnight(following, zone))


def _midnight(day: date, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """How far one budget is spent for one requester, in its current period."""

    budget: Budget
    used: float
    """Tokens (input plus output) or cost, as the budget measures."""
    period: Period

    @property
    def measure(self) -> Measure:
        return "tokens" if self.budget.tokens is not None else "cost"

    @property
    def limit(self) -> float:
        return self.budget.tokens if self.budget.tokens is not None else self.budget.cost or 0.0

    @property
    def exhausted(self) -> bool:
        return self.used >= self.limit

    @property
    def unit(self) -> str:
        return "tokens" if self.measure == "tokens" else "in model costs"

    def describe(self) -> str:
        """``200,412 of 200,000 tokens``."""
        return f"{self.say(self.used)} of {self.say(self.limit)} {self.unit}"

    def say(self, value: float) -> str:
        return amount(int(value)) if self.measure == "tokens" else money(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """A message refused because a budget is spent: which, how far, and when it resets."""

    scope: BudgetScope
    per: BudgetPeriod
    measure: Measure
    limit: float
    used: float
    resets_at: datetime
    text: str
    """The reply to the refused message."""


class Budgets:
    """``usage.budgets`` held against the usage store (``None``: nothing is counted, no budget
    holds). ``clock`` is injectable so tests can move to the next day."""

    def __init__(
        self,
        settings: Callable[[], UsageSettings],
        store: UsageStore | None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._settings = settings
        self._store = store
        self._clock = clock

    def applying(self, who: Requester) -> list[Budget]:
        """The budgets that hold ``who``'s messages here (none without a usage store)."""
        usage = self._settings()
        if self._store is None:
            return []
        return [budget for budget in usage.budgets if _holds(budget, who, usage)]

    async def standings(self, who: Requester) -> list[Standing]:
        """Each budget that holds ``who``, with what is used of it in its current period."""
        now = self._clock()
        return [await self._standing(budget, who, now) for budget in self.applying(who)]

    async def check(self, who: Requester) -> Refusal | None:
        """The first spent budget that holds ``who`` (in configuration order), or ``None``."""
        now = self._clock()
        for budget in self.applying(who):
            standing = await self._standing(budget, who, now)
            if standing.exhausted:
                return self._refusal(standing, who, now)
        return None

    async def _standing(self, budget: Budget, who: Requester, now: datetime) -> Standing:
        assert self._store is not None  # noqa: S101 - without one, no budget applies
        period = period_of(now, budget.per, ZoneInfo(self._settings().timezone))
        (total,) = await self._store.totals(scope_filter(budget, who, period.start))
        used = total.tokens if budget.tokens is not None else total.cost
        return Standing(budget=budget, used=used, period=period)

    def _refusal(self, standing: Standing, who: Requester, now: datetime) -> Refusal:
        usage, budget = self._settings(), standing.budget
        text = refusal_text(standing, who, usage, now)
        return Refusal(
            scope=budget.scope,
            per=budget.per,
            measure=standing.measure,
            limit=standing.limit,
            used=standing.used,
            resets_at=standing.period.end,
            text=text,
        )


def _holds(budget: Budget, who: Requester, usage: UsageSettings) -> bool:
    if budget.channel is not None and budget.channel != who.channel:
        return False
    exempt = usage.exempt_admins if budget.exempt_admins is None else budget.exempt_admins
    return not (who.is_admin and exempt)


def scope_filter(budget: Budget, who: Requester, since: datetime) -> UsageFilter:
    """The rows a budget counts for ``who``: user and chat ids are the platform's, so they are
    qualified by the channel; ``global`` counts everyone (on its channel if it names one)."""
    if budget.scope == "user":
        return UsageFilter(since=since, channel=who.channel, user_id=who.user_id)
    if budget.scope == "chat":
        return UsageFilter(since=since, channel=who.channel, chat_id=who.chat_id)
    if budget.scope == "channel":
        return UsageFilter(since=since, channel=who.channel)
    return UsageFilter(since=since, channel=budget.channel)


_SUBJECTS: dict[BudgetScope, tuple[str, str]] = {
    "user": ("You have", "your"),
    "chat": ("This chat has", "its"),
    "channel": ("The bot has", "its"),
    "global": ("The bot has", "its"),
}


def refusal_text(standing: Standing, who: Requester, usage: UsageSettings, now: datetime) -> str:
    """``⛔ You have used 200,412 of your 200,000 tokens for today. It resets at 00:00 UTC
    (in 5 h 12 min). To raise it, ask an admin of this bot.``"""
    budget = standing.budget
    subject, owner = _SUBJECTS[budget.scope]
    say = standing.say
    spent = f"{say(standing.used)} of {owner} {say(standing.limit)} {standing.unit}"
    where = budget.channel or (who.channel if budget.scope == "channel" else None)
    on = f" on {platform(where)}" if where else ""
    period = "today" if budget.per == "day" else "this month"
    resets = moment(standing.period.end, now, ZoneInfo(usage.timezone))
    return (
        f"⛔ {subject} used {spent}{on} for {period}. It resets {resets}."
        f" To raise it, ask {usage.contact}."
    )
