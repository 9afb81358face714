"""Pushes recorded into the store only (the CLI's way, and a daemon killed after accepting):
the running daemon, or the next one to start, delivers them once (design §19)."""

from __future__ import annotations

from pathlib import Path

from bot.config.settings import GroupScope, Settings
from bot.messages import ChatType, ConversationKey
from bot.pipeline.sessions import ChatAddress, pushed_key
from bot.ports import ChannelCapabilities, Store
from bot.ports.push import (
    DeliveryState,
    PushRequest,
    PushTarget,
    PushText,
    RunAgent,
)
from bot.push.pusher import PushDeps, Pusher
from bot.push.status import delivery_report
from store.sqlite import SqliteStore
from tests.bot.harness import make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import DEFAULT_CAPS, FakeChannel, dm

ALICE = PushTarget(channel="fake", chat_id="dm-alice", chat_type=ChatType.DM)


def _recorder(settings: Settings, store: Store) -> Pusher:
    """A pusher that only records, as ``switchboard send`` does."""

    def caps_of(name: str) -> ChannelCapabilities | None:
        return DEFAULT_CAPS if name == "fake" else None

    def key_for(address: ChatAddress) -> ConversationKey:
        return pushed_key(address, GroupScope.TOPIC)

    return Pusher(
        PushDeps(settings=lambda: settings, store=store, caps_of=caps_of, key_for=key_for)
    )


async def _record(settings: Settings, *requests: PushRequest) -> list[str]:
    store = SqliteStore(settings.store.sqlite_path(settings.state_dir))
    await store.open()
    try:
        pusher = _recorder(settings, store)
        return [(await pusher.push(request)).delivery_id for request in requests]
    finally:
        await store.aclose()


async def test_pushes_recorded_while_the_daemon_is_down_go_out_once_at_its_start(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    text = PushRequest(target=ALICE, body=PushText(text="nightly report"), idempotency_key="n1")
    prompt = PushRequest(target=ALICE, body=RunAgent(prompt="status please"))
    ids = await _record(settings, text, prompt)
    assert (await _record(settings, text))[0] == ids[0]  # a retry of the request adds nothing
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as run:
        await channel.wait_text("nightly report")
        await channel.wait_text("echo: status please")
        await run.kernel.conversations.lanes.wait_idle()
        await run.kernel.delivery.outbox.wait_idle()
        reports = [await delivery_report(run.kernel.store, i) for i in ids]
    assert channel.texts().count("nightly report") == 1
    assert len(agent.runs) == 1
    assert [r.status for r in reports if r is not None] == [DeliveryState.SENT] * 2


async def test_a_prompt_recorded_beside_the_running_daemon_is_picked_up(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as run:
        await channel.inject(dm("hello", message_id="m1"))
        await channel.wait_text("echo: hello")
        cli = SqliteStore(settings.store.sqlite_path(settings.state_dir))
        await cli.open_existing()
        try:
            pusher = _recorder(settings, cli)
            receipt = await pusher.push(PushRequest(target=ALICE, body=RunAgent(prompt="ping")))
        finally:
            await cli.aclose()
        await channel.wait_text("echo: ping")
        runs = await agent.wait_runs(2)
        await run.kernel.conversations.lanes.wait_idle()
    assert receipt.status is DeliveryState.QUEUED
    assert runs[1].thread_id == runs[0].thread_id
    assert len(agent.runs) == 2
