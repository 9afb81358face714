"""Muted conversations in ``switchboard status`` (design §22)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.operator.labels import JsonObject, iso, key_json, when
from bot.ports.mutes import Mute

LISTED = 20


def mute_json(mute: Mute) -> JsonObject:
    return {
        "key": key_json(mute.key),
        "until": iso(mute.until),
        "reason": mute.reason,
        "muted_by": mute.muted_by,
        "muted_at": iso(mute.muted_at),
    }


def mute_lines(mutes: Sequence[Mute]) -> list[tuple[str, str]]:
    """``mutes  2 in force`` and one line per mute (the first ``LISTED``)."""
    lines = [("mutes", f"{len(mutes)} in force")]
    for mute in mutes[:LISTED]:
        until = "until /unmute" if mute.until is None else f"until {when(mute.until)} UTC"
        lines.append(("", f"- {mute.key.describe()} {until} by {mute.muted_by} ({mute.reason})"))
    if len(mutes) > LISTED:
        lines.append(("", f"- … and {len(mutes) - LISTED} more (status --json lists all)"))
    return lines
