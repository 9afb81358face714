"""Command detection exactly as design §9.

A message is a command only if, after leading mentions of the bot are stripped, it starts
with ``/`` and a registered name, optionally suffixed ``@botname``. ``/tmp/x.csv``,
``/unregistered`` and ``/help@otherbot`` are ordinary chat.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

_COMMAND = re.compile(r"^/(?P<name>[A-Za-z0-9_]+)(?:@(?P<bot>[A-Za-z0-9_.\-]+))?(?=\s|$)")
_LEADING_MENTION = re.compile(r"^@(?P<name>[A-Za-z0-9_.\-]+)[,:]?\s+")


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedCommand:
    name: str
    args: tuple[str, ...]
    raw_args: str


def strip_bot_mentions(text: str, bot_names: Collection[str]) -> str:
    """Remove leading ``@bot`` mentions that the adapter left in the text."""
    names = {name.lower() for name in bot_names}
    stripped = text.lstrip()
    while (match := _LEADING_MENTION.match(stripped)) and match["name"].lower() in names:
        stripped = stripped[match.end() :].lstrip()
    return stripped


def parse_command(
    text: str, registered: Collection[str], bot_names: Collection[str]
) -> ParsedCommand | None:
    stripped = strip_bot_mentions(text, bot_names)
    match = _COMMAND.match(stripped)
    if match is None:
        return None
    name = match["name"].lower()
    if name not in registered:
        return None
    addressed_to = match["bot"]
    if addressed_to is not None and addressed_to.lower() not in {b.lower() for b in bot_names}:
        return None
    raw_args = stripped[match.end() :].strip()
    return ParsedCommand(name=name, args=tuple(raw_args.split()), raw_args=raw_args)
