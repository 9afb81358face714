"""What a running journal entry's ``reason`` says about its turn (design §11).

A message the router gave to a turn is ``running``, and its reason names the turn that answers
it (the turn's correlation id), whether that turn's own agent run (model call or tool) was
under way, and how many times an agent run of this message was interrupted by a crash before:

- ``waiting turn <id>``: the turn is set up (thread, uploads, the agent's load) or requeued
  after a restart; nothing of its agent run has happened yet;
- ``turn <id>``: its agent run began (the reason a finished entry keeps);
- either with `` interrupted=N``: N earlier interruptions counted against the message.

Crash recovery counts an interruption only when it finds ``turn <id>``: a message given up
(``MAX_INTERRUPTED_RUNS``) is one whose own run kept stopping the daemon, never one that was
merely queued, merged or waiting for the agent when others crashed it. ``resumed turn <id>``,
written by earlier releases for the one re-run they allowed, reads as a run interrupted once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

MAX_INTERRUPTED_RUNS: Final = 4
"""A message whose agent run was interrupted by this many crashes is given up (apology). Four:
a storm of three restarts (a deploy that restarts twice, then a crash) never costs a message
whose run happened to be under way at each; one that kills the daemon itself costs four."""

TURN_PREFIX: Final = "turn "
WAITING_PREFIX: Final = "waiting turn "
LEGACY_RESUMED_PREFIX: Final = "resumed turn "

_MARK = re.compile(r"(?P<phase>waiting |resumed )?turn (?P<turn>\S+)(?: interrupted=(?P<n>\d+))?")


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnMark:
    """A running entry's reason, read."""

    turn: str
    """The correlation id of the turn that answers the entry."""
    agent_started: bool
    """Its agent run began: a crash now counts against the message."""
    interrupted: int = 0
    """Crashes counted against the message before this turn."""

    def encode(self) -> str:
        prefix = TURN_PREFIX if self.agent_started else WAITING_PREFIX
        suffix = f" interrupted={self.interrupted}" if self.interrupted else ""
        return f"{prefix}{self.turn}{suffix}"

    def after_crash(self) -> TurnMark:
        """The mark recovery leaves on a requeued entry: waiting, with this crash counted if
        the agent run was under way."""
        counted = self.interrupted + (1 if self.agent_started else 0)
        return TurnMark(turn=self.turn, agent_started=False, interrupted=counted)

    @classmethod
    def parse(cls, reason: str | None) -> TurnMark | None:
        """The mark in a reason; ``None`` for any other reason (a command, a failure …)."""
        found = _MARK.fullmatch(reason or "")
        if found is None:
            return None
        phase, count = found["phase"], found["n"]
        if phase == "resumed ":
            return cls(turn=found["turn"], agent_started=True, interrupted=int(count or 1))
        return cls(turn=found["turn"], agent_started=phase is None, interrupted=int(count or 0))
