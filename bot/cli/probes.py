"""``switchboard check --online``: ask each enabled channel and the model whether they answer.

Every adapter plugs in by implementing ``probe() -> str`` (Telegram getMe, Slack auth.test,
Feishu tenant token, DingTalk access token); agent backends do the same for their endpoint.
Nothing is started: adapters are constructed without I/O and only their probe runs. A failure
carries the URL it called and what to try (``check_online``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Protocol, cast, runtime_checkable

from bot.cli.check_online import endpoint, hint
from bot.config.settings import Settings
from bot.errors import AgentError, BotError
from bot.ops.routes import RouteTable
from bot.ports import ChannelContext
from bot.registry import EdgeKind, load

PROBE_TIMEOUT_S = 15.0


@runtime_checkable
class Probeable(Protocol):
    async def probe(self) -> str:
        """A short description of what answered; raises ``BotError`` when it did not."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    target: str
    ok: bool
    detail: str
    url: str = ""
    """Where a failed probe went (credentials redacted)."""
    hint: str = ""
    """What to try when it failed."""


class _Unobserved:
    """Nothing is started, so nothing reports channel health (results say what happened)."""

    def connected(self) -> None: ...
    def disconnected(self, reason: str) -> None: ...
    def auth_failed(self, reason: str) -> None: ...
    def activity(self) -> None: ...
    def failed(self, reason: str) -> None: ...


def unstarted_context(settings: Settings) -> ChannelContext:
    """The context of an adapter built only to be asked something, never started."""
    return ChannelContext(routes=RouteTable(), state_dir=settings.state_dir, health=_Unobserved())


async def run_probes(settings: Settings) -> list[ProbeResult]:
    results = []
    context = unstarted_context(settings)
    for name in settings.channels.enabled():
        adapter = cast(Callable[[Settings, ChannelContext], object], load(EdgeKind.CHANNEL, name))
        build = functools.partial(adapter, settings, context)
        results.append(await _probe(f"channel {name}", build))
    backend = settings.agent.backend
    agent = cast(Callable[[Settings], object], load(EdgeKind.AGENT, backend))
    results.append(await _probe(f"agent {backend}", functools.partial(agent, settings)))
    return [_explained(settings, result) for result in results]


def _explained(settings: Settings, result: ProbeResult) -> ProbeResult:
    """A failure with the URL it tried and what to try next."""
    if result.ok:
        return result
    url = endpoint(settings, result.target)
    return replace(result, url=url, hint=hint(result.target, result.detail))


async def _probe(target: str, build: Callable[[], object]) -> ProbeResult:
    try:
        subject = build()
    except BotError as exc:
        return ProbeResult(target=target, ok=False, detail=str(exc))
    if not isinstance(subject, Probeable):
        return ProbeResult(target=target, ok=True, detail="nothing to probe")
    try:
        detail = await asyncio.wait_for(_call(subject.probe()), PROBE_TIMEOUT_S)
    except TimeoutError:
        return ProbeResult(target=target, ok=False, detail=f"no answer within {PROBE_TIMEOUT_S:g}s")
    except AgentError as exc:
        return ProbeResult(target=target, ok=False, detail=exc.reason)
    except BotError as exc:
        return ProbeResult(target=target, ok=False, detail=str(exc) or type(exc).__name__)
    finally:
        closer = getattr(subject, "aclose", None)
        if closer is not None:
            await closer()
    return ProbeResult(target=target, ok=True, detail=detail)


async def _call(awaitable: Awaitable[str]) -> str:
    return await awaitable
