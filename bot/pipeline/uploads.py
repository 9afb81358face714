"""Inbound attachments → the thread's ``uploads/`` (design §6).

Downloads are size-capped by the adapter; a failed download becomes a note for the agent
and the turn still runs.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from bot.errors import ChannelError
from bot.messages import InboundMessage
from bot.ports import Channel, SavedUpload
from bot.workspace import ThreadWorkspace, safe_file_name, unique_path

logger = logging.getLogger(__name__)


async def save_uploads(
    channel: Channel,
    messages: Sequence[InboundMessage],
    workspace: ThreadWorkspace,
    max_bytes: int,
) -> tuple[tuple[SavedUpload, ...], tuple[str, ...]]:
    saved: list[SavedUpload] = []
    notes: list[str] = []
    for message in messages:
        for attachment in message.attachments:
            name = safe_file_name(attachment.name, fallback=f"{attachment.kind}")
            if attachment.size is not None and attachment.size > max_bytes:
                notes.append(
                    f"The attachment {name!r} was not downloaded: it is larger than "
                    f"the {max_bytes} byte limit."
                )
                continue
            try:
                data = await channel.download(attachment, max_bytes=max_bytes)
            except ChannelError as exc:
                logger.warning("download failed channel=%s name=%s: %s", channel.name, name, exc)
                notes.append(f"The attachment {name!r} could not be downloaded ({exc}).")
                continue
            path = await asyncio.to_thread(_write_new, workspace, name, data)
            saved.append(
                SavedUpload(name=path.name, path=path, mime=attachment.mime, size=len(data))
            )
    return tuple(saved), tuple(notes)


def _write_new(workspace: ThreadWorkspace, name: str, data: bytes) -> Path:
    """Write ``data`` under a name not taken yet (file-system calls: run off the loop)."""
    path = unique_path(workspace.uploads, name)
    # 0600 whatever the umask; O_EXCL: never onto a file that appeared since (or a link).
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
    return path
