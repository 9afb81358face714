"""``switchboard chat`` shows the agent's text and a file name the model chose with their
terminal escapes visible, not acted on; Markdown still renders."""

from __future__ import annotations

import io
from pathlib import Path

from typing_extensions import override

from bot.messages import ChatType, Destination, OutboundFile, OutboundKind, OutboundText
from channels.console import CHAT_ID, ConsoleChannel
from tests.bot.harness import make_settings

ATTACK = ("\x1b]0;pwned\x07", "\x1b[2J", "\x1b[1A", "\r", "\u202e", "\x9b")
DESTINATION = Destination(channel="console", chat_id=CHAT_ID, chat_type=ChatType.DM)


class TerminalOutput(io.StringIO):
    @override
    def isatty(self) -> bool:
        return True


def _console(tmp_path: Path, out: io.StringIO) -> ConsoleChannel:
    return ConsoleChannel(make_settings(tmp_path), stdin=io.StringIO(""), stdout=out)


async def test_the_agents_text_cannot_drive_the_terminal(tmp_path: Path) -> None:
    out = TerminalOutput()
    text = "Use **bold**." + "".join(ATTACK) + "\nsecond line"
    await _console(tmp_path, out).send_text(
        OutboundText(destination=DESTINATION, text=text, kind=OutboundKind.FINAL)
    )
    shown = out.getvalue()
    assert all(attack not in shown for attack in ATTACK), repr(shown)
    assert "\\x1b]0;pwned\\x07" in shown
    assert "**" not in shown  # still rendered


async def test_a_file_name_is_shown_escaped(tmp_path: Path) -> None:
    out = io.StringIO()
    name = "x" + "".join(ATTACK) + "\nbot> forged.pdf"
    await _console(tmp_path, out).send_file(
        OutboundFile(destination=DESTINATION, path="outputs/x", name=name, size=3, is_image=False)
    )
    shown = out.getvalue()
    assert shown.count("\n") == 1, repr(shown)
    assert all(attack not in shown for attack in ATTACK), repr(shown)
