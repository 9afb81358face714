"""Creating, listing and cancelling schedules (design §19 "Schedules"): the one place the agent's
tool, the chat commands and ``switchboard schedule`` go through, so each checks its input the
same way, respects the limits and audits what it did (``schedule add`` / ``schedule cancel``).

``ConversationScheduler`` is the agent's view: bound by the kernel to the running turn's own
conversation, so the tool cannot name another chat.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from typing_extensions import override

from bot.config.settings import Settings
from bot.messages import utc_now
from bot.pipeline.lanes import TurnRequest
from bot.ports import Store
from bot.ports.schedules import (
    NewSchedule,
    Schedule,
    ScheduleAction,
    ScheduleRefused,
    ScheduleTarget,
    TurnScheduler,
    schedules_of,
)
from bot.schedules.times import first_fire

TEXT_LIMIT = 4000


class ScheduleBook:
    def __init__(
        self,
        settings: Callable[[], Settings],
        store: Store,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._settings = settings
        self._store = store
        self._clock = clock
        # Asked of every turn: the protocol check (``isinstance`` of a runtime-checkable
        # protocol, tens of µs) once, as whether a store keeps schedules never changes.
        self._keeps_schedules = schedules_of(store) is not None

    @property
    def available(self) -> bool:
        """The store keeps schedules and ``schedules.enabled`` is on."""
        return self._keeps_schedules and self._settings().schedules.enabled

    async def create(  # noqa: PLR0913 - what a schedule is made of
        self,
        target: ScheduleTarget,
        *,
        at: str | None,
        cron: str | None,
        timezone: str | None,
        action: ScheduleAction,
        text: str,
        actor: str,
        misfire_grace_s: int | None = None,
    ) -> Schedule:
        """A new active schedule; ``ScheduleRefused`` names what is wrong with the request."""
        table = schedules_of(self._store)
        config = self._settings().schedules
        if table is None or not config.enabled:
            raise ScheduleRefused("schedules are off here (schedules.enabled)")
        text = text.strip()
        if not text:
            raise ScheduleRefused("the text (what to post or ask the agent) is empty")
        if len(text) > TEXT_LIMIT:
            raise ScheduleRefused(f"the text has {len(text)} characters; at most {TEXT_LIMIT}")
        if misfire_grace_s is not None and misfire_grace_s < 0:
            raise ScheduleRefused("the misfire grace must be 0 seconds or more")
        zone = (timezone or "").strip() or config.default_timezone
        when, expression, first = first_fire(at=at, cron=cron, timezone=zone, now=self._clock())
        new = NewSchedule(
            target=target,
            action=action,
            text=text,
            at=when,
            cron=expression,
            timezone=zone,
            misfire_grace_s=config.misfire_grace_s if misfire_grace_s is None else misfire_grace_s,
            next_fire_at=first,
            created_by=actor,
        )
        added = await table.add(new, max_per_chat=config.max_per_chat, max_total=config.max_total)
        await self._store.audit.record(
            actor, "schedule add", f"schedule-{added.id} {target.describe()} {added.when}"
        )
        return added

    async def listed(
        self, *, channel: str | None = None, chat_id: str | None = None, active_only: bool = True
    ) -> list[Schedule]:
        table = schedules_of(self._store)
        if table is None:
            return []
        return await table.listed(channel=channel, chat_id=chat_id, active_only=active_only)

    async def cancel(
        self, schedule_id: int, actor: str, *, only_chat: tuple[str, str] | None = None
    ) -> Schedule:
        """Cancel an active schedule (of the chat ``(channel, chat_id)`` when named)."""
        table = schedules_of(self._store)
        if table is None:
            raise ScheduleRefused("schedules are off here (schedules.enabled)")
        found = await table.get(schedule_id)
        theirs = found is not None and (
            only_chat is None or (found.target.channel, found.target.chat_id) == only_chat
        )
        if found is None or not theirs:
            raise ScheduleRefused(f"no schedule {schedule_id} in this chat")
        cancelled = await table.cancel(schedule_id)
        if cancelled is None:
            raise ScheduleRefused(f"schedule {schedule_id} is {found.state} already")
        await self._store.audit.record(
            actor, "schedule cancel", f"schedule-{schedule_id} {found.target.describe()}"
        )
        return cancelled


def describe(schedule: Schedule, *, with_chat: bool = False) -> str:
    """One line per schedule, for chat commands and the agent."""
    upcoming = schedule.next_fire_at
    when = "—" if upcoming is None else f"{upcoming:%Y-%m-%d %H:%M:%S} UTC"
    line = f"#{schedule.id} {schedule.action} {schedule.when}, next {when}"
    if schedule.last_outcome is not None:
        line += f", last {schedule.last_outcome}"
    if with_chat:
        line += f" in {schedule.target.describe()}"
    preview = schedule.text if len(schedule.text) <= 60 else schedule.text[:59] + "…"
    return f"{line}: {preview}"


class ConversationScheduler(TurnScheduler):
    """The agent's tools' schedules, confined to one conversation."""

    def __init__(self, book: ScheduleBook, target: ScheduleTarget, actor: str) -> None:
        self._book = book
        self._target = target
        self._actor = actor

    @override
    async def create(
        self, *, at: str | None, cron: str | None, timezone: str | None, action: str, text: str
    ) -> str:
        try:
            kind = ScheduleAction(action)
        except ValueError:
            return f"Error: kind must be 'message' or 'agent', not {action!r}."
        try:
            made = await self._book.create(
                self._target,
                at=at or None,
                cron=cron or None,
                timezone=timezone,
                action=kind,
                text=text,
                actor=self._actor,
            )
        except ScheduleRefused as exc:
            return f"Error: {exc}."
        return f"Scheduled {describe(made)}. It will be posted in this conversation."

    @override
    async def listed(self) -> str:
        target = self._target
        mine = await self._book.listed(channel=target.channel, chat_id=target.chat_id)
        if not mine:
            return "No active schedules in this chat."
        return "\n".join(describe(s) for s in mine)

    @override
    async def cancel(self, schedule_id: int) -> str:
        try:
            await self._book.cancel(
                schedule_id,
                self._actor,
                only_chat=(self._target.channel, self._target.chat_id),
            )
        except ScheduleRefused as exc:
            return f"Error: {exc}."
        return f"Cancelled schedule {schedule_id}."


def turn_schedulers(book: ScheduleBook) -> Callable[[TurnRequest], TurnScheduler | None]:
    """``TurnTools.scheduler_for``: each turn's scheduler, bound to its own conversation and
    auditing as ``agent:<channel>:<user id>`` (who asked)."""

    def scheduler_for(request: TurnRequest) -> TurnScheduler | None:
        if not book.available:
            return None
        key, destination = request.key, request.destination
        target = ScheduleTarget(
            channel=key.channel,
            account_id=key.account_id,
            chat_id=key.chat_id,
            chat_type=destination.chat_type,
            topic_id=key.topic_id,
            user_id=key.user_id,
        )
        asker = request.items[-1].message.user_ref if request.items else key.channel
        return ConversationScheduler(book, target, f"agent:{asker}")

    return scheduler_for
