"""The agent's Markdown → Slack message payloads, with the fallback ladder of design §8.

Three rungs, best first:

1. ``MARKDOWN`` — Slack's ``markdown`` block, which renders standard Markdown (headings,
   tables, fenced code) natively; up to 12 000 characters per message, which is why the
   adapter tells the kernel ``text_limit=12000`` and lets it split longer answers.
2. ``MRKDWN`` — the same text converted to Slack's older mrkdwn dialect (``mrkdwn.py``, linear
   time) for workspaces or clients that refuse the ``markdown`` block.
3. ``PLAIN`` — the text as is, escaped, with formatting off (``RenderMode.PLAIN``; streaming
   placeholders always use it).

The adapter walks rungs 1 → 2 itself when Slack answers ``invalid_blocks``; the kernel asks
for rung 3 when both fail. Every payload carries a ``text`` fallback (notifications, clients
without blocks). Buttons become ``actions`` blocks whose ``value`` is the kernel's payload.
``render_async`` converts a chunk for rung 2 in a worker thread: tens of milliseconds for the
worst 12 000 characters, which the event loop should not wait through.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import StrEnum

from bot.delivery.chunking import split_markdown
from bot.messages import Button
from channels.slack.mrkdwn import escape, to_mrkdwn

Block = dict[str, object]

ACTION_PREFIX = "switchboard:choice:"
ACTIONS_BLOCK_PREFIX = "switchboard_actions_"
SECTION_LIMIT = 3000
BUTTON_LABEL_LIMIT = 75
BUTTONS_PER_BLOCK = 25
MAX_BLOCKS = 50


class Rung(StrEnum):
    MARKDOWN = "markdown"
    MRKDWN = "mrkdwn"
    PLAIN = "plain"


@dataclass(frozen=True, slots=True, kw_only=True)
class Payload:
    """The content arguments of ``chat.postMessage`` / ``chat.update``."""

    text: str
    blocks: tuple[Block, ...] = ()
    mrkdwn: bool = True


async def render_async(markdown: str, rung: Rung, buttons: tuple[Button, ...] = ()) -> Payload:
    """``render``, off the event loop for the rung that parses the Markdown."""
    if rung is Rung.MRKDWN:
        return await asyncio.to_thread(render, markdown, rung, buttons)
    return render(markdown, rung, buttons)


def render(markdown: str, rung: Rung, buttons: tuple[Button, ...] = ()) -> Payload:
    """The payload for one message (already within the kernel's 12 000-character chunks)."""
    text = markdown if markdown.strip() else "(empty)"
    actions = action_blocks(buttons)
    if rung is Rung.MARKDOWN:
        return Payload(text=escape(text), blocks=({"type": "markdown", "text": text}, *actions))
    if rung is Rung.MRKDWN:
        converted = to_mrkdwn(text)
        if not actions:
            return Payload(text=converted)
        return Payload(text=converted, blocks=(*_sections(converted, "mrkdwn"), *actions))
    if not actions:
        return Payload(text=escape(text), mrkdwn=False)
    return Payload(text=escape(text), blocks=(*_sections(text, "plain_text"), *actions))


def _sections(text: str, kind: str) -> tuple[Block, ...]:
    """Text that must live in blocks (it sits above buttons), in 3 000-character sections."""
    pieces = split_markdown(text, SECTION_LIMIT) or ("…",)
    room = MAX_BLOCKS - 2
    return tuple(
        {"type": "section", "text": {"type": kind, "text": piece}} for piece in pieces[:room]
    )


def action_blocks(buttons: tuple[Button, ...]) -> tuple[Block, ...]:
    """Buttons in ``actions`` blocks of at most 25; ``action_id`` is unique per button."""
    blocks: list[Block] = []
    for start in range(0, len(buttons), BUTTONS_PER_BLOCK):
        elements = [
            _button(index, button)
            for index, button in enumerate(buttons[start : start + BUTTONS_PER_BLOCK], start)
        ]
        block_id = f"{ACTIONS_BLOCK_PREFIX}{start // BUTTONS_PER_BLOCK}"
        blocks.append({"type": "actions", "block_id": block_id, "elements": elements})
    return tuple(blocks)


def _button(index: int, button: Button) -> Block:
    label = button.label.strip() or str(index + 1)
    if len(label) > BUTTON_LABEL_LIMIT:
        label = label[: BUTTON_LABEL_LIMIT - 1] + "…"
    return {
        "type": "button",
        "action_id": f"{ACTION_PREFIX}{index}",
        "text": {"type": "plain_text", "text": label, "emoji": True},
        "value": button.payload,
    }


def chosen_blocks(blocks: list[Block], label: str) -> list[Block]:
    """The clicked message's blocks with our buttons replaced by a "Chosen: X" line."""
    kept: list[Block] = []
    marked = False
    for block in blocks:
        block_id = block.get("block_id")
        ours = isinstance(block_id, str) and block_id.startswith(ACTIONS_BLOCK_PREFIX)
        if block.get("type") == "actions" and ours:
            if not marked:
                kept.append(chosen_line(label))
                marked = True
            continue
        kept.append(block)
    if not marked:
        kept.append(chosen_line(label))
    return kept


def chosen_line(label: str) -> Block:
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": f"✅ Chosen: *{escape(label)}*"}],
    }
