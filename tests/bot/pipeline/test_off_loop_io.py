"""A turn's file-system work runs in worker threads, never on the event loop.

Each test drives a real turn through the daemon (fake channel, fake agent) and records, with
``tests.bot.loop_io``, every file-system call under the state directory that the loop's own
thread makes while the turn runs: there must be none. A warm-up turn before the watch makes
the thread's workspace, so each later test sees only the step it is about.
"""

from __future__ import annotations

from pathlib import Path

from bot.messages import Attachment, AttachmentKind, OutboundFile
from bot.ports import PresentedFile
from tests.bot.harness import make_settings, running
from tests.bot.loop_io import describe, loop_io
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, dm


async def test_a_threads_first_turn_makes_its_directories_off_the_loop(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    async with running(settings, [channel], agent):
        with loop_io(tmp_path) as watch:
            await channel.inject(dm("hello", message_id="1"))
            await channel.wait_text("echo: hello")
    workspace = settings.state_dir / "threads" / "t1"
    assert (workspace / "uploads").is_dir()
    assert (workspace / "outputs").is_dir()
    assert watch.calls == [], describe(watch.calls)


async def test_an_upload_is_named_and_saved_off_the_loop(tmp_path: Path) -> None:
    """The second ``data.csv`` of a thread needs the "name taken?" loop (``unique_path``)."""
    settings = make_settings(tmp_path)
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    channel.files = {"ref-1": b"a,b\n1,2\n", "ref-2": b"a,b\n3,4\n"}

    def csv(ref: str) -> tuple[Attachment, ...]:
        return (Attachment(kind=AttachmentKind.FILE, name="data.csv", mime="text/csv", ref=ref),)

    async with running(settings, [channel], agent):
        await channel.inject(dm("first", message_id="1", attachments=csv("ref-1")))
        await channel.wait_text("echo: first")
        with loop_io(tmp_path) as watch:
            await channel.inject(dm("second", message_id="2", attachments=csv("ref-2")))
            await channel.wait_text("echo: second")
    (upload,) = agent.runs[1].turn.uploads
    assert upload.name == "data-2.csv"
    assert upload.path.read_bytes() == b"a,b\n3,4\n"
    assert watch.calls == [], describe(watch.calls)


async def test_presented_files_are_checked_off_the_loop(tmp_path: Path) -> None:
    """``resolve``/``is_file``/``stat`` of the files the agent presents (``plan_files``)."""
    settings = make_settings(tmp_path)
    channel, agent = FakeChannel(caps=PLAIN_CAPS), FakeAgent()
    async with running(settings, [channel], agent):
        await channel.inject(dm("hello", message_id="1"))
        await channel.wait_text("echo: hello")
        report = settings.state_dir / "threads" / "t1" / "outputs" / "report.png"
        report.write_bytes(b"\x89PNG fake")
        agent.files_to_present = [PresentedFile(path=report, name="report.png")]
        with loop_io(tmp_path) as watch:
            await channel.inject(dm("make a file", message_id="2"))
            sent = await channel.wait_for(lambda s: isinstance(s.delivery, OutboundFile))
    assert isinstance(sent.delivery, OutboundFile)
    assert sent.delivery.size == len(b"\x89PNG fake")
    assert watch.calls == [], describe(watch.calls)
