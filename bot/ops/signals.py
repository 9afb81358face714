"""The daemon's signal handlers: SIGTERM and SIGINT stop it (draining), SIGHUP reloads."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def stop_and_reload_signals(
    *, install: bool, request_stop: Callable[[], None], on_sighup: Callable[[], None]
) -> Iterator[None]:
    """Handlers on the running loop while the block runs (nothing when ``install`` is off:
    tests and embedders own their process's signals)."""
    if not install:
        yield
        return
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, request_stop)
    loop.add_signal_handler(signal.SIGINT, request_stop)
    loop.add_signal_handler(signal.SIGHUP, on_sighup)
    try:
        yield
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.remove_signal_handler(sig)
