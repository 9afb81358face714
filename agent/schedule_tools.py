"""The agent's schedule tools (design §19 "Schedules"): "remind me tomorrow at 9", "every
Monday at 9:00 post the summary".

The kernel binds a ``TurnScheduler`` to each turn's own conversation and the embedded backend
hands it to the tools in the run's ``configurable`` (``SCHEDULER_KEY``), so a tool can only
reach the conversation it was called from: it takes no chat argument at all. Without one (a
graph served by ``langgraph dev``, a store without schedules) the tools say schedules are off.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool

from bot.ports.schedules import TurnScheduler

SCHEDULE_TOOL = "schedule_message"
LIST_SCHEDULES_TOOL = "list_schedules"
CANCEL_SCHEDULE_TOOL = "cancel_schedule"
SCHEDULER_KEY = "switchboard_scheduler"
_OFF = "Error: schedules are not available in this conversation."


def _scheduler(config: RunnableConfig) -> TurnScheduler | None:
    found = (config.get("configurable") or {}).get(SCHEDULER_KEY)
    return found if isinstance(found, TurnScheduler) else None


def build_schedule_tools() -> list[BaseTool]:
    async def schedule_message(  # noqa: PLR0913 - the tool's arguments, as the model gives them
        *,
        text: str,
        config: RunnableConfig,
        at: str | None = None,
        cron: str | None = None,
        timezone: str | None = None,
        kind: str = "message",
    ) -> str:
        scheduler = _scheduler(config)
        if scheduler is None:
            return _OFF
        return await scheduler.create(at=at, cron=cron, timezone=timezone, action=kind, text=text)

    async def list_schedules(config: RunnableConfig) -> str:
        scheduler = _scheduler(config)
        return _OFF if scheduler is None else await scheduler.listed()

    async def cancel_schedule(schedule_id: int, config: RunnableConfig) -> str:
        scheduler = _scheduler(config)
        return _OFF if scheduler is None else await scheduler.cancel(schedule_id)

    return [
        StructuredTool.from_function(
            coroutine=schedule_message, name=SCHEDULE_TOOL, description=_SCHEDULE
        ),
        StructuredTool.from_function(
            coroutine=list_schedules, name=LIST_SCHEDULES_TOOL, description=_LIST
        ),
        StructuredTool.from_function(
            coroutine=cancel_schedule, name=CANCEL_SCHEDULE_TOOL, description=_CANCEL
        ),
    ]


_SCHEDULE = (
    "Schedule a message or an agent task in this conversation. Give `at` (an ISO-8601 local "
    "time such as 2026-03-30T09:00, for a one-off reminder) or `cron` (five fields: minute "
    "hour day month weekday, e.g. '0 9 * * 1' for Mondays at 9:00, for a recurring one), and "
    "`timezone` (an IANA name such as Europe/Berlin; default: the bot's). `kind` is "
    "'message' (post `text` as it is) or 'agent' (run `text` as a prompt then and post the "
    "answer). Returns the schedule's id or what was wrong."
)
_LIST = "List the active schedules of this chat, with their ids and next times."
_CANCEL = "Cancel one of this chat's schedules by its id (see list_schedules)."
