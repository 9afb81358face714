"""The shared file opener (``bot/delivery/files.py``): no links, regular files only, bounded
reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.delivery.files import (
    FileRefused,
    FileTooLarge,
    read_outbound,
    read_published,
    read_regular,
)
from bot.errors import InvalidRequest
from bot.messages import ChatType, Destination, OutboundFile

DEST = Destination(channel="fake", account_id="", chat_id="c", chat_type=ChatType.DM)


def _row(path: Path, size: int) -> OutboundFile:
    return OutboundFile(destination=DEST, path=str(path), name=path.name, size=size, is_image=False)


async def test_a_row_sends_only_the_regular_file_of_the_size_it_recorded(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    report.write_text("four")
    assert await read_outbound(_row(report, 4)) == b"four"
    report.write_text("grown much larger")
    with pytest.raises(InvalidRequest, match="larger than 4 bytes"):
        await read_outbound(_row(report, 4))
    report.unlink()
    os.mkfifo(report)
    with pytest.raises(InvalidRequest, match="not a regular file"):
        await read_outbound(_row(report, 4))


def test_the_operators_own_file_must_be_regular_and_bounded(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 100)
    (tmp_path / "alias").symlink_to(big)  # the operator's own link is followed
    with pytest.raises(FileRefused, match="not a regular file"):
        read_regular(pipe, 10)
    with pytest.raises(FileTooLarge):
        read_regular(big, 10)
    assert read_regular(tmp_path / "alias", 100) == b"x" * 100


def test_a_published_file_under_a_linked_root_is_found(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.txt").write_text("a")
    (tmp_path / "root").symlink_to(real)  # the operator may name the root through a link
    assert read_published(str(tmp_path / "root" / "a.txt"), [tmp_path / "root"], 10) == b"a"
    with pytest.raises(FileTooLarge):
        read_published(str(real / "a.txt"), [tmp_path / "root"], 0)
