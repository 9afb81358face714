"""Housekeeping removes the files kept for a push once its delivery is finished (design §19):
sent or purged at once, dead only after the retention; never an unfinished one, never
through a link, and two replicas removing the same folder do not trip over each other."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.config.settings import GroupScope, Settings
from bot.messages import ChatType, ConversationKey, utc_now
from bot.ops.housekeeping import Housekeeping
from bot.pipeline.sessions import ChatAddress, pushed_key
from bot.ports import ChannelCapabilities
from bot.ports.push import PushFile, PushRequest, PushTarget
from bot.push.pusher import PushDeps, Pusher
from bot.push.spool import RECORD_GRACE, prune_push_spool
from bot.records import OutboxState
from store.sqlite import SqliteStore
from tests.bot.harness import make_settings
from tests.fakes.channel import DEFAULT_CAPS

ALICE = PushTarget(channel="fake", chat_id="dm-alice", chat_type=ChatType.DM)
RETENTION = timedelta(days=7)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    settings = make_settings(tmp_path)
    opened = SqliteStore(settings.store.sqlite_path(settings.state_dir))
    await opened.open()
    try:
        yield opened
    finally:
        await opened.aclose()


def _pusher(settings: Settings, store: SqliteStore) -> Pusher:
    """Records only, as ``switchboard send`` does: nothing is sent unless the test says so."""

    def caps_of(name: str) -> ChannelCapabilities | None:
        return DEFAULT_CAPS if name == "fake" else None

    def key_for(address: ChatAddress) -> ConversationKey:
        return pushed_key(address, GroupScope.TOPIC)

    deps = PushDeps(settings=lambda: settings, store=store, caps_of=caps_of, key_for=key_for)
    return Pusher(deps)


async def _push_file(settings: Settings, store: SqliteStore, key: str) -> tuple[str, int, Path]:
    """A recorded file push: its delivery id, its outbox row and its spool folder."""
    body = PushFile(name="report.txt", content=b"all green\n")
    request = PushRequest(target=ALICE, body=body, idempotency_key=key)
    delivery_id = (await _pusher(settings, store).push(request)).delivery_id
    [row] = await store.outbox.for_correlation(delivery_id)
    folder = settings.workspace_root.resolve() / "pushes" / delivery_id
    assert (folder / "report.txt").read_bytes() == b"all green\n"
    return delivery_id, row.id, folder


async def test_a_sent_delivery_loses_its_files_and_an_unfinished_one_keeps_them(
    tmp_path: Path, store: SqliteStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.push.spool")
    settings = make_settings(tmp_path)
    _, sent_row, sent = await _push_file(settings, store, "sent")
    _, _, pending = await _push_file(settings, store, "pending")
    await store.outbox.mark_sent(sent_row, ("m1",))

    # this sweep uses the settings and the store only (no hub, outbox or questions)
    housekeeping = Housekeeping(lambda: settings, store, None, None, None)  # type: ignore[arg-type]
    assert await housekeeping.prune_push_files() == 1

    assert not sent.exists()
    assert (pending / "report.txt").exists()
    lines = [r.getMessage() for r in caplog.records if r.name == "bot.push.spool"]
    assert lines == ["removed 1 pushed file folder(s) of finished deliveries"]


async def test_a_dead_delivery_keeps_its_files_for_the_retention(
    tmp_path: Path, store: SqliteStore
) -> None:
    settings = make_settings(tmp_path)
    _, row, folder = await _push_file(settings, store, "dead")
    await store.outbox.mark_dead(row, "chat not found")
    root = settings.workspace_root

    now = utc_now()
    assert await prune_push_spool(store, root, retention=RETENTION, now=now) == 0
    assert folder.exists()  # an operator may still retry it
    later = now + RETENTION + timedelta(hours=1)
    assert await prune_push_spool(store, root, retention=RETENTION, now=later) == 1
    assert not folder.exists()


async def test_purged_rows_free_their_files_but_a_push_being_recorded_keeps_them(
    tmp_path: Path, store: SqliteStore
) -> None:
    settings = make_settings(tmp_path)
    _, row, purged = await _push_file(settings, store, "purged")
    await store.outbox.mark_sent(row, ("m1",))
    await store.outbox.purge(OutboxState.SENT)
    pushed_at = (utc_now() - RECORD_GRACE - timedelta(minutes=1)).timestamp()
    os.utime(purged, (pushed_at, pushed_at))  # pushed a while ago, purged now
    recording = settings.workspace_root.resolve() / "pushes" / "dlv_still_being_recorded"
    recording.mkdir()
    root = settings.workspace_root

    now = utc_now()
    assert await prune_push_spool(store, root, retention=RETENTION, now=now) == 1
    assert not purged.exists()
    assert recording.exists()  # no row yet: the push may be recorded in a moment
    later = now + RECORD_GRACE + timedelta(minutes=1)
    assert await prune_push_spool(store, root, retention=RETENTION, now=later) == 1
    assert not recording.exists()


async def test_links_in_the_spool_are_never_followed(tmp_path: Path, store: SqliteStore) -> None:
    settings = make_settings(tmp_path)
    await _push_file(settings, store, "first")  # creates the spool
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    spool = settings.workspace_root.resolve() / "pushes"
    (spool / "dlv_link").symlink_to(outside, target_is_directory=True)

    later = utc_now() + RECORD_GRACE + RETENTION
    await prune_push_spool(store, settings.workspace_root, retention=RETENTION, now=later)

    assert (spool / "dlv_link").is_symlink()
    assert (outside / "precious.txt").read_text() == "keep me"


async def test_two_replicas_removing_the_same_folder_both_succeed(
    tmp_path: Path, store: SqliteStore
) -> None:
    settings = make_settings(tmp_path)
    _, row, folder = await _push_file(settings, store, "raced")
    for index in range(50):  # enough entries that both removals overlap
        (folder / f"part-{index}").write_bytes(b"x")
    await store.outbox.mark_sent(row, ("m1",))
    root, now = settings.workspace_root, utc_now()

    removed = await asyncio.gather(
        prune_push_spool(store, root, retention=RETENTION, now=now),
        prune_push_spool(store, root, retention=RETENTION, now=now),
    )

    assert sum(removed) == 1
    assert not folder.exists()
