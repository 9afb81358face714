"""psycopg's errors as the store's: ``StoreBusy`` when trying again later can help.

The kernel waits out ``StoreBusy`` and retries (``bot.ops.kernel_tasks``); any other
``StoreError`` stops what it was doing. Transient here means: the connection was lost or could
not be had in time (no SQLSTATE, or class 08), the transaction lost a race (class 40:
serialization failure, deadlock), the server is short of something (53) or being restarted
or cancelled the statement (57), a lock was not granted within ``lock_timeout`` (55P03), or
the server is (still) a read-only standby (25006, during a failover).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import psycopg
from psycopg_pool import PoolTimeout

from bot.errors import StoreBusy, StoreError

TRANSIENT_CLASSES: Final = frozenset({"08", "40", "53", "57"})
TRANSIENT_STATES: Final = frozenset({"55P03", "25006"})


def is_transient(exc: psycopg.Error) -> bool:
    if isinstance(exc, PoolTimeout):
        return True
    state = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError)
    return state[:2] in TRANSIENT_CLASSES or state in TRANSIENT_STATES


def store_error(exc: psycopg.Error, where: str, scrub: Callable[[str], str]) -> StoreError:
    """The ``StoreError`` (or ``StoreBusy``) to raise for ``exc``, naming the store;
    ``scrub`` keeps the password out of the message."""
    message = f"store {where}: {scrub(str(exc))}"
    return StoreBusy(message) if is_transient(exc) else StoreError(message)
