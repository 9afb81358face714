"""Line breaks survive on a terminal: a command reply such as ``/help``
is one line per command, not one paragraph; Markdown is still rendered."""

from __future__ import annotations

import io
from pathlib import Path

from typing_extensions import override

from bot.messages import ChatType, Destination, OutboundKind, OutboundText
from channels.console import CHAT_ID, ConsoleChannel
from tests.bot.harness import make_settings

HELP = "Commands:\n/help — this list\n/status — what runs\n**/admin** status — for admins"


class TerminalOutput(io.StringIO):
    @override
    def isatty(self) -> bool:
        return True


def _reply(text: str, kind: OutboundKind) -> OutboundText:
    destination = Destination(channel="console", chat_id=CHAT_ID, chat_type=ChatType.DM)
    return OutboundText(destination=destination, text=text, kind=kind)


async def _shown(tmp_path: Path, text: str, kind: OutboundKind) -> list[str]:
    out = TerminalOutput()
    console = ConsoleChannel(make_settings(tmp_path), stdin=io.StringIO(""), stdout=out)
    await console.send_text(_reply(text, kind))
    return [line.rstrip() for line in out.getvalue().splitlines() if line.strip()]


async def test_a_command_reply_keeps_its_lines_on_a_terminal(tmp_path: Path) -> None:
    shown = await _shown(tmp_path, HELP, OutboundKind.COMMAND)
    assert [line.removeprefix("bot> ") for line in shown][:3] == [
        "Commands:",
        "/help — this list",
        "/status — what runs",
    ]
    assert "**" not in shown[3]  # still Markdown


async def test_an_answer_keeps_its_single_line_breaks_too(tmp_path: Path) -> None:
    shown = await _shown(tmp_path, "first line\nsecond line", OutboundKind.FINAL)
    assert [line.removeprefix("bot> ") for line in shown] == ["first line", "second line"]
