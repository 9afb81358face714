"""Which file-system calls under a directory the event loop's own thread makes.

Blocking file-system work belongs in a worker thread (``asyncio.to_thread``): on the loop it
stalls every conversation while the disk (or a network file system) answers. A test runs the
code under test inside ``loop_io(root)`` and asserts that ``calls`` stays empty.

Two observers, neither a stand-in for our own code:

- CPython's audit events (``open``, ``os.mkdir``, ``os.listdir``, ``os.scandir``, ``os.rename``…,
  docs.python.org/3.11/library/audit_events.html). Audit hooks cannot be removed, so one
  process-wide hook is installed once, and it records only while a watch is active.
- ``stat``/``lstat`` raise no audit event. ``Path.exists``/``is_file``/``stat`` call ``os.stat``
  and ``Path.resolve`` (``os.path.realpath``) calls ``os.lstat``, both looked up on the ``os``
  module at call time; while a watch is active those two are wrapped by a pass-through that
  notes the calling thread and path.

Only calls made on the thread that entered the watch (the test's, which is the event loop's)
and naming a path under ``root`` are recorded; worker threads may do as they like.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

FS_EVENTS = frozenset({
    "open", "os.mkdir", "os.listdir", "os.scandir", "os.rename", "os.remove", "os.rmdir",
    "os.truncate", "os.chmod", "os.utime", "os.link", "os.symlink", "glob.glob",
    "pathlib.Path.glob", "pathlib.Path.rglob", "shutil.copyfile", "shutil.move",
    "shutil.rmtree", "tempfile.mkstemp", "tempfile.mkdtemp",
})  # fmt: skip
"""Audit events whose first argument is the path acted on."""

REPO = Path(__file__).resolve().parents[2]
PROJECT_PREFIXES = tuple(f"{REPO / name}{os.sep}" for name in ("bot", "channels", "agent", "store"))


@dataclass(frozen=True, slots=True)
class LoopCall:
    """One file-system call made on the loop thread: what, on which path, from where."""

    operation: str
    path: str
    caller: str
    """The innermost frame of the project's own code that led to the call."""


@dataclass
class LoopIO:
    root: str
    thread: int
    calls: list[LoopCall] = field(default_factory=list)

    def note(self, operation: str, target: object) -> None:
        if threading.get_ident() != self.thread:
            return
        if isinstance(target, bytes | str | os.PathLike):
            path = os.path.abspath(os.fsdecode(target))  # noqa: PTH100 - resolve() would stat
            if path == self.root or path.startswith(self.root + os.sep):
                self.calls.append(LoopCall(operation, path, _project_caller()))


_watches: list[LoopIO] = []
_hook_installed = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _watches or event not in FS_EVENTS or not args:
        return
    for watch in _watches:
        watch.note(event, args[0])


def _project_caller() -> str:
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(PROJECT_PREFIXES):
            where = os.path.relpath(filename, REPO)
            return f"{where}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return "(outside the project)"


def _observed(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def call(path: Any, *args: Any, **kwargs: Any) -> Any:
        for watch in _watches:
            watch.note(name, path)
        return real(path, *args, **kwargs)

    return call


@contextmanager
def loop_io(root: Path) -> Iterator[LoopIO]:
    """Record file-system calls under ``root`` made on this thread until the block ends.

    Enter it from the event loop (an ``async def`` test), around the code under test.
    """
    global _hook_installed  # noqa: PLW0603 - one hook per process, audit hooks stay forever
    if not _hook_installed:
        sys.addaudithook(_audit)
        _hook_installed = True
    watch = LoopIO(root=str(root.absolute()), thread=threading.get_ident())
    real_stat, real_lstat = os.stat, os.lstat
    os.stat = _observed("os.stat", real_stat)
    os.lstat = _observed("os.lstat", real_lstat)
    _watches.append(watch)
    try:
        yield watch
    finally:
        _watches.remove(watch)
        os.stat, os.lstat = real_stat, real_lstat


def describe(calls: list[LoopCall]) -> str:
    return "\n".join(f"{c.operation} {c.path} ({c.caller})" for c in calls)
