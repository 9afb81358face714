"""The daemon the benchmarks run: settings and the Telegram channel pointed at the fake."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.telegram_load import Endpoints
from bot.config.settings import Settings
from bot.ops.routes import RouteTable
from bot.ports import ChannelContext
from channels.telegram import TELEGRAM_CAPABILITIES, TelegramChannel


def settings_data(api: Endpoints, state_dir: Path) -> dict[str, Any]:
    """Open DMs, no HTTP server, Telegram against the fake (as a config file would say); the
    embedded agent against the fake model when the platform serves one."""
    data: dict[str, Any] = {
        "config_version": 1, "state_dir": str(state_dir), "http": {"enabled": False},
        "access": {"dm_policy": "open"},
        "channels": {"telegram": {"enabled": True, "token": api.token,
                                  "api_base_url": api.api_origin}},
    }  # fmt: skip
    if api.model_url:
        data["agent"] = {"backend": "embedded", "model": {
            "base_url": api.model_url, "api_key": "bench", "name": "bench-model"}}  # fmt: skip
    return data


class _Quiet:
    """Channel health nobody watches here."""

    def connected(self) -> None: ...
    def disconnected(self, reason: str) -> None: ...
    def auth_failed(self, reason: str) -> None: ...
    def activity(self) -> None: ...
    def failed(self, reason: str) -> None: ...


def telegram_channel(settings: Settings, *, pacing: bool) -> TelegramChannel:
    """The adapter; without ``pacing`` it skips Telegram's per-chat and global send limits."""
    caps = TELEGRAM_CAPABILITIES
    if not pacing:
        caps = replace(caps, per_chat_interval_s=0.0, per_dm_interval_s=0.0, global_rate_per_s=0.0)
    context = ChannelContext(routes=RouteTable(), state_dir=settings.state_dir, health=_Quiet())
    return TelegramChannel(settings, context, capabilities=caps)
