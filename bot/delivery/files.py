"""Files the daemon sends or the agent's tools touch, opened without following links
(design §6, §19).

A path is opened one component at a time from a trusted directory (``openat`` with
``O_NOFOLLOW``), so a symlink anywhere below it, planted before a check or swapped in after
one, is refused and never followed. ``O_NONBLOCK`` keeps a FIFO from blocking the open, and
only a regular file (``S_ISREG`` on the opened descriptor) is read or written, at most a given
number of bytes: a swap to a device or a huge file is never read whole. A refusal is a
``FileRefused`` whose reason names no host path, so it can be shown to the model or a caller.

Outbox rows name files by paths that were fully resolved when recorded (no link in any
component); ``read_outbound`` re-checks such a path at every send attempt and sends only a
regular file of the size that was recorded.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from bot.errors import BotError, InvalidRequest
from bot.messages import OutboundFile

FORBIDDEN_ROOTS = (Path("/proc"), Path("/sys"))
"""Never sent, whatever the configured roots say (``/`` included)."""
NOT_PUBLISHED = "is not a readable regular file under a published root (http.push_api.file_roots)"
"""The one answer for a push path that is missing, forbidden or not a file: no oracle."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_REASONS = {
    errno.ENOENT: "does not exist",
    errno.ELOOP: "is a symbolic link (links are not followed)",
    errno.ENOTDIR: "goes through something that is not a directory",
    errno.ENAMETOOLONG: "has a name that is too long",
    errno.EISDIR: "is a directory",
    errno.ENXIO: "is not a regular file",
    errno.EACCES: "is not permitted",
    errno.EPERM: "is not permitted",
}


class FileRefused(BotError):
    """A file that cannot be used; ``reason`` is plain text naming no host path."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FileTooLarge(FileRefused):
    def __init__(self, limit: int) -> None:
        super().__init__(f"is larger than {limit} bytes")
        self.limit = limit


def refusal(exc: OSError | ValueError) -> FileRefused:
    """The plain reason for a failed file-system call (``strerror``, never the filename)."""
    if isinstance(exc, ValueError):
        return FileRefused("contains a NUL byte")
    if exc.errno in _REASONS:
        return FileRefused(_REASONS[exc.errno])
    return FileRefused(os.strerror(exc.errno or errno.EIO).lower())


def open_beneath(
    root: Path, parts: Sequence[str], *, write: bool = False, make_dirs: bool = False
) -> int:
    """A descriptor of the regular file ``root/parts…``, reached without following a link.

    ``write`` opens it for writing, created if missing (never truncated here: a caller
    truncates once it knows the file is regular); ``make_dirs`` creates missing folders.
    What it creates is private (0700 folders, 0600 files), as the workspace is. The caller
    closes the descriptor.
    """
    if not parts or any(part in {"", ".", ".."} or "/" in part for part in parts):
        raise FileRefused("is not a file path")
    try:
        directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:
        raise refusal(exc) from None
    try:
        for part in parts[:-1]:
            inner = _step(directory, part, make_dirs=make_dirs)
            os.close(directory)
            directory = inner
        flags = _FILE_FLAGS | (os.O_WRONLY | os.O_CREAT if write else os.O_RDONLY)
        fd = os.open(parts[-1], flags, 0o600, dir_fd=directory)
    except (OSError, ValueError) as exc:
        raise refusal(exc) from None
    finally:
        os.close(directory)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileRefused("is not a regular file")
    return fd


def _step(directory: int, part: str, *, make_dirs: bool) -> int:
    """The folder ``part`` inside ``directory``, created when asked."""
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=directory)
    except NotADirectoryError:
        if stat.S_ISLNK(os.stat(part, dir_fd=directory, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
        raise
    except FileNotFoundError:
        if not make_dirs:
            raise
    os.mkdir(part, 0o700, dir_fd=directory)
    return os.open(part, _DIR_FLAGS, dir_fd=directory)


def read_fd(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``fd``; ``FileTooLarge`` when there are more."""
    chunks: list[bytes] = []
    size = 0
    while chunk := os.read(fd, min(1024 * 1024, limit + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise FileTooLarge(limit)
    return b"".join(chunks)


def read_beneath(root: Path, parts: Sequence[str], limit: int) -> bytes:
    fd = open_beneath(root, parts)
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_head(root: Path, parts: Sequence[str], limit: int) -> tuple[bytes, int]:
    """The first ``limit`` bytes of the file and its whole size."""
    fd = open_beneath(root, parts)
    try:
        return os.read(fd, limit), os.fstat(fd).st_size
    finally:
        os.close(fd)


def size_beneath(root: Path, parts: Sequence[str]) -> int:
    """The size of a regular file reached without following a link (else ``FileRefused``)."""
    fd = open_beneath(root, parts)
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def write_beneath(root: Path, parts: Sequence[str], data: bytes) -> None:
    """Replace the content of the regular file ``root/parts…`` (folders made as needed)."""
    fd = open_beneath(root, parts, write=True, make_dirs=True)
    try:
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def read_no_links(path: Path, limit: int) -> bytes:
    """An absolute path with no link in any component, as outbox rows record them."""
    if not path.is_absolute():
        raise FileRefused("is not an absolute path")
    return read_beneath(Path("/"), path.parts[1:], limit)


def read_regular(path: Path, limit: int) -> bytes:
    """A file the caller may name freely (the operator's own, links followed), provided it is
    a regular file of at most ``limit`` bytes: ``switchboard send --file`` reads it so."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:
        raise refusal(exc) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileRefused("is not a regular file")
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_published(path: str, roots: Sequence[Path], limit: int) -> bytes:
    """A push's ``file.path``: resolved (links included), under one of ``roots`` and not under
    ``/proc`` or ``/sys``, then opened without following links. Anything else is the one
    ``NOT_PUBLISHED`` refusal; only a published file can be ``FileTooLarge``."""
    try:
        resolved = Path(os.path.realpath(path))
    except (OSError, ValueError):
        raise FileRefused(NOT_PUBLISHED) from None
    if not resolved.is_absolute() or _under_any(resolved, FORBIDDEN_ROOTS):
        raise FileRefused(NOT_PUBLISHED)
    for root in roots:
        real_root = Path(os.path.realpath(root))
        if resolved.is_relative_to(real_root) and resolved != real_root:
            try:
                return read_beneath(real_root, resolved.relative_to(real_root).parts, limit)
            except FileTooLarge:
                raise
            except FileRefused:
                break
    raise FileRefused(NOT_PUBLISHED)


def _under_any(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


async def read_outbound(file: OutboundFile) -> bytes:
    """The bytes of an outbox file row, re-checked at this attempt (what every channel
    uploads): no link anywhere in its recorded path, a regular file, exactly the size
    recorded. A refusal is ``InvalidRequest``, which is not retried."""
    try:
        data = await asyncio.to_thread(read_no_links, Path(file.path), file.size)
    except FileRefused as exc:
        raise InvalidRequest(f"cannot send {file.name}: it {exc.reason}") from None
    if len(data) != file.size:
        raise InvalidRequest(f"cannot send {file.name}: it changed after it was recorded")
    return data
