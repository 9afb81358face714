"""``conversations.listen``: the bounds of ``group_policy: listen`` (design §20).

In listen mode the bot keeps the group messages not addressed to it, in memory only, and
hands them to the agent with the next message that is. These bounds decide how much it keeps:
whichever is reached first drops the oldest messages.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ListenSettings(BaseModel):
    """How much unaddressed group chatter is kept per chat as context for the agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_messages: int = Field(default=20, ge=1, le=500)
    """The newest messages kept per chat; an older one is dropped when a new one comes."""
    max_age_minutes: float = Field(default=60, gt=0, le=7 * 24 * 60)
    """Messages older than this are dropped, given or not."""
    max_message_chars: int = Field(default=1000, ge=20, le=20_000)
    """A longer message is kept cut to this many characters (with an ellipsis)."""
