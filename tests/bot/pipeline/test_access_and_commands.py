"""Access control (design §10) and commands (design §9) through the real pipeline."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path

from bot.app import Daemon, DaemonOptions, Overrides
from bot.messages import Reaction, ReactionMark, utc_now
from bot.records import InboundStatus, UserStatus
from store.sqlite import DB_FILENAME, SqliteStore
from tests.bot.harness import make_settings, routed, running, started
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, dm, group

PAIRING = {"dm_policy": "pairing", "admins": ["fake:root"]}


async def test_pairing_code_then_approve_lets_the_user_in(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path, access=PAIRING), [channel], agent) as daemon:
        await channel.inject(dm("hello?", message_id="1", user="eve"))
        notice = await channel.wait_text("access code")
        code_match = re.search(r"`([A-Z2-9]{8})`", notice.text)
        assert code_match is not None
        code = code_match.group(1)
        # Asking again gives the same code rather than a new request.
        await channel.inject(dm("hello again", message_id="2", user="eve"))
        await routed(daemon.kernel, 2)
        assert agent.runs == []
        await channel.inject(dm("/pairing", message_id="3", user="root"))
        await channel.wait_text(f"`{code}` Eve")
        await channel.inject(dm(f"/approve {code}", message_id="4", user="root"))
        await channel.wait_text("Approved Eve")
        await channel.inject(dm("now?", message_id="5", user="eve"))
        await channel.wait_text("echo: now?")
        audit = await daemon.kernel.store.audit.recent()
        (first,) = await daemon.kernel.store.inbound.find("fake", "1")
    assert [run.turn.text for run in agent.runs] == ["now?"]
    assert sum(code in text for text in channel.texts()) >= 2
    assert {entry.action for entry in audit} >= {"/approve", "/pairing"}
    assert "pairing approve" not in {entry.action for entry in audit}  # one row per command
    assert first.status is InboundStatus.DROPPED
    assert first.reason == "not_allowed"


async def test_an_approval_from_another_process_lets_the_user_in(tmp_path: Path) -> None:
    """``switchboard pairing approve`` writes from another process while the daemon runs; the
    daemon's cached access statuses notice at their next check (every time, here)."""
    channel, agent = FakeChannel(), FakeAgent()
    store = SqliteStore(tmp_path / DB_FILENAME, other_writers_check_s=0)
    overrides = Overrides(channels=[channel], agent=agent, store=store)
    daemon = Daemon(make_settings(tmp_path, access=PAIRING), DaemonOptions(overrides=overrides))
    async with started(daemon):
        await channel.inject(dm("hello?", message_id="1", user="eve"))
        notice = await channel.wait_text("access code")
        code = re.search(r"`([A-Z2-9]{8})`", notice.text)
        assert code is not None
        async with SqliteStore(tmp_path / DB_FILENAME) as cli:
            assert await cli.access.take_pairing(code.group(1), utc_now()) is not None
            await cli.access.set_status("fake", "eve", UserStatus.APPROVED, "cli:operator")
        await channel.inject(dm("now?", message_id="2", user="eve"))
        await channel.wait_text("echo: now?")
    assert [run.turn.text for run in agent.runs] == ["now?"]


async def test_allowlist_drops_unknown_users_silently(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path,
        access={"dm_policy": "allowlist"},
        channels={"console": {"allowed_users": []}},
    )
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("hi", message_id="1", user="stranger"))
        await channel.inject(dm("hi", message_id="2", user="root"))
        await channel.wait_text("echo: hi")
        await routed(daemon.kernel, 2)
    assert len(agent.runs) == 1
    assert all("stranger" not in text for text in channel.texts())


async def test_admin_commands_are_refused_for_non_admins(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("/admin status", message_id="1", user="mallory"))
        await channel.wait_text("`/admin` is for admins only.")
        await channel.inject(dm("/allow bob", message_id="2", user="mallory"))
        await channel.wait_text("`/allow` is for admins only.")
        audit = await daemon.kernel.store.audit.recent()
        await channel.inject(dm("/admin status", message_id="3", user="root"))
        await channel.wait_text("Outbox:")
    assert audit == []
    assert agent.runs == []


async def test_deny_blocks_and_allow_restores(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(dm("/deny bob", message_id="1", user="root"))
        await channel.wait_text("is now blocked")
        await channel.inject(dm("hello", message_id="2", user="bob"))
        await routed(daemon.kernel, 2)
        await channel.inject(dm("/allow fake:bob", message_id="3", user="root"))
        await channel.wait_text("may now talk to the bot")
        await channel.inject(dm("hello again", message_id="4", user="bob"))
        await channel.wait_text("echo: hello again")
    assert [run.turn.text for run in agent.runs] == ["hello again"]


async def test_pause_is_persisted_and_admins_can_resume(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("/pause", message_id="1", user="root"))
        await channel.wait_text("Paused all channels")
        await channel.inject(dm("hello", message_id="2"))
        await routed(daemon.kernel, 2)
    channel = FakeChannel()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(dm("still paused?", message_id="3"))
        await routed(daemon.kernel, 1)
        (entry,) = await daemon.kernel.store.inbound.find("fake", "3")
        assert entry.reason == "paused"
        await channel.inject(dm("/resume", message_id="4", user="root"))
        await channel.wait_text("Resumed all channels")
        await channel.inject(dm("back", message_id="5"))
        await channel.wait_text("echo: back")
    assert [run.turn.text for run in agent.runs] == ["back"]


async def test_help_new_status_whoami(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm("/help", message_id="1"))
        help_text = (await channel.wait_text("**Commands**")).text
        await channel.inject(dm("first", message_id="2"))
        await channel.wait_text("echo: first")
        await channel.inject(dm("/status", message_id="3"))
        await channel.wait_text("Thread: `t1`")
        await channel.inject(dm("/new", message_id="4"))
        await channel.wait_text("Started a new conversation (thread `t2`)")
        await channel.inject(dm("second", message_id="5"))
        await channel.wait_text("echo: second")
        await channel.inject(dm("/whoami", message_id="6"))
        whoami = (await channel.wait_text("User id:")).text
    assert "/admin" not in help_text
    assert "/new" in help_text
    assert [run.thread_id for run in agent.runs] == ["t1", "t2"]
    assert "`alice`" in whoami
    assert "Role: user" in whoami


async def test_commands_with_bot_mention_and_suffix(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    settings = make_settings(tmp_path, access={"group_policy": "mention"})
    async with running(settings, [channel], agent):
        await channel.inject(group("@fakebot /whoami", message_id="1", mentions_bot=True))
        await channel.wait_text("User id:")
        await channel.inject(group("/whoami@fakebot", message_id="2"))
        await channel.wait_for(lambda s: s.text.count("User id:") == 1 and s.message_id == "b2")
        await channel.inject(group("/whoami@otherbot", message_id="3", mentions_bot=True))
        await channel.wait_text("echo: /whoami@otherbot")


async def test_group_policy_off_ignores_groups(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, access={"group_policy": "off"})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(group("hello bot", message_id="1", mentions_bot=True))
        await routed(daemon.kernel, 1)
        (entry,) = await daemon.kernel.store.inbound.find("fake", "1")
    assert entry.reason == "not_addressed"
    assert agent.runs == []


async def test_messages_from_other_bots_are_dropped(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    robot = dm("beep", message_id="1", user="robot")
    robot = replace(robot, sender=replace(robot.sender, is_bot=True))
    async with running(make_settings(tmp_path), [channel], agent) as daemon:
        await channel.inject(robot)
        await routed(daemon.kernel, 1)
        (entry,) = await daemon.kernel.store.inbound.find("fake", "1")
    assert entry.reason == "from_bot"
    assert agent.runs == []


async def test_new_waiting_on_a_slow_agent_server_does_not_stall_other_chats(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path, access={"dm_policy": "open"})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent):
        await channel.inject(dm("hello", message_id="1", user="alice"))
        await channel.inject(dm("hi", message_id="2", user="bob"))
        await channel.wait_text("echo: hi")
        await channel.wait_text("echo: hello")
        agent.thread_gate = gate = asyncio.Event()
        await channel.inject(dm("/new", message_id="3", user="alice"))
        await channel.inject(dm("after new", message_id="4", user="alice"))
        await channel.inject(dm("still there?", message_id="5", user="bob"))
        await channel.wait_text("echo: still there?")  # bob is answered while alice's /new waits
        assert not [s for s in channel.sent if "Started a new conversation" in s.text]
        gate.set()
        started = await channel.wait_text("Started a new conversation")
        after = await channel.wait_text("echo: after new")
    assert channel.sent.index(started) < channel.sent.index(after)  # alice's order holds
    assert [run.thread_id for run in agent.runs if run.turn.text == "after new"] == ["t3"]
    # It waited only for /new, not behind a reply: no "queued" acknowledgement.
    assert not [
        s
        for s in channel.sent
        if isinstance(s.delivery, ReactionMark)
        and s.delivery.message_id == "4"
        and s.delivery.reaction is Reaction.QUEUED
    ]
