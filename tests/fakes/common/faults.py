"""Injected failures every fake scripts the same way: a queue of faults matched by glob and
used up in order, and the switch that makes the token endpoints refuse the credentials."""

from __future__ import annotations

import fnmatch
from collections import deque
from collections.abc import Callable
from typing import Protocol, TypeVar

from tests.fakes.common.records import Guard

T = TypeVar("T")


def matches(pattern: str, *targets: str) -> bool:
    """Whether the glob ``pattern`` matches any of ``targets`` (an API name, a path,
    ``"METHOD /path"``)."""
    return any(fnmatch.fnmatchcase(target, pattern) for target in targets)


def take(queue: deque[T], wanted: Callable[[T], bool]) -> T | None:
    """Remove and return the first item of ``queue`` that is ``wanted`` (a fault used up)."""
    for item in queue:
        if wanted(item):
            queue.remove(item)
            return item
    return None


class _Credentials(Protocol):
    refuse_credentials: bool


class _Server(Protocol):
    @property
    def world(self) -> _Credentials: ...


class _Fake(Protocol):
    @property
    def _guard(self) -> Guard: ...

    @property
    def _server(self) -> _Server: ...


class CredentialSwitch:
    """``refuse_credentials``: while set, the platform's token (and connection) endpoints
    reject even the right credentials, the way it answers a revoked app secret."""

    @property
    def refuse_credentials(self: _Fake) -> bool:
        with self._guard:
            return self._server.world.refuse_credentials

    @refuse_credentials.setter
    def refuse_credentials(self: _Fake, refuse: bool) -> None:
        with self._guard:
            self._server.world.refuse_credentials = refuse
