"""Logging setup: plain text for journald or one JSON object per line (design §13).

The one place logging is configured. One handler on the root logger writes every record,
ours and the SDKs', through ``bot.ops.log_format``: secrets redacted, control characters
escaped, lines bounded, and under journald each line prefixed with its syslog priority.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TextIO

from bot.config.settings import Settings
from bot.ops.log_format import DropBelow, SafeJsonFormatter, SafeTextFormatter, SecretRedactor

NOISY = ("httpx", "httpcore", "aiosqlite")
"""Loggers kept at WARNING: a line per HTTP request (with its URL) drowns the daemon's own."""
UNTRUSTED_BODIES = ("slack_bolt.RequestVerification", "slack_bolt.AsyncRequestVerification")
"""slack_bolt logs the raw body of every request with a bad signature at INFO; anyone on the
internet can send one. Slack's logger levels are reset by the SDK, so a handler filter drops
them."""

_redactor = SecretRedactor()


def configure_logging(settings: Settings, *, level_override: str | None = None) -> None:
    """Install the daemon's handler on stderr, in place of any earlier one."""
    global _redactor  # noqa: PLW0603 - the one handler's redactor, extended by reloads
    _redactor = SecretRedactor()
    _redactor.add(settings)
    target = sys.stderr
    handler = logging.StreamHandler(target)
    formatter: logging.Formatter = (
        SafeJsonFormatter(_redactor)
        if settings.log.format == "json"
        else SafeTextFormatter(_redactor, journald=under_journald(target))
    )
    handler.setFormatter(formatter)
    handler.addFilter(DropBelow(UNTRUSTED_BODIES, logging.WARNING))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level_override or settings.log.level)
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def apply_settings(settings: Settings) -> None:
    """A reload: the new level applies, and the new file's secrets are redacted too."""
    _redactor.add(settings)
    set_level(settings.log.level)


def set_level(level: str) -> None:
    logging.getLogger().setLevel(level)


def under_journald(stream: TextIO) -> bool:
    """Whether ``stream`` is the journal stream systemd connected (``JOURNAL_STREAM`` names
    its device and inode); a redirected stderr under systemd gets no priority prefixes."""
    expected = os.environ.get("JOURNAL_STREAM", "")
    device, _, inode = expected.partition(":")
    if not (device.isdigit() and inode.isdigit()):
        return False
    try:
        found = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (found.st_dev, found.st_ino) == (int(device), int(inode))
