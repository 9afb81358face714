"""A clarifying question fitted to what its platform takes (design §7).

The agent may ask anything: a 20 000-character question, hundreds of options, options longer
than a button. Sent whole, the platform refuses the message, and the turn waited half an hour
for an answer to a question nobody saw. So the kernel fits each question to the channel's
declared capabilities (``text_limit``, ``text_unit``, ``buttons``, ``button_limits``) before
it is sent; adapters only render what they are given.

- The text is split in the platform's unit at paragraph and line breaks; the buttons go on
  the last part, whose text is held to ``button_limits.text_limit``.
- A question that would take more than ``MAX_PARTS`` messages is cut, with a visible marker.
- At most ``button_limits.max_buttons`` options become buttons, their labels cut to
  ``label_chars`` with "…". The other options are listed as numbered lines, which the user
  answers by number (``clarifications``); if any label had to be cut, every option is listed
  in full. Without buttons, every option is listed, as before.
- At most ``MAX_LISTED`` options are listed, each cut to ``LISTED_CHARS``; a number still
  answers an option that is not shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.delivery.chunking import measure, split_markdown
from bot.messages import Button
from bot.ports import ChannelCapabilities, TextUnit

MAX_PARTS = 5
"""As for answers (over ~5 messages an answer goes as a file): more is no longer a question."""
MAX_LISTED = 50
LISTED_CHARS = 200
HEAD_SHARE = 0.9
"""The question may fill this share of ``MAX_PARTS - 1`` messages: a split rarely packs them
full, and the options and the hint need the rest."""
CUT_MARKER = "…\n\n_(The question was too long to show in full.)_"
ANSWER_HINT = "_Reply with a number or your own answer._"


@dataclass(frozen=True, slots=True, kw_only=True)
class FittedQuestion:
    """The messages that show one question, in order; the last carries ``buttons``."""

    parts: tuple[str, ...]
    buttons: tuple[Button, ...]


def fit_question(
    question: str,
    options: Sequence[str],
    caps: ChannelCapabilities,
    payload: Callable[[int], str],
) -> FittedQuestion:
    """``payload(i)`` is what the button for ``options[i]`` carries back when pressed."""
    limits = caps.button_limits
    count = min(len(options), limits.max_buttons) if caps.buttons else 0
    buttons = tuple(
        Button(label=_label(option, index, limits.label_chars), payload=payload(index))
        for index, option in enumerate(options[:count])
    )
    any_cut = any(len(option.strip()) > limits.label_chars for option in options[:count])
    listing = _listing(options, 0 if any_cut or not buttons else count)
    head = _fit_head(f"❓ {question.strip()}", caps)
    text = "\n\n".join(part for part in (head, listing, ANSWER_HINT if listing else "") if part)
    parts = _at_most(split_markdown(text, caps.text_limit, caps.text_unit), caps)
    if buttons:
        parts = _room_for_buttons(parts, caps)
    return FittedQuestion(parts=parts or ("❓",), buttons=buttons)


def _label(option: str, index: int, limit: int) -> str:
    label = option.strip() or str(index + 1)
    return label if len(label) <= limit else label[: limit - 1].rstrip() + "…"


def _listing(options: Sequence[str], start: int) -> str:
    """Options from ``start`` on, numbered as the answer-by-number rule counts them."""
    shown = options[start : start + MAX_LISTED]
    lines = [
        f"{number}. {shortened(option, LISTED_CHARS)}"
        for number, option in enumerate(shown, start + 1)
    ]
    hidden = len(options) - start - len(shown)
    if hidden > 0:
        lines.append(f"… and {hidden} more (not shown)")
    return "\n".join(lines)


def shortened(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _fit_head(head: str, caps: ChannelCapabilities) -> str:
    room = int((MAX_PARTS - 1) * caps.text_limit * HEAD_SHARE)
    if measure(head, caps.text_unit) <= room:
        return head
    return cut_to(head, room - measure(CUT_MARKER, caps.text_unit), caps.text_unit) + CUT_MARKER


def _at_most(parts: tuple[str, ...], caps: ChannelCapabilities) -> tuple[str, ...]:
    """The first ``MAX_PARTS`` parts, the last ending in the marker when more were cut."""
    if len(parts) <= MAX_PARTS:
        return parts
    room = caps.text_limit - measure(CUT_MARKER, caps.text_unit)
    last = cut_to(parts[MAX_PARTS - 1], room, caps.text_unit) + CUT_MARKER
    return (*parts[: MAX_PARTS - 1], last)


def _room_for_buttons(parts: tuple[str, ...], caps: ChannelCapabilities) -> tuple[str, ...]:
    """Split the last part again where the text above buttons has a lower limit."""
    limit = caps.button_limits.text_limit
    if not parts or limit is None or measure(parts[-1], caps.text_unit) <= limit:
        return parts
    return (*parts[:-1], *split_markdown(parts[-1], limit, caps.text_unit))


def cut_to(text: str, room: int, unit: TextUnit) -> str:
    """The longest prefix of ``text`` that measures at most ``room`` (binary search: the
    units per character vary)."""
    low, high = 0, min(len(text), max(room, 0))
    while low < high:
        middle = (low + high + 1) // 2
        if measure(text[:middle], unit) <= room:
            low = middle
        else:
            high = middle - 1
    return text[:low].rstrip()
