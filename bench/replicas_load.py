"""The model and the load of ``bench/replicas.py``: closed-loop chats, timed from the fake's log.

The model is the soak's (its answer names the questions it answers: ``answer to q3-1.
end-of-answer``), made to answer after exactly ``latency_s``: no spread, the whole text in one
chunk, no gap between chunks.

``ClosedLoop`` drives chats that each send their next question ``q<chat>-<n>`` once the previous
one's answer arrived. It follows the fake's call log (every call is recorded with the fake's
``time.monotonic()`` on arrival, the clock the pushes are stamped with): an answer is a
``sendMessage`` or ``editMessageText`` whose text names the question and ends with the model's
``end-of-answer`` (progress, the streamed text so far, ends with a cursor instead); its first
such call is when the answer became visible. Whether each question was answered exactly
once is judged at the end from the chats as they stand (``score``), so a final edit of an
answer already seen is no duplicate, but a second message naming the question is, a progress
placeholder left with its cursor beside the final answer included (users see both).
"""

from __future__ import annotations

import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from typing_extensions import override

from bench.soak_model import END, MARKER, SoakModel, answer_text, question
from tests.fakes.openai_server import Reply
from tests.fakes.telegram_api import FakeTelegram

ANSWERS = ("sendMessage", "editMessageText")
CURSOR = "▍"
"""What a streamed placeholder ends with until the final text replaces it."""
_ANSWER = re.compile(r"answer to ((?:q\d+-\d+(?:, )?)+)")


class PromptModel(SoakModel):
    """The soak model answering after exactly ``latency_s``, in one chunk."""

    def __init__(self, latency_s: float) -> None:
        super().__init__(base_delay_s=latency_s, spread_s=0.0)
        self.chunk_gap_s = 0.0
        self.requests_served = 0

    @override
    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        self.requests_served += 1  # the server's one loop: no lock needed
        text = answer_text(_last_user_text(body))
        reply = Reply(text=text, delay_s=self.base_delay_s, chunk_chars=len(text))
        return await self._perform(request, body, reply)


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def answered(fake: FakeTelegram, chat: int) -> list[str]:
    """The questions the chat's answers name, in the order the answers stand in the chat.

    A message still showing the streaming cursor is a placeholder left behind (a crash between
    Telegram taking it and the daemon recording it), not an answer: ``score`` counts those as
    ``stray``."""
    found: list[str] = []
    for message in fake.chat_messages(chat):
        text = str(message.get("text") or "")
        match = _ANSWER.search(text)
        if match is not None and not text.endswith(CURSOR):
            found += match.group(1).split(", ")
    return found


@dataclass(frozen=True, slots=True)
class Answer:
    chat: int
    marker: str
    at: float


class Lost(RuntimeError):
    """Questions not answered in time."""


@dataclass(slots=True)
class ClosedLoop:
    """Chats ``chats``, each asking questions ``first``..``last`` one after the other."""

    fake: FakeTelegram
    chats: list[int]
    first: int
    last: int
    pushed: dict[str, float] = field(default_factory=dict)
    answers: list[Answer] = field(default_factory=list)
    """The first answer to each question, in the order they came."""
    _waiting: dict[int, int] = field(default_factory=dict)
    _answered: set[str] = field(default_factory=set)
    _seen: int = 0

    def start(self) -> None:
        self._seen = len(self.fake.calls())
        for chat in self.chats:
            self._push(chat, self.first)

    def _push(self, chat: int, index: int) -> None:
        self._waiting[chat] = index
        self.pushed[f"q{chat}-{index}"] = time.monotonic()
        self.fake.push_message(question(chat, index), chat_id=chat, user_id=chat)

    @property
    def done(self) -> bool:
        return not self._waiting

    def pending(self, chats: set[int] | None = None) -> list[str]:
        """The questions asked and not answered yet (of ``chats``, default all)."""
        return [f"q{c}-{i}" for c, i in self._waiting.items() if chats is None or c in chats]

    def step(self, timeout_s: float) -> int:
        """Takes the calls the fake recorded since the last step (waiting up to ``timeout_s``
        for one), asks the next questions; returns how many questions were answered."""
        fresh = self.fake.calls_after(self._seen, timeout=timeout_s)
        self._seen += len(fresh)
        count = 0
        for call in fresh:
            if call.method not in ANSWERS:
                continue
            text = str(call.params.get("text") or "")
            match = _ANSWER.search(text)
            if match is None or not text.rstrip().endswith(END):
                continue  # not an answer, or progress (it ends with a cursor)
            chat = int(call.params["chat_id"])
            for marker in match.group(1).split(", "):
                if marker not in self.pushed or marker in self._answered:
                    continue  # not ours, or a later edit (or a duplicate: ``score`` counts it)
                self._answered.add(marker)
                self.answers.append(Answer(chat, marker, call.at))
                count += 1
                waiting = self._waiting.get(chat)
                if waiting is not None and marker == f"q{chat}-{waiting}":
                    del self._waiting[chat]
                    if waiting < self.last:
                        self._push(chat, waiting + 1)
        return count

    def run(
        self, *, stall_s: float, deadline: float, until: Callable[[], bool] | None = None
    ) -> None:
        """Steps until every chat asked its last question and got the answer (or ``until``
        holds); raises ``Lost`` after ``stall_s`` without any answer, or past ``deadline``."""
        last_progress = time.monotonic()
        while not self.done and (until is None or not until()):
            if self.step(timeout_s=0.5):
                last_progress = time.monotonic()
            now = time.monotonic()
            if now - last_progress > stall_s or now > deadline:
                why = "no answer for" if now <= deadline else "past the deadline, after"
                waited = round(now - last_progress, 1)
                raise Lost(f"{why} {waited} s; unanswered: {', '.join(self.pending())}")

    def latencies(self, *, after: float = 0.0) -> list[float]:
        """Seconds from each question's push to its answer (questions pushed after ``after``)."""
        return [
            a.at - self.pushed[a.marker] for a in self.answers if self.pushed[a.marker] >= after
        ]


def summary(latencies: list[float], seconds: float | None = None) -> dict[str, float]:
    """Count, rate over ``seconds`` (when given) and latency percentiles."""
    ordered = sorted(latencies)
    if not ordered:
        return {"answers": 0}
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    found: dict[str, float] = {"answers": len(ordered)}
    if seconds is not None:
        found["seconds"] = round(seconds, 2)
        found["answers_per_s"] = round(len(ordered) / seconds, 2) if seconds > 0 else 0.0
    found |= {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p99_ms": round(p99 * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }
    return found


def score(fake: FakeTelegram, chats: list[int], first: int, last: int) -> dict[str, object]:
    """Lost, duplicated and reordered answers, from the chats as they stand."""
    lost: list[str] = []
    duplicated: list[str] = []
    reordered: list[int] = []
    for chat in chats:
        expected = [f"q{chat}-{n}" for n in range(first, last + 1)]
        seen = answered(fake, chat)
        counts = Counter(seen)
        lost += [m for m in expected if counts[m] == 0]
        duplicated += sorted(m for m, n in counts.items() if n > 1)
        firsts = list(dict.fromkeys(seen))
        if firsts != [m for m in expected if m in counts]:
            reordered.append(chat)
    stray = sorted(
        {
            m
            for chat in chats
            for m in answered(fake, chat)
            if not m.startswith(f"q{chat}-") or not first <= _index(m) <= last
        }
    )
    shown = {m: _texts(fake, m) for m in duplicated[:4]}
    left = sum(
        str(m.get("text") or "").endswith(CURSOR)
        for chat in chats
        for m in fake.chat_messages(chat)
    )
    return {
        "questions": len(chats) * (last - first + 1), "lost": len(lost),
        "duplicated": len(duplicated), "reordered_chats": len(reordered),
        "left_placeholders": left,
        "samples": {"lost": lost[:8], "duplicated": shown, "stray": stray[:8]},
    }  # fmt: skip


def _texts(fake: FakeTelegram, marker: str) -> list[str]:
    """The texts of the bot's messages that name ``marker`` (to tell a second answer from,
    say, a progress placeholder left behind)."""
    chat = chat_of(marker)
    return [
        f"#{m.get('message_id')}: {str(m.get('text'))[:60]}"
        for m in fake.chat_messages(chat)
        if marker in (_ANSWER.search(str(m.get("text") or "")) or [""])[0]
    ]


def chat_of(marker: str) -> int:
    """The chat of ``q<chat>-<n>``."""
    found = MARKER.fullmatch(marker)
    if found is None:
        raise ValueError(f"not a question marker: {marker!r}")
    return int(found.group(1))


def _index(marker: str) -> int:
    found = MARKER.fullmatch(marker)
    return -1 if found is None else int(found.group(2))
