"""Per-thread workspaces: ``<workspace_dir>/threads/<thread_id>/{uploads,outputs}`` (design §6).

``workspace_dir`` defaults to ``state_dir`` (``Settings.workspace_root``); several replicas on
one PostgreSQL store need it on shared storage (design §11). The router saves inbound
attachments into ``uploads/``; the agent's file tools and ``present_files`` are confined to the
workspace. Both sides use this one definition.
"""

from __future__ import annotations

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
        self.uploads.mkdir(parents=True, exist_ok=True)
        self.outputs.mkdir(parents=True, exist_ok=True)

    def resolve(self, path: str, *, base: Path | None = None) -> Path:
        """Resolve ``path`` (relative to ``base``, default ``outputs/``) inside the workspace.

        Symlinks are resolved first, so a link pointing outside is refused like ``..``.
        """
        start = base if base is not None else self.outputs
        candidate = Path(path)
        target = (candidate if candidate.is_absolute() else start / candidate).resolve()
        root = self.root.resolve()
        if target != root and root not in target.parents:
            raise PathEscape(f"{path!r} is outside this conversation's workspace")
        return target

    def in_outputs(self, path: Path) -> bool:
        resolved = path.resolve()
        return self.outputs.resolve() in resolved.parents


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
