"""``agent.approvals``: which tools wait for a person, which decisions they allow, who may
decide and how long a request lives (design §24).

The embedded agent puts LangChain's ``HumanInTheLoopMiddleware`` in front of the tools named
in ``tools``; a remote graph brings its own middleware, and ``tools`` (else ``deciders``) still
says who may decide on its requests.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

DecisionName = Literal["approve", "edit", "reject"]
DECIDER_WORDS = ("asker", "admins", "anyone")
DEFAULT_MASK = ("password", "passwd", "secret", "token", "api_key", "apikey", "authorization")


def _deciders(value: object) -> object:
    """``asker`` / ``admins`` / ``anyone``, or a list of platform user ids."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word not in DECIDER_WORDS:
            words = ", ".join(DECIDER_WORDS)
            raise ValueError(f"deciders must be one of {words} or a list of user ids")
        return word
    if isinstance(value, list | tuple):
        ids = tuple(str(item).strip() for item in value if str(item).strip())
        if not ids:
            raise ValueError("a deciders list needs at least one user id")
        return ids
    return value


class ToolApproval(BaseModel):
    """One tool that waits for a decision before it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decisions: tuple[DecisionName, ...] = ("approve", "edit", "reject")
    deciders: str | tuple[str, ...] | None = None
    """Who may decide on this tool; unset: ``agent.approvals.deciders``."""

    @field_validator("decisions")
    @classmethod
    def _some_decisions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("decisions needs at least one of approve, edit, reject")
        return tuple(dict.fromkeys(value))

    @field_validator("deciders", mode="before")
    @classmethod
    def _check_deciders(cls, value: object) -> object:
        return _deciders(value)


class ApprovalSettings(BaseModel):
    """``agent.approvals``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: dict[str, ToolApproval] = {}
    """Tool name -> its approval; a tool not listed runs without one."""
    deciders: str | tuple[str, ...] = "asker"
    """Who may decide when the tool does not say: ``asker`` (the person whose message
    started the run, and admins), ``admins``, ``anyone`` in the conversation, or a list of
    platform user ids (admins always may)."""
    ttl_s: float = Field(default=3600, gt=0)
    """How long a request waits; then it is rejected, the chat is told and the agent reads
    that nobody decided in time."""
    mask: tuple[str, ...] = DEFAULT_MASK
    """Argument names shown as ``•••`` in chat (case-insensitive substring match)."""
    fold_chars: int = Field(default=300, ge=40, le=4000)
    """Longer argument values are shortened in chat (the full value is in ``approvals list``)."""

    @field_validator("deciders", mode="before")
    @classmethod
    def _check_deciders(cls, value: object) -> object:
        return _deciders(value)

    def for_tool(self, name: str) -> ToolApproval | None:
        return self.tools.get(name)

    def deciders_of(self, tool: str) -> str:
        """The stored form of who may decide on ``tool``: a word or ``users:<id>,<id>``."""
        configured = self.tools.get(tool)
        value = configured.deciders if configured and configured.deciders else self.deciders
        return value if isinstance(value, str) else "users:" + ",".join(value)
