"""Single-instance guard: an exclusive ``flock`` on ``state_dir/switchboard.lock`` (design §11).

The kernel releases the lock when the process exits, even after ``kill -9``, so a stale
lock file never blocks a restart. Its folder and file are created private (0700, 0600).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from bot.errors import InstanceLocked
from bot.ops.private_files import PRIVATE_FILE_MODE, make_private_dirs

LOCK_FILE_NAME = "switchboard.lock"


class InstanceLock:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / LOCK_FILE_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        make_private_dirs(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise InstanceLocked(
                f"another Switchboard{holder} is already running on state directory "
                f"{self.path.parent}; stop it first or use a different state_dir"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> InstanceLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return f" (pid {pid})" if pid.isdigit() else ""
