"""The console channel: stdin/stdout, for ``switchboard chat`` and tests (design §14).

Each input line is one DM from the configured local user. It goes through the same
pipeline as every platform message (journal, dedupe, access, lanes, outbox). At end of
input the channel reports itself finished so ``switchboard chat`` can exit once everything
accepted has been answered.
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

from typing_extensions import override

from bot.config.settings import Settings
from bot.lifecycle import cancel_and_wait
from bot.messages import (
    Attachment,
    ChatType,
    Destination,
    InboundMessage,
    OutboundFile,
    OutboundText,
    Sender,
    SentRef,
    TextEdit,
)
from channels.base import (
    BaseChannel,
    ChannelCapabilities,
    ChannelContext,
    DownloadError,
    Publish,
)

logger = logging.getLogger(__name__)

CHAT_ID = "console"
BOT_PREFIX = "bot> "


class ConsoleChannel(BaseChannel):
    name = "console"
    capabilities = ChannelCapabilities(
        text_limit=100_000, edits=False, buttons=False, threads=False
    )

    def __init__(
        self,
        settings: Settings,
        context: ChannelContext | None = None,  # noqa: ARG002
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
    ) -> None:
        """The console needs nothing from the context (no webhooks, no files to keep)."""
        super().__init__()
        block = settings.channels.console
        self._sender = Sender(id=block.user_id, display_name=block.display_name)
        self._stdin = stdin if stdin is not None else sys.stdin
        self._stdout = stdout if stdout is not None else sys.stdout
        self._session = f"{int(time.time() * 1000):x}"
        self._in_ids = itertools.count(1)
        self._out_ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None

    async def start(self, publish: Publish) -> None:
        self._publish = publish
        self._intake_open = True
        self._reader = asyncio.create_task(self._read_lines(), name="channel:console:stdin")

    @override
    async def stop_intake(self) -> None:
        await super().stop_intake()
        await self._stop_reader()

    async def aclose(self) -> None:
        await self._stop_reader()

    async def _stop_reader(self) -> None:
        if self._reader is not None:
            await cancel_and_wait(self._reader)
            self._reader = None

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
        admission = await self._publish(message)
        if not admission.ack:
            self._write(f"(not accepted: {admission})")

    def _write(self, text: str) -> None:
        self._stdout.write(f"{BOT_PREFIX}{text}\n")
        self._stdout.flush()

    def _next_id(self) -> str:
        return f"{self._session}-out-{next(self._out_ids)}"

    async def send_text(self, message: OutboundText) -> SentRef:
        self._write(message.text)
        return SentRef(message_ids=(self._next_id(),))

    @override
    async def edit_text(self, edit: TextEdit) -> None:
        self._write(edit.text)

    async def send_file(self, file: OutboundFile) -> SentRef:
        kind = "image" if file.is_image else "file"
        self._write(f"[{kind}] {file.name} ({file.size} bytes): {file.path}")
        return SentRef(message_ids=(self._next_id(),))

    async def download(self, attachment: Attachment, *, max_bytes: int) -> bytes:  # noqa: ARG002
        raise DownloadError(f"the console has no attachment {attachment.name!r}")

    @override
    async def show_typing(self, destination: Destination) -> None:
        """The console shows nothing while the agent works."""


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
