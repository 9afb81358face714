"""``/usage`` and ``/admin usage`` (design §25): what a user, a chat or the bot has used today
and this month, and how far each limit is spent, in the days of ``usage.timezone``.

``/usage`` is anyone's own view (the budgets that hold them, with their resets);
``/admin usage`` is the bot's month (totals, top users and chats), and ``/admin usage user
<id>`` / ``chat <id>`` one of them, where ``<id>`` is this channel's or ``<channel>:<id>``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Final
from zoneinfo import ZoneInfo

from bot.commands.admin import KNOWN_CHANNELS
from bot.commands.markdown import code
from bot.commands.registry import Command, CommandCall, CommandRegistry, Subcommand
from bot.messages import utc_now
from bot.ports.usage import UsageDimension, UsageFilter, UsageStore, UsageTotal, usage_of
from bot.usage.budgets import Budgets, Standing, period_of, requester
from bot.usage.config import BudgetPeriod, UsageSettings
from bot.usage.wording import amount, moment, money, platform

OFF = "Usage is not counted here (the store keeps none)."
TOP = 10
"""Users and chats ``/admin usage`` lists."""
PERIODS: Final[tuple[tuple[str, BudgetPeriod], ...]] = (("Today", "day"), ("This month", "month"))
TOPS: Final[tuple[tuple[str, UsageDimension], ...]] = (("Top users", "user"), ("Top chats", "chat"))
ADMIN_USAGE = "Usage: `/admin usage`, `/admin usage user <id>` or `/admin usage chat <id>`."


def _section(call: CommandCall) -> UsageSettings:
    return call.env.settings().usage


def _describe(total: UsageTotal, usage: UsageSettings) -> str:
    """``3 turns, 1,204 tokens (1,000 in, 204 out), cost 0.0123; 1 call unreported``."""
    turns = "turn" if total.turns == 1 else "turns"
    text = (
        f"{amount(total.turns)} {turns}, {amount(total.tokens)} tokens"
        f" ({amount(total.input_tokens)} in, {amount(total.output_tokens)} out)"
    )
    if usage.prices:
        text += f", cost {money(total.cost)}"
    if total.unreported_calls:
        calls = "call" if total.unreported_calls == 1 else "calls"
        text += f"; {amount(total.unreported_calls)} model {calls} unreported (not counted)"
    return text


async def _day_and_month(
    store: UsageStore, where: UsageFilter, usage: UsageSettings, now: datetime
) -> list[str]:
    """``Today: …`` and ``This month: …`` for the rows ``where`` selects."""
    zone = ZoneInfo(usage.timezone)
    lines = []
    for label, per in PERIODS:
        since = period_of(now, per, zone).start
        (total,) = await store.totals(replace(where, since=since))
        lines.append(f"{label}: {_describe(total, usage)}")
    return lines


def _limit_line(standing: Standing, now: datetime, zone: ZoneInfo) -> str:
    budget = standing.budget
    whose = {"user": "yours", "chat": "this chat's", "channel": "this channel's"}
    owner = whose.get(budget.scope, "the bot's")
    on = f" on {platform(budget.channel)}" if budget.channel else ""
    mark = "⛔" if standing.exhausted else "-"
    return (
        f"{mark} {owner} per {budget.per}{on}: {standing.describe()};"
        f" resets {moment(standing.period.end, now, zone)}"
    )


async def _usage(clock: Callable[[], datetime], call: CommandCall) -> str:
    store, usage = usage_of(call.env.store), _section(call)
    if store is None:
        return OFF
    if call.args:
        return "Usage: `/usage` (it takes no arguments)."
    now, message = clock(), call.message
    mine = UsageFilter(channel=message.channel, user_id=message.sender.id)
    lines = [f"**Your usage** (days in {usage.timezone})"]
    lines += await _day_and_month(store, mine, usage, now)
    who = requester(message, call.role)
    budgets = Budgets(lambda: usage, store, clock)
    standings = await budgets.standings(who)
    zone = ZoneInfo(usage.timezone)
    if standings:
        lines.append("**Limits**")
        lines += [_limit_line(standing, now, zone) for standing in standings]
    exempt = len(budgets.applying(replace(who, is_admin=False))) - len(budgets.applying(who))
    if who.is_admin and exempt:
        lines.append(f"As an admin you are exempt from {exempt} of the limits.")
    if not standings and not exempt:
        lines.append("No limits hold here.")
    return "\n".join(lines)


def _target(call: CommandCall) -> tuple[str, str] | None:
    """``<id>`` of this channel, or ``<channel>:<id>``."""
    if len(call.args) != 2:  # ``user <id>`` / ``chat <id>``
        return None
    channel, sep, ident = call.args[1].partition(":")
    if sep and ident and (channel in KNOWN_CHANNELS or channel in call.env.hub.names()):
        return channel, ident
    return call.message.channel, call.args[1]


async def _admin_usage(clock: Callable[[], datetime], call: CommandCall) -> str:
    store, usage = usage_of(call.env.store), _section(call)
    if store is None:
        return OFF
    if not call.args:
        return await _month(store, usage, clock())
    target = _target(call) if call.args[0] in ("user", "chat") else None
    if target is None:
        return ADMIN_USAGE
    channel, ident = target
    if call.args[0] == "user":
        where, title = UsageFilter(channel=channel, user_id=ident), "User"
    else:
        where, title = UsageFilter(channel=channel, chat_id=ident), "Chat"
    lines = [f"**{title} {code(f'{channel}:{ident}')}** (days in {usage.timezone})"]
    lines += await _day_and_month(store, where, usage, clock())
    return "\n".join(lines)


async def _month(store: UsageStore, usage: UsageSettings, now: datetime) -> str:
    """The month's totals, then its top users and chats."""
    start = period_of(now, "month", ZoneInfo(usage.timezone)).start
    since = UsageFilter(since=start)
    (total,) = await store.totals(since)
    local = start.astimezone(ZoneInfo(usage.timezone))
    lines = [
        f"**Usage this month** (since {local.day} {local:%B}, {usage.timezone})",
        f"Total: {_describe(total, usage)}",
    ]
    for heading, by in TOPS:
        groups = await store.totals(since, by=by, limit=TOP)
        if groups:
            lines.append(f"**{heading}**")
            lines += [
                f"{rank}. {code(group.group)} — {_describe(group, usage)}"
                for rank, group in enumerate(groups, start=1)
            ]
    return "\n".join(lines)


def register_usage_commands(
    registry: CommandRegistry, clock: Callable[[], datetime] = utc_now
) -> None:
    """``/usage`` for everyone and ``/admin usage`` for admins (a part of ``/admin``)."""
    registry.add(
        Command(
            name="usage",
            usage="/usage",
            summary="your model usage today and this month, and the limits that hold you",
            handler=functools.partial(_usage, clock),
        )
    )
    registry.add_subcommand(
        Subcommand(
            parent="admin",
            name="usage",
            usage="/admin usage [user <id> | chat <id>]",
            summary="this month's usage: totals, top users and chats; or one user's or chat's",
            handler=functools.partial(_admin_usage, clock),
        )
    )
