"""Re-reading the configuration on SIGHUP or ``/reload`` (design §13).

An invalid new file is rejected with its reason and the running configuration stays.
Access lists, policies, scopes, busy policy, timeouts and the log level apply at once,
because every component reads the current settings through one getter. A changed channel
block restarts that channel only (a newly enabled one starts, a disabled one stops), and
parked channels are re-probed. Changes that need a process restart (state_dir, workspace_dir,
agent backend or model, HTTP listener, daemon limits) are reported.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Protocol

from bot.config.loader import load_settings
from bot.config.settings import Settings
from bot.errors import ConfigError
from bot.hub import ChannelHub
from bot.ops.logs import apply_settings as apply_log_settings
from bot.ops.sdnotify import SystemdNotifier, channel_summary
from bot.ports import AuditLog

logger = logging.getLogger(__name__)

RESTART_SECTIONS = ("state_dir", "workspace_dir", "store", "http", "daemon")


class Reloadable(Protocol):
    """The running daemon as the reloader sees it (``bot.app.Daemon`` is one)."""

    settings: Settings
    notifier: SystemdNotifier
    ready: asyncio.Event

    @property
    def config_path(self) -> Path | None: ...

    async def apply_channel_changes(self, old: Settings, new: Settings) -> list[str]: ...


class Reloader:
    def __init__(self, daemon: Reloadable, hub: ChannelHub, audit: AuditLog) -> None:
        self._daemon = daemon
        self._hub = hub
        self._audit = audit
        self._tasks: set[asyncio.Task[str]] = set()

    def on_sighup(self) -> None:
        task = asyncio.create_task(self.reload("signal:SIGHUP"), name="reload:sighup")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def reload(self, actor: str) -> str:
        path = self._daemon.config_path
        if path is None:
            return "Reload is not possible: this daemon was not started from a config file."
        # systemd hears RELOADING=1 … READY=1 around it (before READY=1 of the start: nothing).
        notifier = self._daemon.notifier if self._daemon.ready.is_set() else None
        if notifier is not None:
            notifier.reloading()
        try:
            return await self._reload(path, actor)
        finally:
            if notifier is not None:
                notifier.ready(f"ready: {channel_summary(self._hub)}")

    async def _reload(self, path: Path, actor: str) -> str:
        try:
            fresh = await asyncio.to_thread(load_settings, path)
        except ConfigError as exc:
            logger.error("reload rejected, keeping the running configuration: %s", exc)  # noqa: TRY400
            await self._audit.record(actor, "reload", "rejected")
            return f"Reload rejected; the running configuration stays.\n{exc}"
        old = self._daemon.settings
        notes = _restart_notes(old, fresh)
        self._daemon.settings = fresh
        apply_log_settings(fresh)
        applied = await self._daemon.apply_channel_changes(old, fresh)
        summary = "; ".join([*applied, *(f"needs restart: {note}" for note in notes)])
        await self._audit.record(actor, "reload", summary or "applied")
        logger.info("configuration reloaded by %s: %s", actor, summary or "no structural change")
        lines = ["Configuration reloaded.", *(f"Applied: {note}" for note in applied)]
        lines += [f"Needs a restart to apply: {note}" for note in notes]
        return "\n".join(lines)


def _restart_notes(old: Settings, new: Settings) -> list[str]:
    notes = [name for name in RESTART_SECTIONS if getattr(old, name) != getattr(new, name)]
    if old.agent.backend != new.agent.backend or old.agent.model != new.agent.model:
        notes.append("agent backend or model")
    if old.agent.max_concurrent_runs != new.agent.max_concurrent_runs:
        notes.append("agent.max_concurrent_runs")
    return notes
