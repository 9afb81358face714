"""Delivery to the fake Telegram: long answers, Markdown, files, 429, blocked bots and
redelivered updates (design §5, §8)."""

from __future__ import annotations

import json
from pathlib import Path

from bot.ports import FinalAnswer, PresentedFile, TextDelta
from bot.records import OutboxState
from bot.workspace import ThreadWorkspace
from tests.channels.telegram_support import (
    telegram_daemon,
    telegram_settings,
    text_calls,
    texts,
    wait_text,
)
from tests.fakes.agent import FakeAgent
from tests.fakes.scripted_agent import ScriptedAgent
from tests.fakes.telegram.media import TINY_PNG
from tests.fakes.telegram_api import FakeTelegram

SECTIONS = 32


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _long_answer() -> str:
    """~10 000 characters: prose with emoji (two UTF-16 units each) and code fences."""
    parts = []
    for i in range(SECTIONS):
        parts.append(f"Section {i} 🚀 — café naïve 👍🏽 " + "lorem ipsum dolor sit amet " * 6)
        parts.append(f"```python\ndef f{i}(x):\n" + "    x = x * 2  # 😀 keep\n" * 4 + "```")
    return "\n\n".join(parts)


async def test_a_long_answer_arrives_in_valid_chunks(tmp_path: Path) -> None:
    agent = FakeAgent(reply_override=_long_answer())
    assert 9_000 < len(agent.reply_override or "") < 11_000
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.push_message("write a lot")
            await wait_text(fake, 42, f"Section {SECTIONS - 1}")
            await run.settle()
        shown = texts(fake, 42)
        finals = text_calls(fake, rich=True)
    assert 3 <= len(shown) <= 5
    assert all(_utf16(text) <= 4096 for text in shown)
    assert len(finals) == len(shown)  # every chunk went out rich: no plain-text fallback
    for call in finals:
        entities = json.loads(call.params["entities"])
        assert any(e["type"] == "pre" and e.get("language") == "python" for e in entities)
    joined = "\n".join(shown)
    assert joined.count("👍🏽") == SECTIONS
    assert joined.count("x = x * 2  # 😀 keep") == 4 * SECTIONS
    assert "```" not in joined  # fences became pre entities, also where a chunk was cut


async def test_markdown_with_reserved_characters_is_delivered(tmp_path: Path) -> None:
    answer = "**Total:** 1.5 * 2 = 3! (approx.) [draft] a_b #tag {x} |y| > z - `a_b*c` <T> & ok."
    with FakeTelegram() as fake:
        async with telegram_daemon(
            telegram_settings(tmp_path, fake), FakeAgent(reply_override=answer)
        ) as run:
            fake.push_message("go")
            await wait_text(fake, 42, "approx")
            await run.settle()
        (shown,) = texts(fake, 42)
        final = text_calls(fake, rich=True)[-1]
    assert shown == "Total: 1.5 * 2 = 3! (approx.) [draft] a_b #tag {x} |y| > z - a_b*c <T> & ok."
    kinds = [e["type"] for e in json.loads(final.params["entities"])]
    assert kinds == ["bold", "code"]


async def test_presented_files_go_out_as_document_and_photo(tmp_path: Path) -> None:
    outputs = ThreadWorkspace.for_thread(tmp_path, "t1").outputs
    outputs.mkdir(parents=True)
    (outputs / "report.csv").write_text("a,b\n1,2\n")
    (outputs / "chart.png").write_bytes(TINY_PNG)
    agent = FakeAgent(files_to_present=[
        PresentedFile(path=outputs / "report.csv", name="report.csv"),
        PresentedFile(path=outputs / "chart.png", name="chart.png"),
    ])  # fmt: skip
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            asked = fake.push_message("make a report")["message"]["message_id"]
            document = await fake.await_call("sendDocument")
            photo = await fake.await_call("sendPhoto")
            await run.settle()
    assert document.files["document"] == b"a,b\n1,2\n"
    assert photo.files["photo"] == TINY_PNG
    assert document.params["chat_id"] == "42"
    assert (
        "reply_parameters" not in document.params
        or str(asked) in document.params["reply_parameters"]
    )
    assert document.at > text_calls(fake)[-1].at  # text first, then files


async def test_a_429_is_honoured_before_the_retry(tmp_path: Path) -> None:
    agent = ScriptedAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            flood = "Too Many Requests: retry after 1"
            fake.fail_next("sendMessage", status=429, description=flood, retry_after=1)
            fake.push_message("hello")
            agent.feed(FinalAnswer(text="after the flood"))
            await wait_text(fake, 42, "after the flood")
            await run.settle()
        refused, delivered = fake.calls("sendMessage")
    assert delivered.at - refused.at >= 0.95


async def test_a_blocked_bot_does_not_retry_into_a_storm(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            blocked = "Forbidden: bot was blocked by the user"
            fake.fail_next("sendMessage", status=403, description=blocked, times=50)
            fake.push_message("are you there?")
            await agent.wait_runs(1)
            await run.settle()
            dead = await run.kernel.store.outbox.listing(OutboxState.DEAD)
            pending = await run.kernel.store.outbox.listing(OutboxState.PENDING)
        sends = fake.calls("sendMessage")
    assert len(sends) == 1  # the first refusal marks the chat unreachable
    assert dead
    assert not pending
    assert all("forbidden" in (row.last_error or "") or "unreachable" in (row.last_error or "")
               for row in dead)  # fmt: skip


async def test_a_redelivered_update_is_processed_once(tmp_path: Path) -> None:
    agent = FakeAgent()
    with FakeTelegram() as fake:
        settings = telegram_settings(tmp_path, fake)
        async with telegram_daemon(settings, agent) as run:
            update_id = fake.push_message("only once")["update_id"]
            await wait_text(fake, 42, "echo: only once")
            fake.redeliver(update_id)
            fake.push_message("next")
            await wait_text(fake, 42, "echo: next")
            await run.settle()
        # A restarted adapter has no memory of the update: the journal's dedupe catches it.
        async with telegram_daemon(settings, agent) as run:
            fake.redeliver(update_id)
            fake.push_message("after restart")
            await wait_text(fake, 42, "echo: after restart")
            await run.settle()
        assert [r.turn.text for r in agent.runs] == ["only once", "next", "after restart"]
        assert sum("echo: only once" in text for text in texts(fake, 42)) == 1


async def test_a_rejected_rich_text_falls_back_to_plain(tmp_path: Path) -> None:
    agent = ScriptedAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            refusal = "Bad Request: can't parse entities: unsupported start tag"
            fake.fail_next("sendMessage", status=400, description=refusal)
            fake.push_message("hello")
            agent.feed(FinalAnswer(text="**bold** and `code`"))
            await wait_text(fake, 42, "**bold** and `code`")
            await run.settle()
        rich, plain = fake.calls("sendMessage")
    assert "entities" in rich.params
    assert "entities" not in plain.params
    assert "parse_mode" not in plain.params


async def test_a_very_long_answer_goes_out_as_a_markdown_file(tmp_path: Path) -> None:
    answer = "\n\n".join(f"Paragraph {i}: " + "words and more words " * 20 for i in range(80))
    agent = FakeAgent(reply_override=answer)
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.push_message("write a book")
            document = await fake.await_call("sendDocument")
            await run.settle()
        shown = texts(fake, 42)
    assert document.filenames["document"] == "answer.md"
    assert document.files["document"].decode() == answer
    assert any("attached as a Markdown file" in text for text in shown)


async def test_a_final_whose_placeholder_was_deleted_is_sent_anew(tmp_path: Path) -> None:
    agent = ScriptedAgent()
    with FakeTelegram() as fake:
        async with telegram_daemon(telegram_settings(tmp_path, fake), agent) as run:
            fake.push_message("hello")
            agent.feed(TextDelta(text="thinking"))
            await fake.await_call("sendMessage")
            gone = "Bad Request: message to edit not found"
            fake.fail_next("editMessageText", status=400, description=gone)
            agent.feed(FinalAnswer(text="the final answer"))
            await wait_text(fake, 42, "the final answer")
            await run.settle()
            dead = await run.kernel.store.outbox.listing(OutboxState.DEAD)
        placeholder, final = fake.calls("sendMessage")
    assert placeholder.params["text"] == "thinking ▍"
    assert final.params["text"] == "the final answer"
    assert not dead
