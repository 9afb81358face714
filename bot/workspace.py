"""Per-thread workspaces: ``<workspace_dir>/threads/<thread_id>/{uploads,outputs}`` (design §6).

``workspace_dir`` defaults to ``state_dir`` (``Settings.workspace_root``); several replicas on
one PostgreSQL store need it on shared storage (design §11). The router saves inbound
attachments into ``uploads/``; the agent's file tools and ``present_files`` are confined to the
workspace. Both sides use this one definition.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_SAFE_THREAD_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._ -]+")


class PathEscape(ValueError):
    """A path that would leave the thread's workspace."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadWorkspace:
    root: Path

    @classmethod
    def for_thread(cls, workspace_dir: Path, thread_id: str) -> ThreadWorkspace:
        """The thread's workspace under ``workspace_dir`` (``Settings.workspace_root``)."""
        if not _SAFE_THREAD_ID.match(thread_id) or thread_id in {".", ".."}:
            raise PathEscape(f"thread id {thread_id!r} is not usable as a directory name")
        return cls(root=_resolved(workspace_dir) / "threads" / thread_id)

    @property
    def uploads(self) -> Path:
        return self.root / "uploads"

    @property
    def outputs(self) -> Path:
        return self.root / "outputs"

    def create(self) -> None:
        """The folders, private (0700) whatever the umask: they hold the chat's files."""
        for folder in (self.root.parent, self.root, self.uploads, self.outputs):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)

    def resolve(self, path: str, *, base: Path | None = None) -> Path:
        """Resolve ``path`` (relative to ``base``, default ``outputs/``) inside the workspace.

        Symlinks are resolved first, so a link pointing outside is refused like ``..``; a NUL
        byte, a symlink loop or an over-long name is refused too, naming no host path.
        """
        start = base if base is not None else self.outputs
        candidate = Path(path)
        try:
            target = (candidate if candidate.is_absolute() else start / candidate).resolve()
            root = self.root.resolve()
        except (OSError, RuntimeError, ValueError):
            raise PathEscape(f"{shown(path)} cannot be used as a path here") from None
        if target != root and root not in target.parents:
            raise PathEscape(f"{shown(path)} is outside this conversation's workspace")
        return target

    def locate(self, path: str, *, base: Path | None = None) -> tuple[str, ...]:
        """``path`` (relative to ``base``, default ``outputs/``) as folder names below
        ``root``, worked out from the text alone: ``..`` may not climb out, and no link is
        looked at (the file is then opened with ``bot.delivery.files.open_beneath``, which refuses
        links). Absolute paths must name something inside the workspace."""
        if "\x00" in path:
            raise PathEscape(f"{shown(path)} contains a NUL byte")
        start = base if base is not None else self.outputs
        candidate = Path(path)
        joined = Path(os.path.normpath(candidate if candidate.is_absolute() else start / candidate))
        if not joined.is_relative_to(self.root):
            raise PathEscape(f"{shown(path)} is outside this conversation's workspace")
        return joined.relative_to(self.root).parts

    def in_outputs(self, path: Path) -> bool:
        resolved = path.resolve()
        return self.outputs.resolve() in resolved.parents


def shown(path: str, limit: int = 80) -> str:
    """A model-supplied path quoted for an error message, shortened when long."""
    return repr(path if len(path) <= limit else f"{path[:limit]}…")


@lru_cache(maxsize=8)
def _resolved(workspace_dir: Path) -> Path:
    """``workspace_dir`` made absolute once, not on every turn (one directory per daemon)."""
    return workspace_dir.resolve()


def safe_file_name(name: str, *, fallback: str = "file") -> str:
    """A file name without directories or odd characters, for saving uploads."""
    base = Path(name.replace("\\", "/")).name
    cleaned = _UNSAFE_NAME_CHARS.sub("_", base).strip(" .")
    return cleaned[:120] or fallback


def unique_path(directory: Path, name: str) -> Path:
    """``directory/name``, or ``name-2.ext``… when a file of that name exists already."""
    candidate = directory / name
    stem, suffix = Path(name).stem, Path(name).suffix
    counter = 2
    while candidate.exists():
        candidate = directory / f"{stem}-{counter}{suffix}"
        counter += 1
    return candidate
