"""Pushed files kept under ``<workspace_dir>/pushes/<delivery id>/``: written when a push is
recorded, removed once done.

A file push keeps its bytes there when it is recorded (``keep_pushed_file``), so every attempt
sends what was checked (``bot.push.pusher``). A folder may go once its delivery is finished: every
outbox row sent, or the rows purged; a dead one only after ``journal_retention_days``, since
an operator may still ``outbox retry`` it. A folder with no row at all may also be a push
being recorded right now (the bytes are kept first), so it goes only after ``RECORD_GRACE``.

Replicas may share the folder: a removal that races another one finds it gone, and that is
fine. Nothing here follows a link: each folder is checked with ``lstat`` to be a real
directory, and ``shutil.rmtree`` itself does not follow links inside it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePath

from bot.ports import Store
from bot.ports.push import DeliveryState
from bot.push.status import rows_state
from bot.text.escape import bound, escape_controls

logger = logging.getLogger(__name__)

SPOOL = "pushes"
RECORD_GRACE = timedelta(hours=1)
"""How long a folder without any outbox row is left alone (a push still being recorded)."""
RACE_TRIES = 3


@dataclass(frozen=True, slots=True)
class Folder:
    name: str
    modified: datetime


async def prune_push_spool(
    store: Store, workspace_root: Path, *, retention: timedelta, now: datetime
) -> int:
    """Remove the folders of finished deliveries; how many were removed."""
    spool = workspace_root / SPOOL
    folders = await asyncio.to_thread(_folders, spool)
    done = [f.name for f in folders if await _finished(store, f, retention=retention, now=now)]
    if not done:
        return 0
    removed = await asyncio.to_thread(_remove_all, spool, done)
    if removed:
        logger.info("removed %d pushed file folder(s) of finished deliveries", removed)
    return removed


async def _finished(store: Store, folder: Folder, *, retention: timedelta, now: datetime) -> bool:
    rows = await store.outbox.for_correlation(folder.name)
    if not rows:
        return now - folder.modified > RECORD_GRACE
    state, _error = rows_state(rows)
    if state is DeliveryState.SENT:
        return True
    if state is DeliveryState.DEAD:
        return now - max(row.updated_at for row in rows) > retention
    return False


def _folders(spool: Path) -> list[Folder]:
    """The real directories in the spool (links and stray files are not ours to remove)."""
    found: list[Folder] = []
    try:
        entries = list(os.scandir(spool))
    except FileNotFoundError:
        return found
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(info.st_mode):
            found.append(Folder(entry.name, datetime.fromtimestamp(info.st_mtime, UTC)))
    return found


def _remove_all(spool: Path, names: Sequence[str]) -> int:
    removed = 0
    for name in names:
        try:
            removed += _remove(spool / name)
        except OSError as exc:  # one folder that cannot go must not keep the others
            logger.warning(
                "cannot remove pushed files %s: %s",
                bound(escape_controls(name), 200),
                bound(escape_controls(f"{type(exc).__name__}: {exc}"), 300),
            )
    return removed


def _remove(path: Path) -> bool:
    """Remove one folder; ``False`` when it was gone already (another replica removed it)."""
    for _ in range(RACE_TRIES):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(info.st_mode):
            return False
        try:
            shutil.rmtree(path)
        except FileNotFoundError:
            continue  # another replica is removing it too: look again
        return True
    return False


def keep_pushed_file(workspace_root: Path, delivery_id: str, name: str, content: bytes) -> Path:
    """Keep the push's bytes under ``<workspace_dir>/pushes/<id>/`` (a path with no link in
    it, as ``read_outbound`` wants); a repeat of the request finds them kept already."""
    path = workspace_root.resolve() / "pushes" / delivery_id / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        temporary = path.with_name(f".{path.name}.part")
        temporary.write_bytes(content)
        temporary.replace(path)
    return path


def safe_name(name: str) -> str:
    """A file name without any directory part or control characters (content sent along is
    stored under it); ``file`` when nothing usable is left."""
    base = PurePath(name.replace("\\", "/")).name
    cleaned = "".join(char for char in base if char.isprintable())
    return "file" if cleaned in {"", ".", ".."} else cleaned
