"""Suite-wide: tests never leave the machine (design §15); a PostgreSQL schema per test."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.postgres import fresh_schema, require_postgres

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def _is_loopback(host: object) -> bool:
    if not isinstance(host, str):
        return False
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _guard_address(address: object) -> None:
    if isinstance(address, tuple) and address and not _is_loopback(address[0]):
        raise ConnectionRefusedError(f"test tried to reach {address!r}: tests stay on loopback")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _guard_address(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _guard_address(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_loopback(host if isinstance(host, str) else str(host)):
            raise socket.gaierror(f"test tried to resolve {host!r}: tests stay on loopback")
        return real_getaddrinfo(host, *args, **kwargs)

    patched: dict[str, Callable[..., Any]] = {"connect": connect, "connect_ex": connect_ex}
    for name, replacement in patched.items():
        monkeypatch.setattr(socket.socket, name, replacement)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    for proxy in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
async def schema() -> AsyncIterator[tuple[str, str]]:
    """The test server's URL and a schema of this test's own (replicas on one store)."""
    url = require_postgres()
    async with fresh_schema(url) as name:
        yield url, name
