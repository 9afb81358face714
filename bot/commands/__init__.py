"""Slash commands (design §9)."""

from bot.commands.admin import register_admin_commands
from bot.commands.mutes import register_mute_commands
from bot.commands.parsing import ParsedCommand, parse_command
from bot.commands.registry import Command, CommandCall, CommandEnv, CommandRegistry
from bot.commands.schedules import register_schedule_commands
from bot.commands.user import register_user_commands


def default_registry() -> CommandRegistry:
    registry = CommandRegistry()
    register_user_commands(registry)
    register_schedule_commands(registry)
    register_mute_commands(registry)
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
