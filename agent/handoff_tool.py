"""The agent's ``handoff`` tool (design §22): "I can't help with this, let me get
a person".

As with the schedule tools, the kernel binds a ``TurnHandoff`` to each turn's own conversation
and the embedded backend hands it to the tool in the run's ``configurable`` (``HANDOFF_KEY``):
the tool takes no chat argument, so it can hand over only the conversation it was called from.
Calling it ends the turn: the conversation is muted, the on-call people are told, and the note
"A human will take it from here: <reason>" is posted instead of an answer.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool

from bot.ports.mutes import TurnHandoff

HANDOFF_TOOL = "handoff"
HANDOFF_KEY = "switchboard_handoff"
_OFF = "Error: a handoff to a human is not available in this conversation."


def build_handoff_tools() -> list[BaseTool]:
    async def handoff(reason: str, config: RunnableConfig) -> str:
        found = (config.get("configurable") or {}).get(HANDOFF_KEY)
        if not isinstance(found, TurnHandoff):
            return _OFF
        return await found.handoff(reason)

    return [StructuredTool.from_function(coroutine=handoff, name=HANDOFF_TOOL, description=_DOC)]


_DOC = (
    "Hand this conversation over to a human colleague when you cannot or should not help "
    "(the user asks for a person, it needs a decision or access you lack, it is sensitive). "
    "Give a short `reason` the user and the on-call people will read. This ends your turn: "
    "you go quiet in this conversation until someone unmutes you, so do not call it lightly."
)
