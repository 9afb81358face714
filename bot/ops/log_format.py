"""What a log line may contain: no secret, no control character, no unbounded length.

The formatters here apply to every record the daemon's handler writes, ours and every SDK's:
the formatted line has each configured secret replaced (``SecretRedactor``), URL credentials
removed, control characters escaped (a newline in a stranger's text cannot forge a second
line) and its length bounded. Tracebacks stay several lines in text mode, each line escaped,
and are bounded too; JSON mode stays one object per line. Under journald each line carries
its syslog priority (``<3>`` for ERROR), which journald's stream protocol reads.
"""

from __future__ import annotations

import json
import logging
import re
import traceback
from collections.abc import Iterable
from datetime import UTC, datetime
from types import TracebackType
from urllib.parse import urlsplit

from pydantic import BaseModel, SecretStr
from typing_extensions import override

from bot.text.escape import bound, escape_controls, escape_json_text, escape_lines
from bot.text.redact import REDACTED, SECRET_QUERY_KEYS, redact_urls

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
MAX_LINE = 4000
"""Characters of one log line (after escaping), then ``…(+N chars)``."""
TRACE_HEAD, TRACE_TAIL = 10, 50
"""Lines of a traceback kept from its start and its end; the middle is cut."""
ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]
MIN_SECRET = 4
"""Shorter secrets are not searched for: they would mangle every line (and are no secret)."""


class SecretRedactor:
    """The configured secrets, replaced by ``***`` wherever they occur in a line.

    ``add`` takes a settings model and collects every ``SecretStr`` in it, and the password or
    secret query values of every URL in it; secrets only ever accumulate (a reload that
    changes a token leaves the old one redacted too).
    """

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def add(self, settings: BaseModel) -> None:
        found = {value for value in _secrets_in(settings) if len(value) >= MIN_SECRET}
        if found <= self._secrets:
            return
        self._secrets |= found
        ordered = sorted(self._secrets, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(secret) for secret in ordered))

    def redact(self, text: str) -> str:
        pattern = self._pattern
        if pattern is not None:
            text = pattern.sub(REDACTED, text)
        return redact_urls(text)


def _secrets_in(value: object) -> Iterable[str]:
    if isinstance(value, SecretStr):
        yield value.get_secret_value().strip()
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _secrets_in(getattr(value, name))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _secrets_in(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _secrets_in(item)
    elif isinstance(value, str) and "://" in value:
        yield from _url_secrets(value)


def _url_secrets(url: str) -> Iterable[str]:
    """A URL's password and the values of its secret-looking query parameters, as written."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return
    if password:
        yield password
    for pair in parts.query.split("&"):
        key, _, value = pair.partition("=")
        if value and SECRET_QUERY_KEYS.search(key):
            yield value


def syslog_priority(levelno: int) -> int:
    """The syslog priority journald stores for a Python level."""
    if levelno >= logging.CRITICAL:
        return 2
    if levelno >= logging.ERROR:
        return 3
    if levelno >= logging.WARNING:
        return 4
    return 6 if levelno >= logging.INFO else 7


class SafeTextFormatter(logging.Formatter):
    """``TEXT_FORMAT`` made safe; ``journald``: every line starts with ``<priority>``."""

    def __init__(self, redactor: SecretRedactor, *, journald: bool = False) -> None:
        super().__init__(TEXT_FORMAT)
        self._redactor = redactor
        self._journald = journald

    @override
    def format(self, record: logging.LogRecord) -> str:
        # What ``logging.Formatter.format`` does for the first line (it sets these two on the
        # record too), without the traceback it would append: no copy of the record needed.
        record.message = record.getMessage()
        record.asctime = self.formatTime(record, self.datefmt)
        line = bound(escape_controls(self._redactor.redact(self.formatMessage(record))), MAX_LINE)
        lines = [line, *self._trace_lines(record)]
        if self._journald:
            prefix = f"<{syslog_priority(record.levelno)}>"
            lines = [prefix + each for each in lines]
        return "\n".join(lines)

    def _trace_lines(self, record: logging.LogRecord) -> list[str]:
        parts = []
        if record.exc_info:
            parts.append(format_exception(record.exc_info))
        if record.stack_info:
            parts.append(self.formatStack(record.stack_info))
        if not parts:
            return []
        text = escape_lines(self._redactor.redact("\n".join(parts)))
        lines = [bound(line, MAX_LINE) for line in text.splitlines()]
        if len(lines) <= TRACE_HEAD + TRACE_TAIL:
            return lines
        cut = len(lines) - TRACE_HEAD - TRACE_TAIL
        return [*lines[:TRACE_HEAD], f"  …({cut} lines cut)", *lines[-TRACE_TAIL:]]


def format_exception(exc_info: ExcInfo) -> str:
    """The traceback, with each exception's own text on one line: a newline in a message
    (a stranger's text in a ``ValueError``) cannot start a line of its own."""
    _, value, _ = exc_info
    if value is None:
        return "NoneType: None"
    described = traceback.TracebackException.from_exception(value, compact=True)
    own = set(_exception_texts(described, set()))
    return "".join(
        escape_controls(chunk.removesuffix("\n")) + "\n" if chunk in own else chunk
        for chunk in described.format()
    ).removesuffix("\n")


def _exception_texts(described: traceback.TracebackException, seen: set[int]) -> Iterable[str]:
    if id(described) in seen:
        return
    seen.add(id(described))
    yield from described.format_exception_only()
    linked = [described.__cause__, described.__context__, *(described.exceptions or ())]
    for other in linked:
        if other is not None:
            yield from _exception_texts(other, seen)


class SafeJsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``msg`` and ``exc``."""

    def __init__(self, redactor: SecretRedactor) -> None:
        super().__init__()
        self._redactor = redactor

    @override
    def format(self, record: logging.LogRecord) -> str:
        redact = self._redactor.redact
        payload = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": bound(redact(record.getMessage()), MAX_LINE),
        }
        if record.exc_info:
            limit = MAX_LINE * (TRACE_HEAD + TRACE_TAIL) // 10
            payload["exc"] = bound(redact(self.formatException(record.exc_info)), limit)
        return escape_json_text(json.dumps(payload, ensure_ascii=False))


class DropBelow(logging.Filter):
    """Drops records under ``level`` from the named loggers (and their children): SDK lines
    that carry untrusted input, such as slack_bolt's INFO line with the raw body of every
    request whose signature is wrong."""

    def __init__(self, names: Iterable[str], level: int) -> None:
        super().__init__()
        self._names = tuple(names)
        self._level = level

    @override
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= self._level:
            return True
        return not any(
            record.name == name or record.name.startswith(name + ".") for name in self._names
        )
