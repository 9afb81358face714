"""Human takeover through the real pipeline (design §22): /mute and /unmute, a
yield to a human replying in a thread while the turn there runs, the handoff port, and a mute
that outlives the daemon."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path

from typing_extensions import override

from bot.cli import main
from bot.messages import ConversationKey, OutboundText, TextEdit, utc_now
from bot.ports import AgentEvent, FinalAnswer, Store, Turn
from bot.ports.mutes import mutes_of
from tests.bot.harness import make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm, group

TAKEOVER = {
    "humans": ["fake:sam"],
    "on_call": [{"channel": "fake", "chat": "ops", "chat_type": "group"}],
}


async def _status(channel: FakeChannel, store: Store, message_id: str) -> tuple[str, str]:
    (entry,) = await store.inbound.find(channel.name, message_id)
    return str(entry.status), entry.reason or ""


def _status_cli(state_dir: Path, *flags: str) -> str:
    """``switchboard status`` on the store in ``state_dir`` (no daemon runs: exit 1)."""
    config = state_dir / "operator.yaml"
    config.write_text(f"config_version: 1\nstate_dir: {state_dir}\nhttp: {{port: 9}}\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["status", "-c", str(config), *flags]) == 1
    return out.getvalue()


async def test_mute_holds_answers_until_unmute_and_outlives_a_restart(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, access={"participants_can_mute": False})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("/mute 5x", message_id="1", user="root"))
        await channel.wait_text("Not muted: '5x' has the unknown unit 'x'")
        await channel.inject(dm("/mute", message_id="2"))
        await channel.wait_text("`/mute` is for admins here")
        await channel.inject(dm("/mute 2h", message_id="3", user="root", chat_id="dm-alice"))
        await channel.wait_text("🔇 Muted in this chat for 2h")
        await channel.inject(dm("are you there?", message_id="4"))
        await routed(daemon.kernel, 4)
        assert await _status(channel, daemon.kernel.store, "4") == ("handled", "muted")
    assert agent.runs == []
    listed = await asyncio.to_thread(_status_cli, tmp_path, "--json")
    (mute,) = json.loads(listed)["store"]["mutes"]
    assert (mute["key"]["chat_id"], mute["muted_by"], mute["reason"]) == (
        "dm-alice",
        "fake:root",
        "/mute",
    )
    assert "fake dm-alice until" in await asyncio.to_thread(_status_cli, tmp_path)
    channel = FakeChannel()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("still muted?", message_id="5"))
        await routed(daemon.kernel, 1)
        assert agent.runs == []
        await channel.inject(dm("/unmute", message_id="6", user="root", chat_id="dm-alice"))
        await channel.wait_text("🔊 Unmuted in this chat")
        await channel.inject(dm("now?", message_id="7"))
        await channel.wait_text("echo: now?")
        audit = [(e.action, e.actor) for e in await daemon.kernel.store.audit.recent()]
    assert [run.turn.text for run in agent.runs] == ["now?"]
    assert ("mute", "fake:root") in audit
    assert ("unmute", "fake:root") in audit
    assert not any(s.is_progress for s in channel.sent)  # no placeholder while muted


async def test_a_human_reply_in_the_thread_makes_the_running_turn_yield(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, access={**TAKEOVER, "yield_mute": "1h"})
    channel, agent = FakeChannel(), FakeAgent()
    release = agent.hold("slow")
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(group("@fakebot slow question", message_id="1", mentions_bot=True))
        await agent.wait_runs(1)
        placeholder = await channel.wait_for(lambda s: s.is_progress)
        await channel.inject(
            group("let me answer this", message_id="2", user="sam", thread_root_id="1")
        )
        left = await channel.wait_for(
            lambda s: isinstance(s.delivery, TextEdit) and "teammate" in s.text
        )
        await daemon.kernel.conversations.lanes.wait_idle()
        release.set()
        await channel.inject(group("thanks sam", message_id="3", thread_root_id="1"))
        await routed(daemon.kernel, 3)
        statuses = [await _status(channel, daemon.kernel.store, m) for m in ("1", "2", "3")]
        await channel.inject(group("/unmute", message_id="4", thread_root_id="1"))
        await channel.wait_text("🔊 Unmuted here")
        await channel.inject(group("one more thing", message_id="5", thread_root_id="1"))
        await channel.wait_text("echo: one more thing")
    assert isinstance(left.delivery, TextEdit)
    assert left.delivery.message_id == placeholder.message_id
    assert statuses == [
        ("handled", "yielded"),
        ("handled", "yielded to a human"),
        ("handled", "muted"),
    ]
    assert not any("echo: slow" in text for text in channel.texts())
    assert [run.turn.text for run in agent.runs][-1] == "one more thing"


async def test_the_asker_and_other_members_do_not_make_it_yield_by_default(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, access={"group_policy": "all"})
    channel, agent = FakeChannel(), FakeAgent()
    release = agent.hold("slow")
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(group("slow question", message_id="1"))
        await agent.wait_runs(1)
        await channel.inject(group("more detail", message_id="2", thread_root_id="1"))
        await channel.inject(group("me too", message_id="3", user="bob", thread_root_id="1"))
        await routed(daemon.kernel, 3)
        release.set()
        await channel.wait_text("echo: more detail")
    assert "echo: slow question" in channel.texts()


@dataclass
class HandoffAgent(FakeAgent):
    """Calls the turn's ``handoff`` on ``handoff: <reason>``, as the model's tool call would."""

    results: list[str] | None = None

    @override
    async def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]:
        if not turn.text.startswith("handoff:") or turn.handoff is None:
            async for event in super().run(thread_id, turn):
                yield event
            return
        self.results = [await turn.handoff.handoff(turn.text.removeprefix("handoff:"))]
        yield FinalAnswer(text="this must not be posted")


async def test_a_handoff_mutes_notes_and_tells_the_on_call_chat(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, access=TAKEOVER)
    channel, agent = FakeChannel(), HandoffAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("handoff: wants a refund", message_id="1"))
        await channel.wait_text("A human will take it from here: wants a refund")
        told = await channel.wait_text("Handoff requested in fake dm-alice")
        await daemon.kernel.conversations.lanes.wait_idle()
        await channel.inject(dm("hello?", message_id="2"))
        await routed(daemon.kernel, 2)
        statuses = [await _status(channel, daemon.kernel.store, m) for m in ("1", "2")]
        table = mutes_of(daemon.kernel.store)
        assert table is not None
        (mute,) = await table.active(utc_now())
    assert agent.results is None  # the turn ended inside the tool
    assert isinstance(told.delivery, OutboundText)
    assert told.delivery.destination.chat_id == "ops"
    assert "wants a refund" in told.text
    assert statuses == [("handled", "handed off"), ("handled", "muted")]
    assert mute.key == ConversationKey(channel="fake", chat_id="dm-alice")
    assert (mute.until, mute.muted_by) == (None, "agent:fake:alice")
    assert "this must not be posted" not in channel.texts()


async def test_mute_ends_a_running_reply_and_a_top_level_mute_covers_the_chat(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, access={"group_policy": "all"})
    channel, agent = FakeChannel(), FakeAgent()
    release = agent.hold("slow")
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("slow essay", message_id="1"))
        await agent.wait_runs(1)
        await channel.wait_for(lambda s: s.is_progress)
        await channel.inject(dm("/mute 1d", message_id="2"))
        await channel.wait_text("🔇 Muted in this chat for 1d")
        ended = await channel.wait_text("🔇 Muted.")
        release.set()
        await channel.inject(group("/mute", message_id="10"))
        await channel.wait_text("🔇 Muted in this chat until `/unmute`")
        await channel.inject(group("in a thread", message_id="11", thread_root_id="7"))
        await channel.inject(group("/unmute", message_id="12", thread_root_id="7"))
        still = await channel.wait_text("Still muted: the whole chat is muted until /unmute")
        await daemon.kernel.conversations.lanes.wait_idle()
        statuses = [await _status(channel, daemon.kernel.store, m) for m in ("1", "11")]
    assert isinstance(ended.delivery, TextEdit)  # the placeholder, not a new message
    assert "by fake:alice (/mute)" in still.text
    assert statuses == [("handled", "muted"), ("handled", "muted")]
    assert not any(text.startswith("echo:") for text in channel.texts())
