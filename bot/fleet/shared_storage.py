"""Whether a directory looks like shared storage: the workspace check of design §11.

Several replicas on one PostgreSQL store may run any thread's turn, so they must see the same
per-thread workspaces (``workspace_dir``). A path is taken as shared when the mount holding it
is a network or cluster filesystem (NFS, SMB/CIFS, Ceph, GlusterFS, Lustre, ... or any FUSE
one, which is how sshfs, JuiceFS, s3fs and the like mount), read from ``/proc/mounts``.
Anything else, or a system without ``/proc/mounts``, looks local and gets a warning at start,
never an error: the operator may know better (a SAN, a single replica).
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bot.config.settings import Settings
from bot.config.store import StoreBackend

logger = logging.getLogger(__name__)

MOUNTS: Final = Path("/proc/mounts")
SHARED_FILESYSTEMS: Final = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ceph",
        "glusterfs",
        "lustre",
        "gpfs",
        "beegfs",
        "ocfs2",
        "gfs2",
        "afs",
        "9p",
        "virtiofs",
    }
)
"""Filesystem types several machines mount at once (besides every ``fuse.*`` one)."""
_ESCAPE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True, slots=True, kw_only=True)
class Mount:
    point: Path
    fstype: str

    @property
    def shared(self) -> bool:
        return self.fstype in SHARED_FILESYSTEMS or self.fstype.startswith("fuse.")


def parse_mounts(text: str) -> list[Mount]:
    """The mounts of ``/proc/mounts`` text (``device point fstype options ...`` per line;
    spaces in a path are written ``\\040``)."""
    found: list[Mount] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:  # device, mount point, type, ...
            point = _ESCAPE.sub(lambda m: chr(int(m[1], 8)), fields[1])
            found.append(Mount(point=Path(point), fstype=fields[2]))
    return found


def mount_of(path: Path, mounts: list[Mount]) -> Mount | None:
    """The mount holding ``path`` (absolute, resolved): the one with the longest mount point
    above it; the last such line wins, as a later mount hides an earlier one."""
    best: Mount | None = None
    for mount in mounts:
        above = mount.point == path or mount.point in path.parents
        if above and (best is None or len(mount.point.parts) >= len(best.point.parts)):
            best = mount
    return best


def _existing(path: Path) -> Path:
    """``path`` resolved, or its nearest existing parent (the workspace may not exist yet)."""
    path = path.absolute()
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate.resolve()
    return path


def mount_for(path: Path, mounts_file: Path = MOUNTS) -> Mount | None:
    """The mount ``path`` is on; ``None`` when ``mounts_file`` cannot be read. Blocking I/O."""
    try:
        text = mounts_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return mount_of(_existing(path), parse_mounts(text))


async def warn_unless_shared(settings: Settings, mounts_file: Path = MOUNTS) -> bool:
    """With a PostgreSQL store, warn when ``workspace_dir`` looks local; whether it warned."""
    if settings.store.backend is not StoreBackend.POSTGRES:
        return False
    root = settings.workspace_root
    mount = await asyncio.to_thread(mount_for, root, mounts_file)
    if mount is not None and mount.shared:
        logger.info("workspace_dir %s is on shared storage (%s)", root, mount.fstype)
        return False
    seen = "unknown filesystem" if mount is None else f"{mount.fstype} at {mount.point}"
    logger.warning(
        "workspace_dir %s looks local (%s): with a PostgreSQL store, several replicas need it on"
        " shared storage (NFS, CephFS, ...) so each can read and write every thread's files;"
        " fine for a single replica",
        root,
        seen,
    )
    return True
