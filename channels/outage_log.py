"""How an adapter's own reconnect loop logs an outage (the kernel's supervisor does the same).

A link that is down retries every few seconds for as long as the outage lasts; a traceback
per retry would bury the log in identical stacks. So: the traceback once, at the first
failure of an outage; then one WARNING line per retry naming the error (type and message,
escaped and bounded) and the backoff; and one INFO line when the link works again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from bot.text.escape import bound, escape_controls

ERROR_LIMIT = 300
"""Characters of an error's message in a retry line."""


def short_error(exc: BaseException, detail: str | None = None) -> str:
    """``Type: message`` on one bounded line, control characters escaped; ``detail`` replaces
    the message (an adapter's redacted text)."""
    text = str(exc) if detail is None else detail
    return bound(escape_controls(f"{type(exc).__name__}: {text}"), ERROR_LIMIT)


class OutageLog:
    """The log of one link's outages; ``what`` names the operation (``slack reconnect``)."""

    def __init__(
        self, logger: logging.Logger, what: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._logger = logger
        self._what = what
        self._clock = clock
        self._since: float | None = None
        self.failures = 0
        """Failures in a row, in the current outage (0 while the link works)."""

    def failed(
        self, exc: BaseException, *, retry_in: float | None = None, detail: str | None = None
    ) -> None:
        """Log one failed attempt: with its traceback if it starts an outage."""
        self.failures += 1
        error = short_error(exc, detail)
        retry = "" if retry_in is None else f"; retrying in {retry_in:.1f}s"
        if self._since is None:
            self._since = self._clock()
            self._logger.warning("%s failed: %s%s", self._what, error, retry, exc_info=exc)
            return
        self._logger.warning(
            "%s failed again (%d in a row): %s%s", self._what, self.failures, error, retry
        )

    def ended(self) -> None:
        """The link works: say so if it was down (nothing otherwise)."""
        if self._since is not None:
            took = self._clock() - self._since
            self._logger.info(
                "%s works again after %d failure(s) / %.1fs", self._what, self.failures, took
            )
        self._since, self.failures = None, 0
