"""The command registry: small async handlers that answer without running the agent (design §9)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from bot.config.settings import Settings
from bot.hub import ChannelHub
from bot.messages import ConversationKey, InboundMessage
from bot.pipeline.access import Role
from bot.pipeline.bus import InboundBus
from bot.pipeline.lanes import Lanes
from bot.pipeline.sessions import Sessions
from bot.ports import MenuCommand, Store


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandEnv:
    """What command handlers may use; built once by the composition root."""

    settings: Callable[[], Settings]
    store: Store
    hub: ChannelHub
    lanes: Lanes
    sessions: Sessions
    bus: InboundBus
    agent_description: str
    stop_conversation: Callable[[ConversationKey], Awaitable[tuple[bool, int]]]
    reload: Callable[[str], Awaitable[str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandCall:
    message: InboundMessage
    key: ConversationKey
    args: tuple[str, ...]
    raw_args: str
    role: Role
    env: CommandEnv
    stopped: tuple[bool, int] = (False, 0)
    """For a command that ``stops_conversation``: (a reply was running, messages dropped)."""

    @property
    def actor(self) -> str:
        return self.message.user_ref


Handler = Callable[[CommandCall], Awaitable[str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    name: str
    usage: str
    summary: str
    handler: Handler
    admin: bool = False
    slow: bool = False
    """Touches the agent or the network: runs on the conversation's lane with a deadline,
    never on the router task, so one slow agent server cannot stall every chat."""
    stops_conversation: bool = False
    """Stops the conversation's running reply and queued messages first, on the router, before
    the command itself waits its turn in the lane (``/new``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Subcommand:
    """``/<parent> <name> …``: a room's part of a command registered elsewhere (``/admin
    usage``), so the room need not edit the parent; it is for whom the parent is."""

    parent: str
    name: str
    usage: str
    summary: str
    handler: Handler


class CommandRegistry:
    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}
        self._subcommands: dict[tuple[str, str], Subcommand] = {}

    def add(self, command: Command) -> None:
        self._commands[command.name] = command

    def add_subcommand(self, subcommand: Subcommand) -> None:
        """May come before its parent: rooms register before the admin commands."""
        self._subcommands[subcommand.parent, subcommand.name] = subcommand

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def command(self, name: str) -> Command:
        """A registered command (the router only dispatches parsed, registered names)."""
        return self._commands[name]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._commands)

    def visible_to(self, role: Role) -> list[Command]:
        return [c for c in self._commands.values() if role is Role.ADMIN or not c.admin]

    def listing(self, role: Role) -> list[tuple[str, str]]:
        """``(usage, summary)`` of what ``role`` may run, each command's subcommands after it
        (what ``/help`` lists)."""
        lines = []
        for command in self.visible_to(role):
            lines.append((command.usage, command.summary))
            lines += [
                (sub.usage, sub.summary)
                for (parent, _), sub in self._subcommands.items()
                if parent == command.name
            ]
        return lines

    def menu(self) -> tuple[MenuCommand, ...]:
        """What a platform's command menu lists: every user's commands, admin ones hidden."""
        return tuple(
            MenuCommand(name=c.name, summary=c.summary) for c in self.visible_to(Role.USER)
        )

    async def dispatch(self, name: str, call: CommandCall) -> str:
        command = self._commands[name]
        if command.admin and call.role is not Role.ADMIN:
            return f"`/{name}` is for admins only."
        subcommand = self._subcommands.get((name, call.args[0])) if call.args else None
        if subcommand is not None:
            rest = call.raw_args.strip().split(maxsplit=1)[1:]
            reply = await subcommand.handler(
                replace(call, args=call.args[1:], raw_args=rest[0] if rest else "")
            )
        else:
            reply = await command.handler(call)
        if command.admin:
            await call.env.store.audit.record(call.actor, f"/{name}", call.raw_args)
        return reply
