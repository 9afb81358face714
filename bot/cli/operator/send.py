"""``switchboard send`` and ``switchboard delivery``: the push API from the command line
(design §19), safe while the daemon runs and across replicas.

``send`` only records into the store (outbox rows, or a journal entry for ``--run-agent``)
and wakes the replicas of a shared store: the running daemon's outbox sends the rows (a
daemon alone on SQLite looks at least every ``IDLE_POLL_S`` seconds, its ``pushes`` loop
takes prompts within a second), and a daemon that is down sends them at its next start. A
``--file`` is read here and kept under ``<workspace_dir>/pushes/``, where the daemon (a
hardened unit with a private /tmp, a replica elsewhere on shared storage) can read it: the
file is read with the operator's permissions, in this process, and must be a regular file no
larger than the channel takes (a FIFO or a device is refused, never waited on or read whole).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from bot.cli.operator.output import print_json, say, show
from bot.cli.operator.parsers import RUN_TEXT
from bot.cli.operator.runner import EXIT_FAILED, opened_store, operator_actor
from bot.cli.options import CommandFailed
from bot.config.settings import Settings
from bot.delivery.files import FileRefused, read_regular
from bot.delivery.outbox import IDLE_POLL_S
from bot.errors import ConfigError
from bot.exit_codes import EXIT_CONFIG, EXIT_OK
from bot.messages import ChatType
from bot.operator.labels import describe_delivery, table, when
from bot.ports import Store
from bot.ports.push import (
    PushBody,
    PushFile,
    PushKind,
    PushRefused,
    PushRequest,
    PushTarget,
    PushText,
    RunAgent,
)
from bot.push.api import receipt_json, report_json
from bot.push.assembly import cli_pusher
from bot.push.body import checked_key
from bot.push.spool import safe_name
from bot.push.status import DeliveryReport, delivery_report
from bot.registry import capabilities_of
from bot.text.escape import escape_controls

SEND_LIMIT_BYTES = 1024 * 1024 * 1024
"""The most ``--file`` reads for a channel whose limit is not known here."""


async def send(args: argparse.Namespace, settings: Settings) -> int:
    request = PushRequest(
        target=PushTarget(
            channel=args.channel,
            chat_id=args.chat,
            account_id=args.account,
            topic_id=args.topic,
            user_id=args.user,
            chat_type=None if args.chat_type is None else ChatType(args.chat_type),
        ),
        body=await _body(args),
        idempotency_key=_key(args.idempotency_key),
        actor=operator_actor(),
    )
    async with opened_store(settings) as store:
        try:
            receipt = await cli_pusher(settings, store).push(request)
        except PushRefused as exc:
            raise CommandFailed(f"{exc.field}: {exc.message}", EXIT_FAILED) from None
        except ConfigError as exc:
            raise CommandFailed(str(exc), EXIT_CONFIG) from None
    if args.json:
        print_json(receipt_json(receipt))
        return EXIT_OK
    say(receipt.delivery_id)
    if receipt.repeated:
        print(f"already recorded ({receipt.status}): nothing added")
    elif receipt.kind is PushKind.RUN_AGENT:
        print("recorded; the daemon runs the prompt (see `switchboard delivery ID`)")
    else:
        print(f"recorded; the daemon sends it within {IDLE_POLL_S:g} s (or at its next start)")
    return EXIT_OK


async def _body(args: argparse.Namespace) -> PushBody:
    text: str | None = args.text
    prompt: str | None = args.run_agent
    if prompt is not None:
        return _prompt(prompt, text, args.file)
    if (text is None) == (args.file is None):
        raise CommandFailed(
            "give either a TEXT argument, --file PATH or --run-agent PROMPT", EXIT_FAILED
        )
    if text is not None:
        if not text.strip():
            raise CommandFailed("TEXT is empty", EXIT_FAILED)
        return PushText(text=text)
    path = Path(args.file)
    caps = capabilities_of(args.channel)
    limit = SEND_LIMIT_BYTES if caps is None else caps.max_file_bytes
    try:
        content = await asyncio.to_thread(read_regular, path, limit)
    except FileRefused as exc:
        raise CommandFailed(f"--file: {path} {exc.reason}", EXIT_FAILED) from None
    return PushFile(name=safe_name(args.name or path.name), content=content, caption=args.caption)


def _prompt(prompt: str, text: str | None, file: str | None) -> RunAgent:
    """``--run-agent PROMPT``; a bare ``--run-agent`` (the earlier form) takes TEXT."""
    if prompt == RUN_TEXT:
        prompt, text = text or "", None
    if text is not None or file is not None:
        raise CommandFailed(
            "--run-agent PROMPT takes the prompt as its value: give no TEXT or --file with it",
            EXIT_FAILED,
        )
    if not prompt.strip():
        raise CommandFailed("--run-agent needs a prompt: --run-agent PROMPT", EXIT_FAILED)
    return RunAgent(prompt=prompt)


def _key(value: str | None) -> str | None:
    try:
        return checked_key(value)
    except ValueError as exc:
        raise CommandFailed(f"--idempotency-key {exc}", EXIT_FAILED) from None


async def delivery(args: argparse.Namespace, settings: Settings) -> int:
    async with opened_store(settings) as store:
        report = await delivery_report(store, args.delivery_id)
        calls = await _calls(store, report)
    if report is None:
        raise CommandFailed(f"no delivery {args.delivery_id}", EXIT_FAILED)
    if args.json:
        print_json(report_json(report))
    else:
        show(delivery_text(report, calls))
    return EXIT_OK


async def _calls(store: Store, report: DeliveryReport | None) -> dict[int, int]:
    """How many platform calls each row of the delivery took."""
    if report is None:
        return {}
    return {row.id: len(await store.outbox.attempts(row.id)) for row in report.rows}


def delivery_text(report: DeliveryReport, calls: dict[int, int]) -> str:
    where = f"{report.channel} chat {report.chat_id}"
    if report.topic_id is not None:
        where += f" topic {report.topic_id}"
    lines = [
        f"delivery {report.delivery_id} ({report.kind}) to {where}",
        f"  status       {report.status}" + (f": {report.error}" if report.error else ""),
        f"  recorded     {when(report.created_at)}",
    ]
    if report.run is not None:
        reason = f" ({report.run.reason})" if report.run.reason else ""
        lines.append(f"  agent run    {report.run.status}{reason}")
    if not report.rows:
        lines.append("  messages     none yet")
        return "\n".join(map(escape_controls, lines))
    cells = [
        [
            str(row.id),
            describe_delivery(row.item.delivery),
            str(row.state),
            str(calls.get(row.id, 0)),
            " ".join(row.sent_message_ids) or "-",
        ]
        for row in report.rows
    ]
    headers = ("ROW", "WHAT", "STATE", "CALLS", "MESSAGE IDS")
    lines = [*map(escape_controls, lines), table(headers, cells, indent="  ")]
    return "\n".join(lines)
