"""What the usage and budget acceptance tests share: a fake model that knows which turn each
call belongs to, the turns a test sends, and the totals the store must hold for them.

The model answers by what the request's last user message asks (``turn-N`` names the turn,
``[tool]`` makes its first call a tool call, ``[quiet]`` leaves the usage unreported, ``[mini]``
names another model), never by the order requests arrive in, so concurrent chats get the
same answers whatever the interleaving. Every call it answers is logged with its turn, the
model it named and the usage it reported: the same usage, in the same order, as the fake's
own ``reported_usage()``, which the tests check.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from typing_extensions import override

from bot.ports.usage import UsageDimension, UsageTotal
from store.usage import NANOS
from tests.fakes.common import waiting
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
    """The fake model server answering each turn as its message asks (see the module doc);
    ``hang_once`` names turns whose next call (the first, or the one after a tool call when
    the turn asks for one) never answers, once."""

    def __init__(self) -> None:
        super().__init__(model=MAIN)
        self._calls: list[ModelCall] = []
        self._hanging: list[int] = []
        self.hang_once: set[tuple[int, str]] = set()
        """``(turn, "first" | "after_tool")``: that call of the turn hangs, the first time."""

    def calls(self) -> list[ModelCall]:
        with self._lock:
            return list(self._calls)

    def hanging(self) -> list[int]:
        """Turns with a call held open now (``hang_once``), in the order they arrived."""
        with self._lock:
            return list(self._hanging)

    def wait_hanging(self, count: int, timeout: float) -> list[int]:
        """Block until ``count`` calls hang (call via ``asyncio.to_thread``)."""
        with self._lock:
            if not waiting.wait_until(self._lock, lambda: len(self._hanging) >= count, timeout):
                raise TimeoutError(f"expected {count} hanging calls, got {self._hanging}")
            return list(self._hanging)

    @override
    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        with self._lock:
            self._received.append(
                ReceivedRequest(path=request.path, body=body, authorization=None)
            )
            step = self._decide(body)
            self._lock.notify_all()
        return await self._perform(request, body, step)

    def _decide(self, body: dict[str, Any]) -> TurnReply | Hang:
        """Under the lock."""
        messages: list[dict[str, Any]] = body["messages"]
        asked = next(str(m.get("content")) for m in reversed(messages) if m["role"] == "user")
        found = _TURN.search(asked)
        assert found is not None, f"a request names no turn: {asked!r}"
        turn = int(found[1])
        after_tool = messages[-1]["role"] == "tool"
        call = "after_tool" if after_tool else "first"
        if (turn, call) in self.hang_once:
            self.hang_once.discard((turn, call))
            self._hanging.append(turn)
            return Hang()
        model = MINI if MINI_TAG in asked and not after_tool else MAIN
        usage = None if QUIET in asked else COMPUTED
        if TOOL in asked and not after_tool:
            listing = ToolCall(name="list_files", id=f"call-{turn}")
            return TurnReply(turn=turn, model=model, tool_calls=(listing,), usage=usage)
        return TurnReply(turn=turn, model=model, text=f"answer turn-{turn}.", usage=usage)

    @override
    def _chunks(self, reply: Reply, usage: Usage | None) -> list[dict[str, Any]]:
        chunks = super()._chunks(reply, usage)
        if not isinstance(reply, TurnReply):
            return chunks
        with self._lock:  # right after ``_report``, on the server's one loop: same order
            self._calls.append(ModelCall(turn=reply.turn, model=reply.model, usage=usage))
        return [{**chunk, "model": reply.model} for chunk in chunks]


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

