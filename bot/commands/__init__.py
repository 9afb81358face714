"""Slash commands (design §9)."""

from collections.abc import Callable

from bot.commands.admin import register_admin_commands
from bot.commands.parsing import ParsedCommand, parse_command
from bot.commands.registry import Command, CommandCall, CommandEnv, CommandRegistry
from bot.commands.user import register_user_commands


def default_registry(*features: Callable[[CommandRegistry], None]) -> CommandRegistry:
    """The user commands, then each feature's (its room registers them, bound to what they act
    on), then the admin commands: the order ``/help`` lists them in."""
    registry = CommandRegistry()
    register_user_commands(registry)
    for register in features:
        register(registry)
    register_admin_commands(registry)
    return registry


__all__ = [
    "Command",
    "CommandCall",
    "CommandEnv",
    "CommandRegistry",
    "ParsedCommand",
    "default_registry",
    "parse_command",
]
