"""lark-oapi's logger (``Lark``) routed through ours.

The SDK logs to its own stdout handler with its own format; the daemon's logging writes to
stderr for journald. Its handler is removed so records propagate to ours, and its level is
WARNING unless the daemon logs at DEBUG: the SDK's INFO lines carry the long-connection URL
with its ticket, and its DEBUG lines carry event payloads (message text), which belong to
DEBUG only. ``ws.Client`` sets the level again on construction; the adapter passes the same.
"""

from __future__ import annotations

import logging
import re

from typing_extensions import override

SDK_LOGGER = "Lark"
_TICKET = re.compile(r"ticket=[^&\s]+")


class _Redact(logging.Filter):
    """Long-connection tickets are credentials: never written out."""

    @override
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and "ticket=" in record.msg:
            record.msg = _TICKET.sub("ticket=***", record.msg)
        return True


def route_sdk_logs(*, debug: bool) -> None:
    sdk = logging.getLogger(SDK_LOGGER)
    for handler in list(sdk.handlers):
        if isinstance(handler, logging.StreamHandler):
            sdk.removeHandler(handler)
    if not any(isinstance(f, _Redact) for f in sdk.filters):
        sdk.addFilter(_Redact())
    sdk.propagate = True
    sdk.setLevel(logging.DEBUG if debug else logging.WARNING)
