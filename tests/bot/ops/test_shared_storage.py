"""Whether ``workspace_dir`` looks shared, from the mount table (design §11)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.fleet.shared_storage import mount_for, mount_of, parse_mounts, warn_unless_shared
from tests.bot.harness import make_settings

MOUNTS = """\
overlay / overlay rw,relatime 0 0
proc /proc proc rw,nosuid 0 0
/dev/sda1 /srv ext4 rw,relatime 0 0
nas:/export /srv/shared nfs4 rw,vers=4.2 0 0
host:/data /srv/shared/inner\\040dir fuse.sshfs rw 0 0
tmpfs /srv/shared/tmp tmpfs rw 0 0
"""
POSTGRES = {"url": "postgresql://u@127.0.0.1:5432/db"}


def _type(path: str) -> str | None:
    mount = mount_of(Path(path), parse_mounts(MOUNTS))
    return None if mount is None else mount.fstype


def test_the_longest_mount_point_above_a_path_holds_it() -> None:
    assert _type("/srv/shared/threads/t1") == "nfs4"
    assert _type("/srv/shared") == "nfs4"
    assert _type("/srv/sharedness") == "ext4"  # a prefix of the name is not a parent
    assert _type("/srv/shared/inner dir/x") == "fuse.sshfs"  # \\040 is a space
    assert _type("/srv/shared/tmp/x") == "tmpfs"
    assert _type("/var/lib/switchboard") == "overlay"


@pytest.mark.parametrize(
    ("path", "shared"),
    [
        ("/srv/shared/w", True),
        ("/srv/shared/inner dir", True),
        ("/srv/shared/tmp/w", False),
        ("/srv/w", False),
        ("/w", False),
    ],
)
def test_network_cluster_and_fuse_filesystems_count_as_shared(path: str, shared: bool) -> None:  # noqa: FBT001
    mount = mount_of(Path(path), parse_mounts(MOUNTS))
    assert mount is not None
    assert mount.shared is shared


def test_a_missing_workspace_is_judged_by_its_nearest_existing_parent(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/x / ext4 rw 0 0\nnas:/e {tmp_path} nfs rw 0 0\n")
    mount = mount_for(tmp_path / "not" / "yet" / "made", mounts)
    assert mount is not None
    assert (mount.point, mount.fstype) == (tmp_path.resolve(), "nfs")
    assert mount_for(tmp_path, tmp_path / "no-such-file") is None


async def test_only_a_postgresql_store_with_a_local_workspace_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.fleet.shared_storage")
    local, shared = tmp_path / "local", tmp_path / "shared"
    shared.mkdir()  # a mount point exists
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/x / ext4 rw 0 0\nceph:/ {shared} ceph rw 0 0\n")
    sqlite = make_settings(tmp_path, workspace_dir=str(local))
    assert await warn_unless_shared(sqlite, mounts) is False
    on_ceph = make_settings(tmp_path, store=POSTGRES, workspace_dir=str(shared))
    assert await warn_unless_shared(on_ceph, mounts) is False
    on_disk = make_settings(tmp_path, store=POSTGRES, workspace_dir=str(local))
    assert await warn_unless_shared(on_disk, mounts) is True
    unknown = make_settings(tmp_path, store=POSTGRES)  # workspace_dir unset: state_dir
    assert await warn_unless_shared(unknown, tmp_path / "no-such-file") is True
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert f"workspace_dir {local} looks local (ext4 at /)" in warnings[0]
    assert f"workspace_dir {tmp_path} looks local (unknown filesystem)" in warnings[1]
    assert any("on shared storage (ceph)" in r.getMessage() for r in caplog.records)
