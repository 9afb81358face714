"""One-time login links (``switchboard console-url``), kept as files in ``state_dir``.

A file, not a store row: the command runs in the operator's shell, which may lack the
store's secrets (under systemd they live in the unit's ``EnvironmentFile``), and the link is
for the local operator of this host's daemon. Only a hash of the token names the file, so
reading the directory gives no way in. Using a link renames its file away first: a rename
succeeds once, so two requests racing for one link (or two daemons sharing the directory)
let in one of them. Expired files are swept whenever a link is made. Made as root, the link is
handed to the owner of ``state_dir`` (the service user), whose daemon must rename it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

LINKS_DIR: Final = "console-links"
TOKEN_BYTES: Final = 24


@dataclass(frozen=True, slots=True, kw_only=True)
class LoginLink:
    token: str
    name: str
    expires_at: float


def _directory(state_dir: Path) -> Path:
    return state_dir / LINKS_DIR


def _file(state_dir: Path, token: str) -> Path:
    digest = hashlib.sha256(token.encode()).hexdigest()
    return _directory(state_dir) / f"{digest}.json"


def make_link(state_dir: Path, name: str, ttl_s: float, *, now: float | None = None) -> LoginLink:
    """Record a new one-time token (blocking file I/O: for the CLI, or a worker thread)."""
    at = time.time() if now is None else now
    directory = _directory(state_dir)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    _sweep(directory, at)
    link = LoginLink(token=secrets.token_urlsafe(TOKEN_BYTES), name=name, expires_at=at + ttl_s)
    path = _file(state_dir, link.token)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"name": link.name, "expires_at": link.expires_at}, handle)
    _hand_to_owner(state_dir, (directory, path))
    return link


def _hand_to_owner(state_dir: Path, paths: tuple[Path, ...]) -> None:
    """Run as root (``sudo switchboard console-url``), give the link to the owner of
    ``state_dir``, the service user: the daemon must be able to rename it."""
    if os.geteuid() != 0:
        return
    owner = state_dir.stat()
    if owner.st_uid == 0:
        return
    for path in paths:
        os.chown(path, owner.st_uid, owner.st_gid)


def take_link(state_dir: Path, token: str, *, now: float | None = None) -> str | None:
    """The name a token was made for, once; ``None`` for an unknown, used or expired one
    (blocking file I/O: run it in a worker thread)."""
    if not token or len(token) > 200:
        return None
    path = _file(state_dir, token)
    taken = path.with_suffix(f".taken-{secrets.token_hex(4)}")
    try:
        path.rename(taken)
    except OSError:
        return None
    try:
        facts = json.loads(taken.read_text())
    except (OSError, ValueError):
        return None
    finally:
        taken.unlink(missing_ok=True)
    at = time.time() if now is None else now
    if not isinstance(facts, dict) or float(facts.get("expires_at", 0)) <= at:
        return None
    return str(facts.get("name") or "operator")


def _sweep(directory: Path, now: float) -> None:
    for path in directory.glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            if float(json.loads(path.read_text()).get("expires_at", 0)) <= now:
                path.unlink(missing_ok=True)
