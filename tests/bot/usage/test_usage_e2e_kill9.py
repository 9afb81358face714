"""Usage across a kill -9 (design §25, §11): ``switchboard run`` on SQLite, killed while two turns
wait on the model, restarted; recovery runs those turns again, and the totals are still
exactly what the provider reported.

What "exactly" means here: the store's totals equal the sums of every usage the fake model
reported, in both processes' lifetimes. The fake reports a call's usage only once it answers
it, so a call the kill cut short (held open, never answered) reported nothing and counts
nothing; a call answered before the kill really happened and counts, though its turn never
ended (the tool turn's first call); and each call of a re-run counts again, since the
provider served it again. A turn counts once per run that made a call: the tool turn counts
twice (its cut run and its re-run), the turn cut in its first call once.

The kill comes once the store holds every call answered so far, which the daemon makes sure
of before a run goes on past a call. Only a kill in the moment between the provider's answer
and that record loses the call, a window no process can close; the test does not aim at it.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.ports.usage import UsageDimension, UsageFilter
from store.sqlite import SqliteStore
from tests.bot.usage.e2e_support import (
    PRICES,
    QUIET,
    TOOL,
    Planned,
    TurnModel,
    by_group,
    checked_calls,
    expected_totals,
    model_section,
)
from tests.channels.cli_support import cli_env, start_run
from tests.channels.telegram_support import texts
from tests.fakes.common.waiting import eventually
from tests.fakes.telegram_api import FakeTelegram

WAIT_S = 30.0
CHATS = (101, 102, 103)
BEFORE = [
    Planned(number=n, channel="telegram", chat_id=str(chat), user_id=str(chat), tags=tags)
    for n, chat, tags in (
        (0, 101, ""), (1, 102, TOOL), (2, 103, QUIET), (3, 101, TOOL), (4, 102, ""),
    )
]  # fmt: skip
CUT_AFTER_TOOL = Planned(number=5, channel="telegram", chat_id="103", user_id="103", tags=TOOL)
CUT_FIRST = Planned(number=6, channel="telegram", chat_id="101", user_id="101")
AFTER = Planned(number=7, channel="telegram", chat_id="102", user_id="102")
PLAN = {turn.number: turn for turn in (*BEFORE, CUT_AFTER_TOOL, CUT_FIRST, AFTER)}
DIMENSIONS: tuple[UsageDimension | None, ...] = (None, "user", "chat", "model")


@pytest.fixture
def fakes() -> Iterator[tuple[TurnModel, FakeTelegram]]:
    with TurnModel() as model, FakeTelegram() as telegram:
        yield model, telegram


def write_config(tmp_path: Path, model: TurnModel, telegram: FakeTelegram) -> Path:
    config = tmp_path / "switchboard.json"
    data = {
        "config_version": 1,
        "state_dir": str(tmp_path / "state"),
        "http": {"enabled": False},
        "access": {"dm_policy": "open"},
        "agent": {"backend": "embedded", "model": model_section(model)},
        "usage": {"prices": PRICES},
        "daemon": {"shutdown_grace_s": 5},
        "channels": {
            "telegram": {
                "enabled": True,
                "token": telegram.token,
                "api_base_url": telegram.api_origin,
            }
        },
    }
    config.write_text(json.dumps(data))  # JSON is YAML
    return config


def send(telegram: FakeTelegram, turn: Planned) -> None:
    chat = int(turn.chat_id)
    telegram.push_message(turn.text, chat_id=chat, user_id=chat)


async def answered(telegram: FakeTelegram, turn: Planned) -> None:
    def shown() -> bool:
        return any(turn.answer in text for text in texts(telegram, int(turn.chat_id)))

    await eventually(shown, WAIT_S)


async def converse(telegram: FakeTelegram, turns: list[Planned]) -> None:
    for turn in turns:
        send(telegram, turn)
        await answered(telegram, turn)


async def every_answered_call_recorded(state_dir: Path, model: TurnModel) -> None:
    """Until the store holds a row for every call the model answered, read as ``switchboard
    usage`` reads it while the daemon runs: the cut tool turn's first call is among them,
    recorded before the run went on to its second, so the kill finds nothing in between."""
    async with SqliteStore.from_state_dir(state_dir) as store:

        async def recorded() -> bool:
            (total,) = await store.usage.totals(UsageFilter())
            return total.calls == len(model.calls())

        await eventually(recorded, WAIT_S)


async def first_life(config: Path, model: TurnModel, telegram: FakeTelegram, log: Path) -> int:
    """Answer ``BEFORE``, then hold both cut turns' calls open and kill -9; the number of
    calls the fake answered by then."""
    model.hang_once(CUT_AFTER_TOOL.number, "after_tool")
    model.hang_once(CUT_FIRST.number, "first")
    with log.open("w") as out:
        process = start_run(config, out, cli_env(config.parent / "state"))
        try:
            async with asyncio.TaskGroup() as chats:
                for chat in CHATS:
                    turns = [t for t in BEFORE if t.chat_id == str(chat)]
                    chats.create_task(converse(telegram, turns), name=f"chat:{chat}")
            send(telegram, CUT_AFTER_TOOL)
            send(telegram, CUT_FIRST)
            await asyncio.to_thread(model.wait_waiting, 2, WAIT_S)
            await every_answered_call_recorded(config.parent / "state", model)
        finally:
            process.send_signal(signal.SIGKILL)
            await asyncio.to_thread(process.wait, WAIT_S)
    assert process.returncode == -signal.SIGKILL, log.read_text()
    return len(model.calls())


async def second_life(config: Path, telegram: FakeTelegram, log: Path) -> None:
    """Restart: recovery answers both cut turns; one more turn; then a graceful stop."""
    with log.open("w") as out:
        process = start_run(config, out, cli_env(config.parent / "state"))
        try:
            await answered(telegram, CUT_AFTER_TOOL)
            await answered(telegram, CUT_FIRST)
            await converse(telegram, [AFTER])
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                code = await asyncio.to_thread(process.wait, WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                raise
    assert code == 0, log.read_text()


async def test_totals_after_a_kill_9_equal_every_usage_the_model_reported(
    tmp_path: Path, fakes: tuple[TurnModel, FakeTelegram]
) -> None:
    model, telegram = fakes
    config = write_config(tmp_path, model, telegram)
    answered_before_the_kill = await first_life(config, model, telegram, tmp_path / "run1.log")
    await second_life(config, telegram, tmp_path / "run2.log")
    calls = checked_calls(model)
    async with SqliteStore.from_state_dir(tmp_path / "state") as store:
        stored = {by: by_group(await store.usage.totals(UsageFilter(), by=by)) for by in DIMENSIONS}

    def run_of(index: int) -> int:
        return 0 if index < answered_before_the_kill else 1

    want = {by: expected_totals(calls, PLAN, by, run_of=run_of) for by in DIMENSIONS}
    cut = [c for c in calls[:answered_before_the_kill] if c.turn == CUT_AFTER_TOOL.number]
    assert len(cut) == 1  # the tool call, answered before the kill: its turn never ended
    assert stored == want
    (everything,) = want[None].values()
    assert everything.turns == len(PLAN) + 1  # the tool turn ran twice
