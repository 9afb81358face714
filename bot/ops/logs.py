"""Logging setup: plain text for journald or one JSON object per line (design §13)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from typing_extensions import override

from bot.config.settings import LogSettings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    @override
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, ensure_ascii=False)


def configure_logging(settings: LogSettings, *, level_override: str | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    formatter: logging.Formatter = (
        JsonFormatter() if settings.format == "json" else logging.Formatter(TEXT_FORMAT)
    )
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level_override or settings.level)
    for noisy in ("httpx", "httpcore", "aiosqlite"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def set_level(level: str) -> None:
    logging.getLogger().setLevel(level)
