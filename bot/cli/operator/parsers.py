"""``status``, ``conversations``, ``trace``, ``users``, ``audit``, ``outbox`` and ``pairing``:
the operator's view of the store (design §13), safe while the daemon runs (see ``runner``).

Every subcommand takes ``-c/--config`` (for ``state_dir`` and ``http``) and ``--json``. Exit
status 0 means yes / done, 1 means no: not ready, nothing found, nothing to open. This module
only declares the parsers; the handlers live in ``views`` and ``actions``.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from importlib import import_module
from typing import cast

from bot.cli.operator.runner import add_leaf, positive
from bot.cli.options import Subcommands

VIEWS = "bot.cli.operator.views"
SEND = "bot.cli.operator.send"
STORAGE = "bot.cli.operator.storage"
ACTIONS = "bot.cli.operator.actions"
SCHEDULE = "bot.cli.operator.schedule"
RUN_TEXT = ""
"""``send TEXT --run-agent``, the earlier form: the prompt is TEXT."""
STATES = ("pending", "sent", "dead")
"""``bot.records.OutboxState`` values, spelled out so building the parser imports nothing."""


def add_commands(commands: Subcommands) -> None:
    add_leaf(commands, "status", "is the daemon ready, and what the store holds", f"{VIEWS}:status")
    conversations = add_leaf(
        commands, "conversations", "list active conversations", f"{VIEWS}:conversations"
    )
    conversations.add_argument("--channel", help="only this channel")
    conversations.add_argument("--limit", type=positive, default=50, help="at most N (50)")
    conversations.add_argument(
        "--messages",
        action="store_true",
        help="the newest journaled messages instead: their message id and ref, to trace",
    )
    trace = add_leaf(
        commands, "trace", "the whole path of a message, turn or push", f"{VIEWS}:trace"
    )
    trace.add_argument(
        "message_id",
        metavar="ID",
        help="a message id, the ref of an error reply, a push's delivery id, schedule-ID or an"
        " approval's ID",
    )
    trace.add_argument("--channel", help="only this channel")
    users = add_leaf(commands, "users", "users allowed or denied access", f"{VIEWS}:users")
    users.add_argument("--channel", help="only this channel")
    audit = add_leaf(commands, "audit", "the latest admin actions", f"{VIEWS}:audit")
    audit.add_argument("--limit", type=positive, default=50, help="at most N (50)")
    _add_send(commands)
    _add_schedule(commands)
    _add_outbox(commands)
    _add_pairing(commands)
    _add_store(commands)


def _add_send(commands: Subcommands) -> None:
    send = add_leaf(
        commands, "send", "push a message, a file or an agent prompt into a chat", f"{SEND}:send"
    )
    send.add_argument("text", metavar="TEXT", nargs="?", help="Markdown text to post")
    send.add_argument("--channel", required=True, help="a configured channel")
    send.add_argument("--chat", required=True, help="the platform's chat id")
    send.add_argument("--topic", help="the conversation's topic or thread (as trace shows it)")
    send.add_argument("--account", help="the chat's account (default: as last journaled)")
    send.add_argument("--user", help="the member's conversation, in a user-scoped group")
    send.add_argument(
        "--chat-type", choices=("dm", "group"), help="needed for a chat nothing came from yet"
    )
    send.add_argument("--file", metavar="PATH", help="send this file instead of TEXT")
    send.add_argument("--name", help="the file's name in the chat (default: its own)")
    send.add_argument("--caption", default="", help="a caption for --file")
    send.add_argument(
        "--run-agent",
        metavar="PROMPT",
        nargs="?",
        const=RUN_TEXT,
        help="run this prompt in the conversation, post the answer (TEXT --run-agent, the "
        "earlier form, still works)",
    )
    send.add_argument("--idempotency-key", metavar="KEY", help="the same key sends once, ever")
    delivery = add_leaf(commands, "delivery", "where a pushed delivery stands", f"{SEND}:delivery")
    delivery.add_argument("delivery_id", metavar="DELIVERY_ID", help="what `send` printed")


def _add_schedule(commands: Subcommands) -> None:
    schedule = commands.add_parser("schedule", help="list, add or cancel schedules")
    actions = schedule.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = add_leaf(actions, "list", "active schedules", f"{SCHEDULE}:schedule_list")
    listing.add_argument("--all", action="store_true", help="done and cancelled ones too")
    listing.add_argument("--channel", help="only this channel")
    listing.add_argument("--chat", help="only this chat id")
    add = add_leaf(
        actions, "add", "schedule a message or an agent prompt", f"{SCHEDULE}:schedule_add"
    )
    add.add_argument("--channel", required=True, help="a configured channel")
    add.add_argument("--chat", required=True, help="the platform's chat id")
    add.add_argument("--topic", help="the conversation's topic or thread")
    add.add_argument("--account", help="the chat's account (default: as last journaled)")
    add.add_argument("--user", help="the member's conversation, in a user-scoped group")
    add.add_argument("--chat-type", choices=("dm", "group"), help="for a chat nothing came from")
    when = add.add_mutually_exclusive_group(required=True)
    when.add_argument("--at", metavar="ISO", help="once, at this time (local to --tz)")
    when.add_argument("--cron", metavar="EXPR", help="on this cron expression (in --tz)")
    add.add_argument("--tz", metavar="ZONE", help="IANA zone (default: schedules.default_timezone)")
    add.add_argument("--text", metavar="T", help="post this Markdown text")
    add.add_argument("--run-agent", metavar="PROMPT", help="run this prompt, post the answer")
    add.add_argument(
        "--misfire-grace", metavar="S", type=int, help="seconds late it may still fire"
    )
    cancel = add_leaf(actions, "cancel", "cancel a schedule", f"{SCHEDULE}:schedule_cancel")
    cancel.add_argument("schedule_id", metavar="ID", type=int)


def _add_outbox(commands: Subcommands) -> None:
    outbox = commands.add_parser("outbox", help="list, retry or purge outbox deliveries")
    actions = outbox.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = add_leaf(actions, "list", "outbox rows, newest first", f"{ACTIONS}:outbox_list")
    listing.add_argument("--state", choices=STATES, help="only rows in this state")
    listing.add_argument("--limit", type=positive, default=50, help="at most N (50)")
    retry = add_leaf(
        actions, "retry", "send dead rows again (all when no ids)", f"{ACTIONS}:outbox_retry"
    )
    retry.add_argument("row_ids", metavar="ROW_ID", type=int, nargs="*", help="dead rows")
    purge = add_leaf(actions, "purge", "delete sent or dead rows", f"{ACTIONS}:outbox_purge")
    purge.add_argument("--state", choices=STATES, required=True, help="sent or dead")


def _add_pairing(commands: Subcommands) -> None:
    pairing = commands.add_parser("pairing", help="list, approve or deny access requests")
    actions = pairing.add_subparsers(dest="action", required=True, metavar="ACTION")
    add_leaf(actions, "list", "pending access requests", f"{ACTIONS}:pairing_list")
    approve = add_leaf(
        actions, "approve", "let the requesting user talk to the bot", f"{ACTIONS}:pairing_approve"
    )
    approve.add_argument("code", metavar="CODE")
    deny = add_leaf(actions, "deny", "drop an access request", f"{ACTIONS}:pairing_deny")
    deny.add_argument("code", metavar="CODE")


def _add_store(commands: Subcommands) -> None:
    store = commands.add_parser("store", help="migrate the store's schema, or copy it")
    actions = store.add_subparsers(dest="action", required=True, metavar="ACTION")
    add_leaf(actions, "migrate", "apply the store's pending migrations", f"{STORAGE}:store_migrate")
    copy = add_leaf(
        actions,
        "copy",
        "copy a SQLite store (and its agent checkpoints) into an empty PostgreSQL one",
        f"{STORAGE}:store_copy_main",
    )
    copy.add_argument(
        "--from",
        dest="source",
        metavar="URL",
        help="sqlite:///PATH, a file or a state_dir (default with -c: the config's SQLite state)",
    )
    copy.add_argument(
        "--to",
        dest="target",
        metavar="URL",
        help="postgresql://USER:PASSWORD@HOST:PORT/DATABASE (default with -c: store.url)",
    )
    copy.add_argument(
        "--schema", help="the target's schema (default: store.schema with -c, else switchboard)"
    )
    # Without -c, --from and --to say everything: no config file is needed.
    copy.set_defaults(handler=functools.partial(run_without_config, f"{STORAGE}:store_copy_main"))


def run_without_config(handler_path: str, args: argparse.Namespace) -> int:
    """Run ``handler_path`` (``"module:function"`` taking the parsed arguments), imported only
    now; it reads a config file itself when it needs one."""
    module_name, _, name = handler_path.partition(":")
    handler = cast(Callable[[argparse.Namespace], int], getattr(import_module(module_name), name))
    return handler(args)
