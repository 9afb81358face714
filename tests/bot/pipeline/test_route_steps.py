"""The router is one ordered list of steps (design §5), not an if-chain that every feature edits.

The order is part of the behaviour (a pause lets an admin's command through because the
command is parsed before it; an edit is checked for length before access), so a reorder must
show up here as a changed list.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from pathlib import Path

from bot.approvals.step import ApprovalPresses
from bot.commands.routing import AnswerCommand, ParseCommand
from bot.kernel.route import RouterDeps
from bot.pipeline import router
from bot.pipeline.addressing import Unaddressed
from bot.pipeline.answers import Answers, StaleButtons
from bot.pipeline.gates import AccessGate, IgnoredBots, PausedChannels
from bot.pipeline.inbound_bounds import RefuseOversize
from bot.pipeline.revisions import RevisionStep
from bot.pipeline.router import ConversationKeys, Reachable, Router, SubmitTurn
from bot.push.step import OperatorPushes
from bot.takeover.step import HeldByHumans
from bot.usage.step import UsageGate
from tests.bot.harness import make_settings, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel
from tests.test_layering import graph

ROUTE = [
    Reachable,
    OperatorPushes,
    IgnoredBots,
    RevisionStep,
    ParseCommand,
    PausedChannels,
    AccessGate,
    RefuseOversize,
    ApprovalPresses,
    AnswerCommand,
    Answers,
    StaleButtons,
    Unaddressed,
    ConversationKeys,
    HeldByHumans,
    UsageGate,
    SubmitTurn,
]

MAX_HANDLE_LINES = 10
MAX_ROUTER_DEPS = 8


async def test_the_daemon_routes_through_the_declared_steps_in_order(tmp_path: Path) -> None:
    async with running(make_settings(tmp_path), [FakeChannel()], FakeAgent()) as daemon:
        steps = daemon.kernel.conversations.router.steps
    assert [type(step) for step in steps] == ROUTE


def _handle() -> ast.AsyncFunctionDef:
    source = textwrap.dedent(inspect.getsource(Router.handle))
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.AsyncFunctionDef)
    return node


def test_router_handle_only_runs_the_steps() -> None:
    """No feature decides anything in ``handle``: it never looks at the message itself."""
    node = _handle()
    assert node.end_lineno is not None
    assert node.end_lineno - node.lineno + 1 <= MAX_HANDLE_LINES
    looked_at = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    assert "message" not in looked_at, looked_at


def test_the_router_needs_no_stage_waiver_and_few_parts() -> None:
    assert "PLR0911" not in Path(router.__file__).read_text(encoding="utf-8")
    assert len(dataclasses.fields(RouterDeps)) <= MAX_ROUTER_DEPS


def test_no_module_the_commands_import_holds_a_route_step() -> None:
    """``route`` imports the commands (``Routing.asked``), so a step inside a module that
    ``bot.commands`` imports (``access``, ``takeover``…) would make importing that module
    first fail on a half-made package; such steps live beside it (``gates``, ``takeover_step``)."""
    edges = graph()
    reached, todo = set[str](), ["bot.commands"]
    while todo:
        for target in edges.get(todo.pop(), frozenset()):
            if target not in reached:
                reached.add(target)
                todo.append(target)
    assert "bot.pipeline.route" not in reached
    assert "bot.pipeline.access" in reached  # the walk sees the graph
