"""dingtalk-stream's loggers routed through ours.

The SDK gives each of its loggers (``dingtalk_stream.client``, ``.handler``,
``.card_replier``) a stderr handler of its own when no handler is configured yet, and sets them
to INFO every time a handler object is constructed. Its INFO and WARNING lines carry whole
frames (message text) and endpoints; those belong to DEBUG only. The handlers are removed so
records propagate to the daemon's logging, and the level is ERROR unless the daemon logs at
DEBUG. Called after the SDK's handler objects exist (their constructors reset the level).
"""

from __future__ import annotations

import logging

SDK_LOGGERS = (
    "dingtalk_stream",
    "dingtalk_stream.client",
    "dingtalk_stream.handler",
    "dingtalk_stream.card_replier",
)


def route_sdk_logs(*, debug: bool) -> None:
    for name in SDK_LOGGERS:
        sdk = logging.getLogger(name)
        for handler in list(sdk.handlers):
            if isinstance(handler, logging.StreamHandler):
                sdk.removeHandler(handler)
        sdk.propagate = True
        sdk.setLevel(logging.DEBUG if debug else logging.ERROR)
