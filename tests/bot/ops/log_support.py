"""The daemon's real log handler, writing to a file a test reads (``bot.ops.logs``)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.config.settings import Settings
from bot.ops.logs import configure_logging
from tests.bot.harness import make_settings


class DaemonLog:
    """``configure_logging`` as the daemon calls it, with stderr going to ``path``."""

    def __init__(self, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.path = path
        self._monkeypatch = monkeypatch
        self._stream = path.open("w", encoding="utf-8")

    def configure(self, settings: Settings, level: str | None = None) -> None:
        self._monkeypatch.setattr(sys, "stderr", self._stream)
        configure_logging(settings, level_override=level)

    def text(self) -> str:
        if not self._stream.closed:
            self._stream.flush()
        return self.path.read_text(encoding="utf-8")

    def lines(self) -> list[str]:
        return self.text().splitlines()

    def close(self) -> None:
        self._stream.close()


def settings_with(tmp_path: Path, **sections: Any) -> Settings:
    return make_settings(tmp_path / "state", **sections)


@contextmanager
def daemon_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonLog]:
    """The root logger's handlers and levels are put back afterwards (pytest's own included)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in ("httpx", "httpcore", "aiosqlite")}
    log = DaemonLog(tmp_path / "daemon.log", monkeypatch)
    try:
        yield log
    finally:
        _restore(root, handlers, level, levels)
        log.close()


def _restore(
    root: logging.Logger, handlers: list[logging.Handler], level: int, levels: dict[str, int]
) -> None:
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    for name, old in levels.items():
        logging.getLogger(name).setLevel(old)
