"""Private state whoever starts the daemon: folders 0700, files 0600 (design §13).

The units set ``UMask=0077``; ``switchboard run``/``chat`` by hand set the same process umask
(``restrict_umask``), so whatever the daemon and its libraries create (SQLite's -wal/-shm,
the agent's checkpoints, files the agent writes) is private too. The state directory is also
made explicitly, and an existing one open to others is tightened at start.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Final

logger = logging.getLogger(__name__)

PRIVATE_UMASK: Final = 0o077
PRIVATE_DIR_MODE: Final = 0o700
PRIVATE_FILE_MODE: Final = 0o600


def restrict_umask() -> None:
    """Everything this process creates from now on is readable by its owner only."""
    os.umask(PRIVATE_UMASK)


def make_private_dirs(path: Path) -> None:
    """``mkdir -p -m 0700``: ``path`` and every missing parent are created 0700 (whatever the
    umask); existing ones are left as they are."""
    missing: list[Path] = []
    for directory in (path, *path.parents):
        if directory.is_dir():
            break
        missing.append(directory)
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue
        directory.chmod(PRIVATE_DIR_MODE)  # mkdir's mode is narrowed by the umask, never widened


def make_state_dir(state_dir: Path) -> None:
    """Create ``state_dir`` private, or tighten it to 0700 when group or others may enter it
    (a state dir made before this release, or by hand); logs that once, when it happens."""
    make_private_dirs(state_dir)
    mode = stat.S_IMODE(state_dir.stat().st_mode)
    if not mode & 0o077:
        return
    try:
        state_dir.chmod(mode & ~0o077 | PRIVATE_DIR_MODE)
    except OSError as exc:
        logger.warning(
            "state_dir %s is %04o, open to other users, and cannot be made 0700: %s",
            state_dir,
            mode,
            exc.strerror,
        )
        return
    logger.warning(
        "state_dir %s was %04o, open to other users; made it %04o (private)",
        state_dir,
        mode,
        mode & ~0o077 | PRIVATE_DIR_MODE,
    )


def create_private_file(path: Path, text: str) -> bool:
    """Create ``path`` (and missing parents) 0600 from the start, never briefly readable, and
    write ``text``; ``False`` if it exists (kept as it is: it may hold secrets already)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, PRIVATE_FILE_MODE)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    path.chmod(PRIVATE_FILE_MODE)
    return True
