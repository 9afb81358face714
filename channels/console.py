"""The console channel: stdin/stdout, for ``switchboard chat`` and tests (design §14).

Each input line is one DM from the configured local user. It goes through the same
pipeline as every platform message (journal, dedupe, access, lanes, outbox). At end of
input the channel reports itself finished so ``switchboard chat`` can exit once everything
accepted has been answered.

Typed at a terminal, lines go in as they are typed (a line sent while the agent works is
queued, as in any chat). Piped in (a script, ``-m``), the next line is read only once the
previous one was answered — its final, question, command reply or error printed — so a
script gets every answer in order, as if a person typed and waited. On a terminal the
agent's Markdown is rendered (``rich``, in a worker thread, up to ``RICH_LIMIT`` characters);
piped, it is printed as written. A line break is kept as one, as every chat app shows it
(CommonMark would join the lines of a paragraph: ``/help`` would be one long line).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import stat
import sys
import time
from collections.abc import AsyncIterator
from typing import TextIO

from rich.console import Console
from rich.markdown import Markdown
from typing_extensions import override

from bot.config.settings import Settings
from bot.lifecycle import cancel_and_wait
from bot.messages import (
    Attachment,
    ChatType,
    Destination,
    InboundMessage,
    OutboundFile,
    OutboundKind,
    OutboundText,
    Reaction,
    ReactionMark,
    Sender,
    SentRef,
    TextEdit,
)
from bot.text.escape import escape_controls, escape_lines
from channels.base import (
    ChannelCapabilities,
    ChannelContext,
    DownloadError,
    PlatformChannel,
    Publish,
)

logger = logging.getLogger(__name__)

CHAT_ID = "console"
BOT_PREFIX = "bot> "


RICH_LIMIT = 20_000
"""Answers longer than this are printed as written on a terminal too: ``rich``'s Markdown
layout is super-linear (a 24 000-character run of tables takes seconds)."""

ANSWER_WAIT_MARGIN_S = 60.0
"""A piped line waits for its answer at most the agent's run timeout plus this."""


class ChatMarkdown(Markdown):
    """Markdown laid out by ``rich``, each line break inside a paragraph kept."""

    def __init__(self, markup: str) -> None:
        super().__init__(markup)
        for token in self.parsed:
            for child in token.children or ():
                if child.type == "softbreak":
                    child.type = "hardbreak"


class Unwatched:
    """The health of a channel nobody watches (the console has no connection to lose)."""

    def connected(self) -> None:
        """Nothing to report."""

    def disconnected(self, reason: str) -> None:
        """Nothing to report."""

    def auth_failed(self, reason: str) -> None:
        """Nothing to report."""

    def activity(self) -> None:
        """Nothing to report."""

    def failed(self, reason: str) -> None:
        """Nothing to report."""


class Screen:
    """The console's outbound side: what is written to stdout, and which lines are answered."""

    def __init__(self, stdout: TextIO, session: str) -> None:
        self._stdout = stdout
        self._render = Console(file=stdout) if _is_terminal(stdout) else None
        self._session = session
        self._out_ids = itertools.count(1)
        self._awaiting: dict[str, asyncio.Event] = {}
        self._order = asyncio.Lock()  # answers are shown in the order they were sent
        self.failed_turns = 0
        """Turns that ended in an error message (``switchboard chat -m`` exits non-zero)."""

    def expect(self, message_id: str) -> asyncio.Event:
        """Set once ``message_id`` has been answered (its final, question or error)."""
        answered = self._awaiting[message_id] = asyncio.Event()
        return answered

    def forget(self, message_id: str) -> None:
        self._awaiting.pop(message_id, None)

    def write(self, text: str, *, markdown: bool = False) -> None:
        """Control characters (an agent's or a file name's terminal escapes) show escaped."""
        text = escape_lines(text)
        if markdown and self._render is not None:
            self._stdout.write(BOT_PREFIX)
            self._render.print(ChatMarkdown(text))
        else:
            self._stdout.write(f"{BOT_PREFIX}{text}\n")
        self._stdout.flush()

    async def show(self, text: str, *, markdown: bool) -> None:
        """``write``, in order; Markdown for a terminal is laid out in a worker thread
        (``rich`` takes a while on a long answer), and not at all over ``RICH_LIMIT``."""
        async with self._order:
            if markdown and self._render is not None and len(text) <= RICH_LIMIT:
                await asyncio.to_thread(self.write, text, markdown=True)
            else:
                self.write(text)

    def _next_id(self) -> str:
        return f"{self._session}-out-{next(self._out_ids)}"

    async def send_text(self, message: OutboundText) -> SentRef:
        await self.show(message.text, markdown=message.kind is not OutboundKind.PROGRESS)
        if message.reply_to is not None and message.kind is not OutboundKind.PROGRESS:
            answered = self._awaiting.get(message.reply_to)
            if answered is not None:
                answered.set()
        return SentRef(message_ids=(self._next_id(),))

    async def edit_text(self, edit: TextEdit) -> None:
        await self.show(edit.text, markdown=edit.kind is not OutboundKind.PROGRESS)

    async def react(self, mark: ReactionMark) -> None:
        if mark.reaction is Reaction.FAILED:
            self.failed_turns += 1

    async def send_file(self, file: OutboundFile) -> SentRef:
        kind = "image" if file.is_image else "file"
        self.write(escape_controls(f"[{kind}] {file.name} ({file.size} bytes): {file.path}"))
        return SentRef(message_ids=(self._next_id(),))

    async def show_typing(self, destination: Destination) -> None:
        """The console shows nothing while the agent works."""


class ConsoleChannel(PlatformChannel[Screen]):
    name = "console"
    capabilities = ChannelCapabilities(
        text_limit=100_000,
        edits=False,
        buttons=False,
        threads=False,
        reactions=frozenset({Reaction.FAILED}),  # only to learn which turns failed
    )
    not_running = "the console is not running"

    def __init__(
        self,
        settings: Settings,
        context: ChannelContext | None = None,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
    ) -> None:
        """The console needs nothing else from the context (no webhooks, no files to keep)."""
        super().__init__(context.health if context is not None else Unwatched())
        block = settings.channels.console
        self._sender = Sender(id=block.user_id, display_name=block.display_name)
        self._stdin = stdin if stdin is not None else sys.stdin
        self._session = f"{int(time.time() * 1000):x}"
        self._in_ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None
        self._scripted = not _is_terminal(self._stdin)
        self._answer_wait_s = settings.agent.run_timeout_s + ANSWER_WAIT_MARGIN_S
        self._out = Screen(stdout if stdout is not None else sys.stdout, self._session)

    @property
    def failed_turns(self) -> int:
        """Turns that ended in an error message (``switchboard chat -m`` exits non-zero)."""
        return self._outbound().failed_turns

    @override
    async def _connect(self, publish: Publish) -> None:
        self._open_intake()
        self._reader = asyncio.create_task(self._read_lines(), name="channel:console:stdin")

    @override
    async def _stop_receiving(self) -> None:
        if self._reader is not None:
            await cancel_and_wait(self._reader)
            self._reader = None

    @override
    async def _disconnect(self) -> None:
        await self._stop_receiving()

    async def _read_lines(self) -> None:
        try:
            async for line in _lines(self._stdin):
                if not self._intake_open:
                    break
                await self._publish_line(line)
        finally:
            self._finished.set()

    async def _publish_line(self, line: str) -> None:
        text = line.strip()
        if not text or self._publish is None:
            return
        message = InboundMessage(
            channel=self.name,
            chat_id=CHAT_ID,
            chat_type=ChatType.DM,
            message_id=f"{self._session}-{next(self._in_ids)}",
            sender=self._sender,
            text=text,
        )
        screen = self._outbound()
        answered = screen.expect(message.message_id)
        try:
            admission = await self._publish(message)
            if not admission.ack:
                screen.write(f"(not accepted: {admission})")
            elif self._scripted:
                await self._wait_for_answer(answered)
        finally:
            screen.forget(message.message_id)

    async def _wait_for_answer(self, answered: asyncio.Event) -> None:
        try:
            async with asyncio.timeout(self._answer_wait_s):
                await answered.wait()
        except TimeoutError:
            logger.warning("no answer after %.0fs; reading the next line", self._answer_wait_s)

    async def download(self, attachment: Attachment, *, max_bytes: int) -> bytes:  # noqa: ARG002
        raise DownloadError(f"the console has no attachment {attachment.name!r}")


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):
        return False


async def _lines(stream: TextIO) -> AsyncIterator[str]:
    """Lines from ``stream`` without blocking the loop.

    Pipes and terminals are read through the loop's reader; regular files (``< file``)
    cannot be polled, but reading them never blocks for long, so a worker thread does it.
    """
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        fd = -1
    if fd < 0 or stat.S_ISREG(os.fstat(fd).st_mode):
        while line := await asyncio.to_thread(stream.readline):
            yield line
        return
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(fd), "rb", buffering=0)
    )
    try:
        while raw := await reader.readline():
            yield raw.decode(errors="replace")
    finally:
        transport.close()
