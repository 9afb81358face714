"""Throughput, latency and CPU per turn of Switchboard's Telegram path as users get it (§16).

The bots run in this process, one after the other, against the same ``FakeTelegram`` under the
same closed-loop load: N chats, each sending its next message as soon as the answer to the
previous one arrived, M messages per chat. The fake, the load driver and the fake model live in
a child process, as Telegram and the model are remote in production: a fake on a thread of the
bot's own process would compete with the bot for the GIL and charge its cost to whichever bot
has more threads. Latency is measured from the moment an update is available on the fake
(pushed) to the moment the fake recorded the ``sendMessage`` (or the ``editMessageText`` that
finishes a streamed placeholder) that answers it (both on the system's monotonic clock, which
the two processes share). CPU per turn is this process's CPU time (all threads) over the
measured load, divided by the turns; the fakes' CPU is not in it.

- raw: the minimal python-telegram-bot echo bot (Application + Updater + MessageHandler); it
  calls no model, so it is the floor of the stack, not of a model's latency.
- switchboard: the whole daemon — the Telegram adapter, journal and dedupe in SQLite on disk,
  router, lanes, outbox in SQLite — with ``--agent embedded`` (default) the real embedded
  LangGraph agent with its SQLite checkpoints, against a fake OpenAI-compatible model that
  echoes after ``--model-latency`` seconds; with ``--agent instant`` an in-process agent that
  answers at once (the stack's own cost, no agent).

``--pacing both`` (default) runs Switchboard with the shipped pacing (the adapter's Telegram
limits) and with pacing off, each round; ``shipped`` or ``off`` runs one. Ratios: to the raw bot
(throughput), and to the physical limit of a closed loop on the model (chats ÷ model latency).

Each bot runs ``--rounds`` times, alternating, each Switchboard round on a fresh state
directory; the figures are the medians over rounds (this machine's speed drifts between runs).
A lost, duplicated or reordered answer fails the run.

With two CPUs or more, the bot under test is pinned to one CPU and the fakes with the load to
another (``--no-pin`` turns that off). ``--profile PATH`` runs one more Switchboard round (the
first pacing mode) under pyinstrument and writes its profile of the daemon's event-loop thread
(``.html``, ``.pyisession`` for ``pyinstrument --load``, or text). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Iterator
from dataclasses import replace
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


async def measure(
    platform: Platform, chats: list[int], messages: int, profile: Path | None = None
) -> Measured:
    await asyncio.to_thread(platform.drive, chats, 1, "w")  # warm-up: connections, threads
    with _profiling(profile):
        cpu = time.process_time()
        measured = await asyncio.to_thread(platform.drive, chats, messages, "m")
        return replace(measured, cpu_s=time.process_time() - cpu)


@contextlib.contextmanager
def _profiling(path: Path | None) -> Iterator[None]:
    """Sample this thread (the daemon's event loop) with pyinstrument while the load runs."""
    if path is None:
        yield
        return
    from pyinstrument import Profiler  # noqa: PLC0415 - a dev extra, only for --profile

    profiler = Profiler(interval=0.0005, async_mode="disabled")
    profiler.start()
    try:
        yield
    finally:
        profiler.stop()
        if path.suffix == ".pyisession" and profiler.last_session is not None:
            profiler.last_session.save(str(path))  # for `pyinstrument --load`
        elif path.suffix == ".html":
            path.write_text(profiler.output_html())
        else:
            path.write_text(profiler.output_text())


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

    def warm(self) -> None:
        """Nothing to load."""

    async def ready(self) -> None:
        """Always ready."""

    async def create_thread(self) -> str:
        return f"b{time.monotonic_ns()}"

    async def cancel(self, thread_id: str) -> None:
        """Runs end at once."""

    async def run(self, thread_id: str, turn: Turn) -> AsyncGenerator[AgentEvent, None]:  # noqa: ARG002
        yield FinalAnswer(text=f"echo: {turn.text}")


async def run_switchboard(  # noqa: PLR0913 - the benchmark's knobs
    platform: Platform, chats: list[int], messages: int, state_dir: Path, *, pacing: bool,
    instant: bool, profile: Path | None = None,
) -> Measured:  # fmt: skip
    settings = Settings.model_validate(settings_data(platform.api, state_dir))
    channel = telegram_channel(settings, pacing=pacing)
    agent = InstantAgent() if instant else None
    daemon = Daemon(settings, DaemonOptions(overrides=Overrides(channels=[channel], agent=agent)))
    task = asyncio.create_task(daemon.run(), name="bench-daemon")
    await daemon.ready.wait()
    try:
        return await measure(platform, chats, messages, profile)
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


def _ranges(runs: list[dict[str, float]]) -> dict[str, list[float]]:
    return {name: [min(run[name] for run in runs), max(run[name] for run in runs)]
            for name in ("messages_per_s", "p50_ms", "cpu_ms_per_turn")}  # fmt: skip


PACINGS = {"both": ("shipped", "off"), "shipped": ("shipped",), "off": ("off",),
           "telegram": ("shipped",)}  # fmt: skip


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--messages", type=int, default=25, help="per chat")
    parser.add_argument("--agent", choices=("embedded", "instant"), default="embedded")
    parser.add_argument(
        "--model-latency", type=float, default=0.0, metavar="S",
        help="seconds the fake model takes per answer (embedded agent)",
    )  # fmt: skip
    parser.add_argument("--pacing", choices=tuple(PACINGS), default="both")
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating runs of each bot; medians reported"
    )
    parser.add_argument("--raw", action=argparse.BooleanOptionalAction, default=True,
                        help="also run the raw PTB echo bot (default: yes)")  # fmt: skip
    parser.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="bot and fakes on separate CPUs (default: yes, given two CPUs)",
    )
    parser.add_argument("--profile", type=Path, metavar="PATH",
                        help="write a pyinstrument profile of one more round here")  # fmt: skip
    return parser.parse_args()


def main() -> None:
    args = _arguments()
    logging.basicConfig(level=logging.ERROR)
    instant = args.agent == "instant"
    modes = PACINGS[args.pacing]
    cpus = _cpus(pin=args.pin)
    if cpus is not None:
        os.sched_setaffinity(0, {cpus[0]})
    raw_runs: list[dict[str, float]] = []
    ours_runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    platform_cpu = None if cpus is None else cpus[1]
    model = None if instant else args.model_latency
    offset = 0

    def next_chats(base: int) -> list[int]:
        nonlocal offset
        offset += args.chats
        return list(range(base + offset, base + offset + args.chats))

    with Platform(cpu=platform_cpu, model_latency_s=model) as platform, \
            tempfile.TemporaryDirectory() as state:  # fmt: skip
        baseline = _peak_rss_mb()
        for index in range(args.rounds):
            if args.raw:
                raw = asyncio.run(run_raw(platform, next_chats(RAW_CHATS_FROM), args.messages))
                raw_runs.append(raw.summary())
            for mode in modes:
                state_dir = Path(state) / f"round-{index}-{mode}"
                ours = asyncio.run(run_switchboard(
                    platform, next_chats(OURS_CHATS_FROM), args.messages, state_dir,
                    pacing=mode == "shipped", instant=instant))  # fmt: skip
                ours_runs[mode].append(ours.summary())
        if args.profile is not None:
            asyncio.run(run_switchboard(
                platform, next_chats(OURS_CHATS_FROM), args.messages, Path(state) / "profile",
                pacing=modes[0] == "shipped", instant=instant, profile=args.profile))  # fmt: skip
        peak = _peak_rss_mb()
    limit = args.chats / args.model_latency if args.model_latency > 0 and not instant else None
    raw_s = _median(raw_runs) if raw_runs else None
    report: dict[str, object] = {}
    for mode, runs in ours_runs.items():
        median = _median(runs)
        entry: dict[str, object] = {**median, "range": _ranges(runs)}
        if raw_s is not None:
            entry["ratio_to_raw"] = round(median["messages_per_s"] / raw_s["messages_per_s"], 3)
            entry["ratio_to_raw_per_round"] = [
                round(o["messages_per_s"] / r["messages_per_s"], 3)
                for r, o in zip(raw_runs, runs, strict=True)
            ]
        if limit is not None:
            entry["ratio_to_limit"] = round(median["messages_per_s"] / limit, 3)
        report[mode] = entry
    result = {
        "bench": "telegram_throughput", "chats": args.chats, "messages_per_chat": args.messages,
        "agent": args.agent, "model_latency_s": None if instant else args.model_latency,
        "durability": "sqlite", "rounds": args.rounds,
        "cpus": None if cpus is None else {"bot": cpus[0], "platform": cpus[1]},
        "limit_messages_per_s": limit, "raw_ptb_echo": raw_s, "switchboard": report,
        "peak_rss_mb": {"before": baseline, "after": peak},
        "profile": None if args.profile is None else str(args.profile),
    }  # fmt: skip
    print(json.dumps(result))


if __name__ == "__main__":
    main()
