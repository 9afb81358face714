"""Fitting a clarifying question to a channel's capabilities (``bot.delivery.questions``)."""

from __future__ import annotations

from bot.delivery.chunking import measure
from bot.delivery.questions import MAX_LISTED, MAX_PARTS, cut_to, fit_question
from bot.ports import ButtonLimits, ChannelCapabilities, TextUnit


def payload(index: int) -> str:
    return f"c/q/{index}"


def caps(text_limit: int = 1000, **kwargs: object) -> ChannelCapabilities:
    return ChannelCapabilities(text_limit=text_limit, **kwargs)  # type: ignore[arg-type]


def test_a_short_question_is_one_message_with_every_option_a_button() -> None:
    fitted = fit_question("Which colour?", ["red", "blue"], caps(buttons=True), payload)
    assert fitted.parts == ("❓ Which colour?",)
    assert [(b.label, b.payload) for b in fitted.buttons] == [("red", "c/q/0"), ("blue", "c/q/1")]


def test_without_buttons_every_option_is_numbered() -> None:
    fitted = fit_question("Size?", ["small", "large"], caps(), payload)
    assert fitted.buttons == ()
    assert fitted.parts == (
        "❓ Size?\n\n1. small\n2. large\n\n_Reply with a number or your own answer._",
    )


def test_options_beyond_the_buttons_are_listed_with_their_own_numbers() -> None:
    limits = ButtonLimits(max_buttons=3)
    options = [f"o{n}" for n in range(1, 6)]
    fitted = fit_question("Pick", options, caps(buttons=True, button_limits=limits), payload)
    assert [b.label for b in fitted.buttons] == ["o1", "o2", "o3"]
    assert "4. o4\n5. o5" in fitted.parts[-1]
    assert "1. o1" not in fitted.parts[-1]


def test_a_cut_label_lists_every_option_in_full() -> None:
    limits = ButtonLimits(label_chars=10)
    options = ["short", "a rather long option indeed"]
    fitted = fit_question("Pick", options, caps(buttons=True, button_limits=limits), payload)
    assert [b.label for b in fitted.buttons] == ["short", "a rather…"]
    assert "1. short\n2. a rather long option indeed" in fitted.parts[-1]


def test_parts_fit_in_utf16_units_and_the_buttons_text_limit() -> None:
    limits = ButtonLimits(text_limit=300)
    telegram_like = caps(1000, text_unit=TextUnit.UTF16, buttons=True, button_limits=limits)
    question = "😀 " * 1200  # 3 600 UTF-16 units
    fitted = fit_question(question, ["yes", "no"], telegram_like, payload)
    assert all(measure(part, TextUnit.UTF16) <= 1000 for part in fitted.parts)
    assert measure(fitted.parts[-1], TextUnit.UTF16) <= 300
    assert len(fitted.parts) >= 4


def test_too_many_parts_are_cut_with_a_marker() -> None:
    fitted = fit_question("x " * 100_000, ["a"], caps(500), payload)
    assert len(fitted.parts) <= MAX_PARTS
    assert all(len(part) <= 500 for part in fitted.parts)
    assert "too long to show in full" in "".join(fitted.parts)


def test_hundreds_of_options_list_a_bounded_few_and_say_how_many_more() -> None:
    options = [f"option {n}" for n in range(1, 301)]
    fitted = fit_question("Pick", options, caps(4000, buttons=True), payload)
    shown = "\n".join(fitted.parts)
    assert len(fitted.buttons) == 10
    assert f"{10 + MAX_LISTED}. option {10 + MAX_LISTED}" in shown
    assert f"and {300 - 10 - MAX_LISTED} more" in shown


def test_cut_to_counts_the_unit() -> None:
    assert cut_to("ééé", 4, TextUnit.UTF8_BYTES) == "éé"
    assert cut_to("😀😀", 3, TextUnit.UTF16) == "😀"
    assert cut_to("abc", 10, TextUnit.CHARS) == "abc"
