"""How edits and recalls of chat messages change the bot's work (design §21): the setting's
values, kept apart from ``settings.py``, which is near its size cap."""

from __future__ import annotations

from enum import StrEnum


class EditAfterAnswer(StrEnum):
    """What an edit of a message the bot already answered does."""

    IGNORE = "ignore"
    """The answer stands; the edit changes nothing."""
    ANSWER = "answer"
    """The edited text is answered again, in a reply to the edited message marked as such."""
