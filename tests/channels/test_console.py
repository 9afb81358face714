"""The console channel's output: Markdown rendered for a terminal, as written for a pipe."""

from __future__ import annotations

import io
from pathlib import Path

from typing_extensions import override

from bot.messages import ChatType, Destination, OutboundKind, OutboundText
from channels.console import CHAT_ID, ConsoleChannel
from tests.bot.harness import make_settings

ANSWER = "Use **bold** and `code`."


class TerminalOutput(io.StringIO):
    """What a terminal looks like to the channel (and to ``rich``)."""

    @override
    def isatty(self) -> bool:
        return True


def _answer(text: str) -> OutboundText:
    destination = Destination(channel="console", chat_id=CHAT_ID, chat_type=ChatType.DM)
    return OutboundText(destination=destination, text=text, kind=OutboundKind.FINAL)


async def test_a_terminal_gets_the_markdown_rendered(tmp_path: Path) -> None:
    out = TerminalOutput()
    console = ConsoleChannel(make_settings(tmp_path), stdin=io.StringIO(""), stdout=out)
    await console.send_text(_answer(ANSWER))
    shown = out.getvalue()
    assert shown.startswith("bot> ")
    assert "bold" in shown
    assert "code" in shown
    assert "**" not in shown
    assert "`" not in shown


async def test_a_pipe_gets_the_text_as_written(tmp_path: Path) -> None:
    out = io.StringIO()
    console = ConsoleChannel(make_settings(tmp_path), stdin=io.StringIO(""), stdout=out)
    await console.send_text(_answer(ANSWER))
    assert out.getvalue() == f"bot> {ANSWER}\n"
