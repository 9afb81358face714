"""``switchboard check``: warn where ``group_policy: listen`` would hear nothing.

A platform that delivers the bot only what is addressed to it (DingTalk always, Feishu without
a permission) would make listen mode a silent no-op; its adapter says so in its capabilities
(``listen_caveat``). Only channels set to listen are built here (without I/O, as ``check
--online`` does), so a plain ``check`` stays free of SDK imports otherwise. Telegram's privacy
mode is known only from ``getMe``: ``check --online`` asks it (``check_online``), and the
daemon reads it at start and warns then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from bot.cli.probes import unstarted_context
from bot.config.settings import GroupPolicy, Settings
from bot.errors import BotError
from bot.pipeline.group_context import unheard_reason
from bot.ports import Channel, ChannelContext
from bot.registry import EdgeKind, load


def listening_channels(settings: Settings) -> list[str]:
    return [
        name
        for name in sorted(settings.channels.enabled())
        if settings.channel_policy(name).group_policy is GroupPolicy.LISTEN
    ]


async def listen_warnings(settings: Settings) -> list[str]:
    """One line per enabled listening channel whose platform would keep chatter from the bot."""
    warnings: list[str] = []
    context = unstarted_context(settings)
    for name in listening_channels(settings):
        build = cast(Callable[[Settings, ChannelContext], Channel], load(EdgeKind.CHANNEL, name))
        try:
            channel = build(settings, context)
        except BotError:
            continue  # the online probe reports a channel that cannot even be built
        try:
            reason = unheard_reason(settings, name, channel.capabilities)
        finally:
            await channel.aclose()
        if reason is not None:
            warnings.append(f"channels.{name}: group_policy listen: {reason}")
    return warnings
