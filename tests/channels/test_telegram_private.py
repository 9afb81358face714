"""Private messages on Telegram: a message ``private_to`` a member who just pressed one of the
bot's buttons answers that press as an alert only they see; otherwise it is posted in the
chat, and a press nobody answers privately still stops spinning within the window."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from bot.messages import (
    ChatType,
    ConversationKey,
    Destination,
    OutboundKind,
    OutboundText,
    TextEdit,
)
from bot.records import OutboxItem
from tests.channels.telegram_presses_support import (
    CHOICES,
    GROUP,
    Intake,
    ask,
    group,
    notice,
    press,
    started,
)
from tests.channels.telegram_support import telegram_daemon, telegram_settings, wait_text
from tests.fakes.agent import FakeAgent
from tests.fakes.telegram_api import Call, CallbackAnswer, FakeTelegram

LONG_WINDOW_S = 30.0
"""Longer than any test: a press is answered only by what the test sends."""


def _answer_of(query_id: str) -> Callable[[Call], bool]:
    return lambda call: call.params.get("callback_query_id") == query_id


async def test_a_private_notice_answers_the_pressers_button_with_an_alert(tmp_path: Path) -> None:
    intake = Intake()
    with FakeTelegram() as fake:
        async with started(tmp_path, fake, intake, press_window_s=LONG_WINDOW_S) as channel:
            question = await ask(channel, fake, intake)
            query = press(fake, question, user_id=8)
            (pressed,) = await intake.wait_presses(1)
            assert (pressed.chat_id, pressed.sender.id) == (str(GROUP), "8")
            assert fake.calls("answerCallbackQuery") == []  # held for the kernel's word
            sent = await channel.send_text(notice("Only **Alice** may decide this.", to="8"))
        assert sent.message_ids == ()  # nothing in the chat to edit later
        assert fake.callback_answers() == {
            query: CallbackAnswer(text="Only Alice may decide this.", show_alert=True)
        }
        assert len(fake.calls("sendMessage")) == 1  # the question only


async def test_a_press_nobody_answers_privately_stops_spinning_within_the_window(
    tmp_path: Path,
) -> None:
    intake = Intake()
    with FakeTelegram() as fake:
        async with started(tmp_path, fake, intake, press_window_s=0.2) as channel:
            question = await ask(channel, fake, intake)
            query = press(fake, question, user_id=8)
            await fake.await_call("answerCallbackQuery", _answer_of(query))
            late = await channel.send_text(notice("Already decided by Alice.", to="8"))
        assert fake.callback_answers() == {query: CallbackAnswer(text="", show_alert=False)}
        posted = fake.chat_messages(GROUP)[-1]
        assert posted["text"] == "Already decided by Alice."
        assert late.message_ids == (str(posted["message_id"]),)


async def test_a_private_notice_for_someone_else_is_posted_and_the_press_stays_held(
    tmp_path: Path,
) -> None:
    intake = Intake()
    with FakeTelegram() as fake:
        async with started(tmp_path, fake, intake, press_window_s=LONG_WINDOW_S) as channel:
            question = await ask(channel, fake, intake)
            fake.push_message("elsewhere", chat_id=-5, chat_type="group", user_id=8)
            query = press(fake, question, user_id=8)
            await intake.wait_presses(1)
            await channel.send_text(notice("For member 9.", to="9"))
            await channel.send_text(notice("For member 8 in another chat.", to="8", chat_id=-5))
            await channel.send_text(notice("For member 8.", to="8"))
        assert fake.chat_messages(GROUP)[-1]["text"] == "For member 9."
        assert [c.params["chat_id"] for c in fake.calls("sendMessage")][1:] == [
            str(GROUP),
            "-5",
        ]
        assert fake.callback_answers() == {
            query: CallbackAnswer(text="For member 8.", show_alert=True)
        }


async def test_a_long_private_notice_is_cut_to_telegrams_200_characters(tmp_path: Path) -> None:
    intake = Intake()
    text = "Denied: " + "🚫 not yours " * 40
    with FakeTelegram() as fake:
        async with started(tmp_path, fake, intake, press_window_s=LONG_WINDOW_S) as channel:
            question = await ask(channel, fake, intake)
            query = press(fake, question, user_id=8)
            await intake.wait_presses(1)
            await channel.send_text(notice(text, to="8"))
        answer = fake.callback_answers()[query]
        assert answer.show_alert
        assert answer.text.endswith("…")
        assert len(answer.text.encode("utf-16-le")) // 2 == 200
        assert text.startswith(answer.text[:-1].rstrip())


async def test_a_second_press_by_the_same_member_answers_the_first_at_once(
    tmp_path: Path,
) -> None:
    intake = Intake()
    with FakeTelegram() as fake:
        async with started(tmp_path, fake, intake, press_window_s=LONG_WINDOW_S) as channel:
            question = await ask(channel, fake, intake)
            first = press(fake, question, user_id=8)
            await intake.wait_presses(1)
            second = press(fake, question, user_id=8)
            await fake.await_call("answerCallbackQuery", _answer_of(first))
            await channel.send_text(notice("Not yours to decide.", to="8"))
        assert fake.callback_answers() == {
            first: CallbackAnswer(text="", show_alert=False),
            second: CallbackAnswer(text="Not yours to decide.", show_alert=True),
        }


async def test_a_press_the_kernel_refused_is_left_unanswered_for_its_redelivery(
    tmp_path: Path,
) -> None:
    """Closing answers every held press; a refused one is not held, so nothing is answered."""
    intake = Intake()
    with FakeTelegram() as fake:
        async with started(tmp_path, fake, intake, press_window_s=LONG_WINDOW_S) as channel:
            question = await ask(channel, fake, intake)
            intake.refusing = True
            press(fake, question, user_id=8)
            await intake.wait(lambda: intake.refused >= 1)
        assert fake.calls("answerCallbackQuery") == []


async def test_closing_the_channel_answers_every_held_press(tmp_path: Path) -> None:
    intake = Intake()
    with FakeTelegram() as fake:
        async with started(tmp_path, fake, intake, press_window_s=LONG_WINDOW_S) as channel:
            question = await ask(channel, fake, intake)
            query = press(fake, question, user_id=8)
            await intake.wait_presses(1)
            assert fake.calls("answerCallbackQuery") == []
        assert fake.callback_answers() == {query: CallbackAnswer(text="", show_alert=False)}


async def test_an_edit_without_buttons_removes_the_inline_keyboard(tmp_path: Path) -> None:
    intake = Intake()
    with FakeTelegram() as fake:
        async with started(tmp_path, fake, intake, press_window_s=LONG_WINDOW_S) as channel:
            question = await ask(channel, fake, intake)
            keyboard = json.loads(fake.calls("sendMessage")[0].params["reply_markup"])
            labels = [row[0]["text"] for row in keyboard["inline_keyboard"]]
            decided = TextEdit(
                destination=group(),
                message_id=str(question),
                text="Run `deploy`? Approved by Alice.",
                kind=OutboundKind.NOTICE,
            )
            await channel.edit_text(decided)
        (shown,) = fake.chat_messages(GROUP)
        assert labels == [b.label for b in CHOICES]
        assert shown["text"] == "Run deploy? Approved by Alice."
        assert "reply_markup" not in shown


async def test_a_private_notice_from_the_outbox_answers_the_press(tmp_path: Path) -> None:
    """Through the daemon: the notice is recorded in the outbox (its ``private_to`` too) and
    answers the press; the pressed option still answers the question."""
    agent = FakeAgent()
    with FakeTelegram() as fake:
        settings = telegram_settings(tmp_path, fake)
        async with telegram_daemon(settings, agent, press_window_s=LONG_WINDOW_S) as run:
            fake.push_message("ask: Which colour? | red | blue")
            asked = await fake.await_call("sendMessage", lambda c: "reply_markup" in c.params)
            keyboard = json.loads(asked.params["reply_markup"])["inline_keyboard"]
            data = {row[0]["text"]: row[0]["callback_data"] for row in keyboard}
            message_id = fake.chat_messages(42)[-1]["message_id"]
            update = fake.push_callback_query(data=data["blue"], chat_id=42, message_id=message_id)
            await wait_text(fake, 42, "answer: blue")
            dm = ConversationKey(channel="telegram", account_id="999", chat_id="42")
            private = OutboxItem(
                idempotency_key="private-1",
                delivery=OutboundText(
                    destination=Destination.of(dm, ChatType.DM),
                    text="Noted, *blue*.",
                    kind=OutboundKind.NOTICE,
                    private_to="42",
                ),
                key=dm,
                thread_id=None,
                correlation_id="test",
            )
            sent = await run.kernel.delivery.outbox.send_now(private)
            await run.settle()
        query = str(update["callback_query"]["id"])
        assert sent is not None
        assert sent.message_ids == ()
        assert fake.callback_answers() == {
            query: CallbackAnswer(text="Noted, blue.", show_alert=True)
        }
        assert not any("Noted" in str(m.get("text")) for m in fake.chat_messages(42))
