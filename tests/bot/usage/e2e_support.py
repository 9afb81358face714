"""What the usage and budget acceptance tests share: a fake model that knows which turn each
call belongs to, the turns a test sends, and the totals the store must hold for them.

The model answers by what the request's last user message asks (``turn-N`` names the turn,
``[tool]`` makes its first call a tool call, ``[quiet]`` leaves the usage unreported,
``[mini]`` names another model, ``[uses=80+20]`` sets the usage), never by the order requests
arrive in, so concurrent chats get the same answers whatever the interleaving. Every call it
answers is logged with its turn, the model it named and the usage it reported: the same
usage, in the same order, as the fake's own ``reported_usage()``, which the tests check.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from aiohttp import web
from typing_extensions import override

from agent.embedded import EmbeddedBackend
from bot.app import Daemon, DaemonOptions, Overrides
from bot.config.settings import Settings
from bot.messages import OutboundText
from bot.ports import Store
from bot.ports.usage import UsageDimension, UsageTotal
from store.postgres import PostgresStore
from store.usage import NANOS
from tests.bot.harness import Running, make_settings, started
from tests.fakes.channel import PLAIN_CAPS, FakeChannel
from tests.fakes.common import waiting
from tests.fakes.common.waiting import eventually
from tests.fakes.openai_server import (
    COMPUTED,
    FakeOpenAIServer,
    Hang,
    ReceivedRequest,
    Reply,
    ToolCall,
    Usage,
)

MAIN: Final = "fake-model"
MINI: Final = "fake-mini"
PRICES: Final = {MAIN: {"input": 1.0, "output": 2.0}, MINI: {"input": 0.5, "output": 1.5}}
"""``usage.prices``: whole nanos per token, so every expected cost is exact."""
NANOS_PER_TOKEN: Final = {
    model: (round(p["input"] * NANOS) // 1_000_000, round(p["output"] * NANOS) // 1_000_000)
    for model, p in PRICES.items()
}
TOOL: Final = "[tool]"
QUIET: Final = "[quiet]"
MINI_TAG: Final = "[mini]"
_TURN = re.compile(r"turn-(\d+)")
_USES = re.compile(r"\[uses=(\d+)\+(\d+)(?:/(\d+))?\]")
"""``[uses=80+20]``: each call of the turn reports 80 input and 20 output tokens;
``[uses=80+20/30]``: 30 of the input cached."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnReply(Reply):
    """A reply that knows its turn and names its model."""

    turn: int
    model: str


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call the fake answered: for which turn, as which model, reporting what."""

    turn: int
    model: str
    usage: Usage | None


@dataclass(frozen=True, slots=True)
class Planned:
    """A turn a test sends: who asks where, and what the model is to do."""

    number: int
    channel: str
    chat_id: str
    user_id: str
    tags: str = ""

    @property
    def text(self) -> str:
        return f"@fakebot turn-{self.number} {self.tags}".rstrip()

    @property
    def answer(self) -> str:
        """What the chat shows once the turn is answered."""
        return f"answer turn-{self.number}."


class TurnModel(FakeOpenAIServer):
    """The fake model server answering each turn as its message asks (see the module doc).

    A call may hang (never answer: ``hang_once``) or be held until ``release()`` (``hold``);
    nothing is scripted (``script`` has no effect here)."""

    def __init__(self) -> None:
        super().__init__(model=MAIN)
        self._calls: list[ModelCall] = []
        self._waiting: list[int] = []
        self._release: asyncio.Event | None = None
        self._hang_once: set[tuple[int, str]] = set()
        self._held: set[int] = set()

    def calls(self) -> list[ModelCall]:
        with self._lock:
            return list(self._calls)

    def waited(self) -> list[int]:
        """The turns of the calls that hung or were held so far, in the order they came."""
        with self._lock:
            return list(self._waiting)

    def wait_waiting(self, count: int, timeout: float) -> list[int]:
        """Block until ``count`` calls hang or are held (call via ``asyncio.to_thread``); the
        turns they belong to, in the order they came."""
        with self._lock:
            if not waiting.wait_until(self._lock, lambda: len(self._waiting) >= count, timeout):
                raise TimeoutError(f"expected {count} calls waiting, got {self._waiting}")
            return list(self._waiting)

    def hang_once(self, turn: int, call: Literal["first", "after_tool"]) -> None:
        """The turn's next call of that kind never answers: its first, or the one after the
        tool call of a ``[tool]`` turn; once."""
        with self._lock:
            self._hang_once.add((turn, call))

    def hold(self, *turns: int) -> None:
        """The calls of these turns wait for ``release()``."""
        with self._lock:
            self._held.update(turns)

    def release(self) -> None:
        """Answer the held calls; from now on no call is held."""
        with self._lock:
            self._held.clear()
        release = self._release
        assert release is not None, "the model server is not running"
        self.loop.call_soon_threadsafe(release.set)

    @override
    async def _astart(self) -> None:
        self._release = asyncio.Event()
        await super()._astart()

    @override
    async def _astop(self) -> None:
        if self._release is not None:
            self._release.set()
        await super()._astop()

    @override
    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        with self._lock:
            self._received.append(ReceivedRequest(path=request.path, body=body, authorization=None))
            step, held = self._decide(body)
            self._lock.notify_all()
        if held and self._release is not None:
            await self._release.wait()
        return await self._perform(request, body, step)

    def _decide(self, body: dict[str, Any]) -> tuple[TurnReply | Hang, bool]:
        """The reply, and whether it waits for ``release()``; under the lock."""
        messages: list[dict[str, Any]] = body["messages"]
        asked = next(str(m.get("content")) for m in reversed(messages) if m["role"] == "user")
        found = _TURN.search(asked)
        assert found is not None, f"a request names no turn: {asked!r}"
        turn = int(found[1])
        after_tool = messages[-1]["role"] == "tool"
        call = "after_tool" if after_tool else "first"
        if (turn, call) in self._hang_once:
            self._hang_once.discard((turn, call))
            self._waiting.append(turn)
            return Hang(), False
        held = turn in self._held
        if held:
            self._waiting.append(turn)
        return _reply(turn, asked, after_tool=after_tool), held

    @override
    def _chunks(self, reply: Reply, usage: Usage | None) -> list[dict[str, Any]]:
        chunks = super()._chunks(reply, usage)
        if not isinstance(reply, TurnReply):
            return chunks
        with self._lock:  # right after ``_report``, on the server's one loop: same order
            self._calls.append(ModelCall(turn=reply.turn, model=reply.model, usage=usage))
        return [{**chunk, "model": reply.model} for chunk in chunks]


def _reply(turn: int, asked: str, *, after_tool: bool) -> TurnReply:
    model = MINI if MINI_TAG in asked and not after_tool else MAIN
    uses = _USES.search(asked)
    usage: Usage | Literal["computed"] | None = COMPUTED
    if QUIET in asked:
        usage = None
    elif uses is not None:
        usage = Usage(int(uses[1]), int(uses[2]), int(uses[3] or 0))
    if TOOL in asked and not after_tool:
        listing = ToolCall(name="list_files", id=f"call-{turn}")
        return TurnReply(turn=turn, model=model, tool_calls=(listing,), usage=usage)
    return TurnReply(turn=turn, model=model, text=f"answer turn-{turn}.", usage=usage)


def checked_calls(model: TurnModel) -> list[ModelCall]:
    """The calls the model answered, checked against what the fake itself says it reported."""
    calls = model.calls()
    assert [call.usage for call in calls] == model.reported_usage()
    return calls


Group = Callable[[Planned, str], str]
GROUPS: Final[dict[UsageDimension, Group]] = {
    "user": lambda turn, _model: f"{turn.channel}:{turn.user_id}",
    "chat": lambda turn, _model: f"{turn.channel}:{turn.chat_id}",
    "channel": lambda turn, _model: turn.channel,
    "model": lambda _turn, model: model,
}


@dataclass
class _Sum:
    turns: int = 0
    calls: int = 0
    unreported: int = 0
    input: int = 0
    output: int = 0
    cached: int = 0
    nanos: int = 0

    def add(self, call: ModelCall, *, counts_turn: bool) -> None:
        self.turns += counts_turn
        self.calls += 1
        if call.usage is None:
            self.unreported += 1
            return
        self.input += call.usage.prompt
        self.output += call.usage.completion
        self.cached += call.usage.cached
        per_input, per_output = NANOS_PER_TOKEN[call.model]
        self.nanos += call.usage.prompt * per_input + call.usage.completion * per_output

    def total(self, group: str) -> UsageTotal:
        return UsageTotal(
            group=group, turns=self.turns, calls=self.calls, unreported_calls=self.unreported,
            input_tokens=self.input, output_tokens=self.output, cached_tokens=self.cached,
            cost=self.nanos / NANOS,
        )  # fmt: skip


def expected_totals(
    calls: Iterable[ModelCall],
    plan: Mapping[int, Planned],
    by: UsageDimension | None,
    *,
    run_of: Callable[[int], int] = lambda _index: 0,
) -> dict[str, UsageTotal]:
    """What ``UsageStore.totals(UsageFilter(), by)`` must say, by group, for these calls: a
    turn counts once per run that made a call (``run_of(index of the call)`` tells runs of
    one turn apart: a run cut by a crash and its re-run count two), under its first model."""
    sums: dict[str, _Sum] = {}
    counted: set[tuple[int, int]] = set()
    for index, call in enumerate(calls):
        run = (call.turn, run_of(index))
        group = "" if by is None else GROUPS[by](plan[call.turn], call.model)
        sums.setdefault(group, _Sum()).add(call, counts_turn=run not in counted)
        counted.add(run)
    return {group: total.total(group) for group, total in sums.items()}


def by_group(totals: Iterable[UsageTotal]) -> dict[str, UsageTotal]:
    return {total.group: total for total in totals}


def model_section(model: FakeOpenAIServer) -> dict[str, object]:
    """``agent.model`` pointing at the fake."""
    return {"base_url": model.base_url, "api_key": "sk-test", "name": MAIN}


class MovableClock:
    """Now as a test sets it: the daemon's usage clock (``Overrides.usage_clock``)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@asynccontextmanager
async def usage_daemon(
    settings: Settings,
    channels: Sequence[FakeChannel],
    *,
    store: Store | None = None,
    clock: MovableClock | None = None,
) -> AsyncIterator[Running]:
    """The daemon with the embedded agent (on the model ``settings`` name) and these channels;
    ``store`` replaces the one the settings name, ``clock`` is now for budgets and usage."""
    agent = EmbeddedBackend(settings, max_retries=0)
    overrides = Overrides(channels=list(channels), agent=agent, store=store, usage_clock=clock)
    async with started(Daemon(settings, DaemonOptions(overrides=overrides))) as run:
        yield run


def reply_in(channels: Iterable[FakeChannel], message_id: str) -> str | None:
    """The text that answered (or refused) message ``message_id``, on whichever channel."""
    for channel in channels:
        for sent in channel.sent:
            delivery = sent.delivery
            answers = isinstance(delivery, OutboundText) and delivery.reply_to == message_id
            if answers and not sent.is_progress:
                return sent.text
    return None


async def reply_to(channels: Sequence[FakeChannel], message_id: str, within: float = 20) -> str:
    """Wait for ``reply_in``: a replica answers on its own channel, whichever got the message."""
    await eventually(lambda: reply_in(channels, message_id) is not None, within)
    text = reply_in(channels, message_id)
    assert text is not None
    return text


@asynccontextmanager
async def replicas(
    tmp_path: Path,
    schema: tuple[str, str],
    model: TurnModel,
    *,
    usage: Mapping[str, Any] | None = None,
    clock: MovableClock | None = None,
) -> AsyncIterator[tuple[list[Running], list[FakeChannel]]]:
    """Two daemons on one PostgreSQL schema, each with its own channel ``fake``: a message may
    reach either, and the replica holding its chat runs the turn and answers on its own.
    ``usage`` adds to ``PRICES``; ``clock`` is both replicas' usage clock."""
    url, name = schema
    runs: list[Running] = []
    channels: list[FakeChannel] = []
    async with AsyncExitStack() as stack:
        for label in ("a", "b"):
            settings = make_settings(
                tmp_path / label,
                store={"url": url, "schema": name},
                agent={"model": model_section(model)},
                usage={"prices": PRICES, **(usage or {})},
            )
            channels.append(FakeChannel(caps=PLAIN_CAPS))
            store = PostgresStore.from_url(url, schema=name)
            daemon = usage_daemon(settings, channels[-1:], store=store, clock=clock)
            runs.append(await stack.enter_async_context(daemon))
        yield runs, channels
