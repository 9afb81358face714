"""Scoring a soak phase from what the chats show at the end.

Each chat's bot messages, as they stand (after edits, oldest first by message id), are sorted
into final answers (they end with the model's ``end-of-answer`` and name the messages they
answer), the daemon's known notices, and anything else ("strays": e.g. a half-streamed
placeholder left behind). Then, per user message ``q<chat>-<n>``:

- answered: at least one final answer names it; lost: none does ("with apology" when the
  daemon's "could not be answered after a restart" notice replies to it);
- duplicated: two or more distinct final answers name it; a duplicate is "after take" when
  every extra copy is a message the fake took and then answered 5xx (the sender cannot know it
  went out; at-least-once delivery must resend);
- reordered: its first answer comes after the first answer of a later message of its chat.

Strays are split the same way: one the fake took and answered 5xx (a placeholder the daemon
never learnt the id of) is "after take".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.soak_model import END, MARKER
from bot.pipeline.recovery import GAVE_UP_NOTICE, INTERRUPTED_PLACEHOLDER, RESUMING_NOTICE

NOTICES = {
    "resuming": RESUMING_NOTICE,
    "interrupted_placeholder": INTERRUPTED_PLACEHOLDER,
    "restarting": "🔄 The bot is restarting",
    "gave_up": GAVE_UP_NOTICE,
    "failed_reply": "⚠️ Sorry, I could not finish this reply",
}


@dataclass(slots=True)
class Score:
    sent: int = 0
    answered: int = 0
    lost: list[str] = field(default_factory=list)
    lost_with_apology: list[str] = field(default_factory=list)
    duplicated: dict[str, list[int]] = field(default_factory=dict)
    duplicated_after_take: dict[str, list[int]] = field(default_factory=dict)
    reordered: list[str] = field(default_factory=list)
    notices: dict[str, int] = field(default_factory=dict)
    strays: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "sent": self.sent, "answered": self.answered, "lost": len(self.lost),
            "lost_with_apology": len(self.lost_with_apology),
            "duplicated": len(self.duplicated), "reordered": len(self.reordered),
            "duplicated_after_take": len(self.duplicated_after_take),
            "notices": dict(sorted(self.notices.items())),
            "stray_messages": len([s for s in self.strays if not s.get("after_take")]),
            "stray_after_take": len([s for s in self.strays if s.get("after_take")]),
        }  # fmt: skip
        if self.lost:
            result["lost_messages"] = self.lost[:20]
        if self.lost_with_apology:
            result["lost_with_apology_messages"] = self.lost_with_apology[:20]
        if self.duplicated:
            result["duplicated_messages"] = dict(list(self.duplicated.items())[:20])
        if self.duplicated_after_take:
            result["duplicated_after_take_messages"] = dict(
                list(self.duplicated_after_take.items())[:20]
            )
        if self.reordered:
            result["reordered_messages"] = self.reordered[:20]
        if self.strays:
            result["stray_samples"] = self.strays[:10]
        return result


def _notice_kind(text: str) -> str | None:
    for kind, start in NOTICES.items():
        if text.startswith(start) or start in text:
            return kind
    return None


Taken = set[tuple[int, int]] | frozenset[tuple[int, int]]


def score(
    sent: Mapping[int, Sequence[int]],
    chats: Mapping[int, Sequence[Mapping[str, Any]]],
    taken_then_failed: Taken = frozenset(),
    message_ids: Mapping[tuple[int, int], int] | None = None,
) -> Score:
    """``sent``: chat -> indices pushed; ``chats``: chat -> the bot's messages there now;
    ``message_ids``: (chat, index) -> the user's message id, to tell which lost messages got
    the daemon's "please send it again" apology (it replies to the message it gives up)."""
    result = Score(sent=sum(len(indices) for indices in sent.values()))
    for chat, indices in sent.items():
        copies: dict[int, list[int]] = {n: [] for n in indices}
        order: list[int] = []
        apologized = _sort_messages(
            result, chat, chats.get(chat, []), copies=copies, order=order, taken=taken_then_failed
        )
        for index, ids in copies.items():
            name = f"q{chat}-{index}"
            if not ids:
                result.lost.append(name)
                if (message_ids or {}).get((chat, index), -1) in apologized:
                    result.lost_with_apology.append(name)
                continue
            result.answered += 1
            if len(ids) > 1:
                extra = [m for m in ids if (chat, m) not in taken_then_failed]
                target = result.duplicated if len(extra) > 1 else result.duplicated_after_take
                target[name] = ids
        result.reordered += _reordered(chat, order)
    return result


def _sort_messages(  # noqa: PLR0913 - one chat's share of ``score``
    result: Score,
    chat: int,
    messages: Sequence[Mapping[str, Any]],
    *,
    copies: dict[int, list[int]],
    order: list[int],
    taken: Taken,
) -> set[int]:
    """Files one chat's bot messages as answers (into ``copies``/``order``), notices and
    strays (into ``result``); returns the user message ids a give-up apology replied to."""
    apologized: set[int] = set()
    for message in sorted(messages, key=lambda m: int(m["message_id"])):
        text = str(message.get("text") or message.get("caption") or "")
        message_id = int(message["message_id"])
        if text.rstrip().endswith(END):
            for marker_chat, index in MARKER.findall(text):
                if int(marker_chat) == chat and int(index) in copies:
                    copies[int(index)].append(message_id)
                    order.append(int(index))
            continue
        kind = _notice_kind(text)
        if kind is None:
            stray = {"chat": chat, "message_id": message_id, "text": text[:120]}
            if (chat, message_id) in taken:
                stray["after_take"] = True
            result.strays.append(stray)
            continue
        result.notices[kind] = result.notices.get(kind, 0) + 1
        replied = (message.get("reply_to_message") or {}).get("message_id")
        if kind == "gave_up" and replied is not None:
            apologized.add(int(replied))
    return apologized


def _reordered(chat: int, order: Sequence[int]) -> list[str]:
    """Messages whose first answer follows the first answer of a later message."""
    seen: set[int] = set()
    highest = -1
    late: list[str] = []
    for index in order:
        if index in seen:
            continue
        seen.add(index)
        if index < highest:
            late.append(f"q{chat}-{index}")
        highest = max(highest, index)
    return late
