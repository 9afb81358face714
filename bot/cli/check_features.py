"""``switchboard check``: approvals and usage settings that load but will not do what they
say (design §24, §25)."""

from __future__ import annotations

from collections.abc import Iterator

from bot.cli.check_findings import Finding
from bot.config.settings import Settings


def feature_findings(settings: Settings) -> Iterator[Finding]:
    yield from _approvals(settings)
    yield from _budgets(settings)


def _approvals(settings: Settings) -> Iterator[Finding]:
    approvals = settings.agent.approvals
    if approvals.tools and settings.agent.backend == "echo":
        yield Finding(
            key="agent.approvals.tools",
            problem="the echo backend runs no tools, so nothing ever waits for an approval",
            fix="use agent.backend embedded (or remote with a graph that has the middleware)",
        )
    if approvals.tools and settings.agent.backend == "remote":
        yield Finding(
            key="agent.approvals.tools",
            problem="a remote graph decides itself which tools wait (its own middleware); "
            "here these keys only say who may decide",
            fix="gate the tools in the graph (HumanInTheLoopMiddleware); keep deciders here",
        )
    admins_only = [
        name
        for name in approvals.tools
        if approvals.deciders_of(name) == "admins" and not settings.access.admins
    ]
    if admins_only:
        yield Finding(
            key="agent.approvals.deciders",
            problem=f"only admins may decide on {', '.join(sorted(admins_only))}, and "
            "access.admins is empty, so nobody in chat can",
            fix="add admins ('<channel>:<user id>'), or decide with `switchboard approvals` "
            "or on the console",
        )


def _budgets(settings: Settings) -> Iterator[Finding]:
    usage = settings.usage
    if any(budget.cost is not None for budget in usage.budgets) and not usage.prices:
        yield Finding(
            key="usage.budgets",
            problem="a budget limits cost, but usage.prices is empty, so every turn costs 0 "
            "and the budget never holds",
            fix="add the models' prices under usage.prices, or limit tokens instead",
        )
    enabled = set(settings.channels.enabled())
    for budget in usage.budgets:
        if budget.channel is not None and budget.channel not in enabled:
            yield Finding(
                key="usage.budgets",
                problem=f"a budget names channel {budget.channel!r}, which is not enabled",
                fix="name an enabled channel (telegram, slack, feishu, dingtalk, console)",
            )
