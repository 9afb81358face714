"""Throughput and latency of Switchboard's Telegram path against a raw PTB echo bot (design §16).

Both bots run in this process, one after the other, against the same ``FakeTelegram`` under
the same closed-loop load: N chats, each sending its next message as soon as the answer to the
previous one arrived, M messages per chat. The fake and the load driver live in a child
process, as Telegram is remote in production: a fake on a thread of the bot's own process
would compete with the bot for the GIL and charge its cost to whichever bot has more threads.
Latency is measured from the moment an update is available on the fake (pushed) to the moment
the fake recorded the ``sendMessage`` that answers it (both on the system's monotonic clock,
which the two processes share).

- raw: the minimal python-telegram-bot echo bot (Application + Updater + MessageHandler).
- switchboard: the whole daemon — the Telegram adapter, journal and dedupe in SQLite on disk,
  router, lanes, outbox in SQLite — with an agent that answers instantly.

``--pacing off`` (default) removes the adapter's per-chat/global send pacing, which exists for
Telegram's flood limits and would otherwise dominate (1 msg/s per chat by design); the fake
has no flood limits, so this measures the stack's own cost. ``--pacing telegram`` keeps it.

Both bots run ``--rounds`` times, alternating, each Switchboard round on a fresh state
directory; the figures are the medians over rounds (this machine's speed drifts between runs),
and the ratio of each round is listed too.

With two CPUs or more, the bot under test is pinned to one CPU and the fake with its load to
another (``--no-pin`` turns that off), the usual way to keep a load generator from stealing
the measured process's CPU. It matters for Switchboard more than for the raw bot: unpinned,
the daemon's event loop and aiosqlite's worker thread hand the GIL to each other across CPUs
for every store statement, which costs more than the statement; both bots get the same one
CPU. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from telegram import Update  # noqa: E402
from telegram.ext import ApplicationBuilder, ContextTypes, MessageHandler, filters  # noqa: E402

from bench.daemon_setup import settings_data, telegram_channel  # noqa: E402
from bench.telegram_load import Measured, Platform  # noqa: E402
from bot.app import Daemon, DaemonOptions, Overrides  # noqa: E402
from bot.config.settings import Settings  # noqa: E402
from bot.ports import AgentEvent, FinalAnswer, Turn  # noqa: E402

RAW_CHATS_FROM = 1
OURS_CHATS_FROM = 500_001


async def measure(platform: Platform, chats: list[int], messages: int) -> Measured:
    await asyncio.to_thread(platform.drive, chats, 1, "w")  # warm-up: connections, threads
    return await asyncio.to_thread(platform.drive, chats, messages, "m")


# --------------------------------------------------------------------------- raw PTB bot


async def _echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    message = update.effective_message
    if message is not None and message.text is not None:
        await context.bot.send_message(chat_id=message.chat_id, text=message.text)


async def run_raw(platform: Platform, chats: list[int], messages: int) -> Measured:
    api = platform.api
    app = (
        ApplicationBuilder()
        .token(api.token)
        .base_url(api.base_url)
        .base_file_url(api.base_file_url)
        .build()
    )
    app.add_handler(MessageHandler(filters.TEXT, _echo))
    await app.initialize()
    await app.start()
    assert app.updater is not None
    await app.updater.start_polling(poll_interval=0.0, timeout=10)
    try:
        return await measure(platform, chats, messages)
    finally:
        await app.updater.stop()
        await app.stop()
        await app.shutdown()


# --------------------------------------------------------------------------- Switchboard


class InstantAgent:
    """Answers ``echo: <text>`` at once, as one final (no streaming, no model)."""

    description = "instant echo (benchmark)"

    async def start(self) -> None:
        """Nothing to open."""

    async def aclose(self) -> None:
        """Nothing to close."""

    async def create_thread(self) -> str:
        return f"b{time.monotonic_ns()}"

    async def cancel(self, thread_id: str) -> None:
        """Runs end at once."""

    async def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]:  # noqa: ARG002
        yield FinalAnswer(text=f"echo: {turn.text}")


async def run_switchboard(
    platform: Platform, chats: list[int], messages: int, state_dir: Path, *, pacing: bool
) -> Measured:
    settings = Settings.model_validate(settings_data(platform.api, state_dir))
    channel = telegram_channel(settings, pacing=pacing)
    daemon = Daemon(settings, DaemonOptions(overrides=Overrides(
        channels=[channel], agent=InstantAgent())))  # fmt: skip
    task = asyncio.create_task(daemon.run(), name="bench-daemon")
    await daemon.ready.wait()
    try:
        return await measure(platform, chats, messages)
    finally:
        daemon.request_stop()
        await task


# --------------------------------------------------------------------------- main


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _cpus(*, pin: bool) -> tuple[int, int] | None:
    """(bot CPU, platform CPU), or ``None`` when not pinning."""
    if not pin or not hasattr(os, "sched_setaffinity"):
        return None
    available = sorted(os.sched_getaffinity(0))
    return (available[0], available[1]) if len(available) >= 2 else None


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {name: round(statistics.median(run[name] for run in runs), 2) for name in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--messages", type=int, default=25, help="per chat")
    parser.add_argument("--pacing", choices=("off", "telegram"), default="off")
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating runs of each bot; medians reported"
    )
    parser.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="bot and fake on separate CPUs (default: yes, given two CPUs)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    pacing = args.pacing == "telegram"
    cpus = _cpus(pin=args.pin)
    if cpus is not None:
        os.sched_setaffinity(0, {cpus[0]})
    raw_runs: list[dict[str, float]] = []
    ours_runs: list[dict[str, float]] = []
    platform_cpu = None if cpus is None else cpus[1]
    with Platform(cpu=platform_cpu) as platform, tempfile.TemporaryDirectory() as state:
        baseline = after_raw = _peak_rss_mb()
        for index in range(args.rounds):
            first = index * args.chats
            raw_chats = list(range(RAW_CHATS_FROM + first, RAW_CHATS_FROM + first + args.chats))
            raw = asyncio.run(run_raw(platform, raw_chats, args.messages))
            raw_runs.append(raw.summary())
            after_raw = after_raw if index else _peak_rss_mb()
            ours_chats = list(range(OURS_CHATS_FROM + first, OURS_CHATS_FROM + first + args.chats))
            state_dir = Path(state) / f"round-{index}"
            ours = asyncio.run(
                run_switchboard(platform, ours_chats, args.messages, state_dir, pacing=pacing)
            )
            ours_runs.append(ours.summary())
        after_ours = _peak_rss_mb()
    raw_s, ours_s = _median(raw_runs), _median(ours_runs)
    per_round = [
        round(o["messages_per_s"] / r["messages_per_s"], 3)
        for r, o in zip(raw_runs, ours_runs, strict=True)
    ]
    result = {
        "bench": "telegram_throughput", "chats": args.chats, "messages_per_chat": args.messages,
        "pacing": args.pacing, "durability": "sqlite", "rounds": args.rounds,
        "cpus": None if cpus is None else {"bot": cpus[0], "platform": cpus[1]},
        "raw_ptb_echo": raw_s, "switchboard": ours_s,
        "throughput_ratio": round(ours_s["messages_per_s"] / raw_s["messages_per_s"], 3),
        "throughput_ratio_per_round": per_round,
        "added_p50_ms": round(ours_s["p50_ms"] - raw_s["p50_ms"], 2),
        "added_p99_ms": round(ours_s["p99_ms"] - raw_s["p99_ms"], 2),
        "peak_rss_mb": {"before": baseline, "after_raw": after_raw, "after_switchboard":
                        after_ours},
    }  # fmt: skip
    print(json.dumps(result))


if __name__ == "__main__":
    main()
