"""Separate hosts on one machine for ``bench/partition.py``: network namespaces, veth pairs and
TCP forwarders from the host ends of the pairs to services on loopback.

Each ``Host`` is a network namespace (``sbpart-<tag>-<n>``) joined to this machine by two veth
pairs, each on a /30 of one private /24 that no route or address of this machine touches:

- ``services``: the fake Telegram and the fake model (through forwarders on its host end) and
  the webhook posts the fake Telegram makes into the namespace;
- ``store``: PostgreSQL only, through a forwarder on its host end to the server's loopback
  address, so PostgreSQL itself is not reconfigured (it keeps listening on 127.0.0.1 only).

``Network.cut`` sets the host end of a host's store pair down: inside the namespace the link
loses its carrier and every packet to PostgreSQL is dropped silently (no reset, no error: a
partition as a replica sees it), while its services pair stays up. The host's route to the
namespace's store address goes with the link; an ``unreachable`` route for the whole /24 makes
anything sent there meanwhile fail here instead of following the default route off the
machine. ``Network.heal`` sets the link up again; TCP connections open across the cut resume.

Everything is removed by ``Network.close`` (links, namespaces, the /24 route), which is safe
to call twice and after a partial setup; ``leftovers`` says what of it still exists. Blocking
calls; the forwarder runs on an event loop of its own thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType

from tests.fakes.common.server import LoopThread

PREFIX = "sbpart"
"""Every namespace this module creates is named ``sbpart-<tag>-<n>``; links ``sbp<tag><n>…``."""
IP_TIMEOUT_S = 10.0
_POOL = ipaddress.IPv4Network("10.200.0.0/13")
"""Where the private /24 is picked from (10.200.0.0 to 10.207.255.255)."""


def problem() -> str | None:
    """Why namespaces cannot be made here (``None``: they can); tries one and removes it."""
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    if os.geteuid() != 0:
        return "not root: `ip netns add` needs CAP_SYS_ADMIN"
    name = f"{PREFIX}-probe-{secrets.token_hex(3)}"
    try:
        _ip("netns", "add", name)
    except RuntimeError as exc:
        return f"cannot create a network namespace: {exc}"
    _ip("netns", "del", name)
    return None


def _ip(*args: str) -> str:
    done = subprocess.run(  # noqa: S603 - iproute2 with arguments of our own
        ["ip", *args],  # noqa: S607 - iproute2 from PATH, as an operator would run it
        capture_output=True, text=True, timeout=IP_TIMEOUT_S, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _taken() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks this machine's routes and addresses cover."""
    found: list[ipaddress.IPv4Network] = []
    for route in json.loads(_ip("-j", "-4", "route", "show", "table", "all") or "[]"):
        dst = str(route.get("dst", ""))
        if dst and dst != "default":
            with contextlib.suppress(ValueError):  # names such as "broadcast" entries' types
                found.append(ipaddress.IPv4Network(dst, strict=False))
    for link in json.loads(_ip("-j", "-4", "addr") or "[]"):
        found.extend(
            ipaddress.IPv4Network(f"{info['local']}/{info['prefixlen']}", strict=False)
            for info in link.get("addr_info", [])
        )
    return found


def pick_subnet() -> ipaddress.IPv4Network:
    """A random /24 of ``_POOL`` that no route or address of this machine overlaps."""
    taken = _taken()
    subnets = list(_POOL.subnets(new_prefix=24))
    for _ in range(64):
        subnet = subnets[secrets.randbelow(len(subnets))]
        if not any(subnet.overlaps(other) for other in taken):
            return subnet
    raise RuntimeError(f"no free /24 in {_POOL}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """One veth pair: its host end's name and the two ends' addresses (a /30)."""

    host_if: str
    ns_if: str
    host_addr: str
    ns_addr: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Host:
    """A network namespace and its two links to this machine."""

    name: str
    services: Link
    store: Link

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the namespace (``ip netns exec`` execs it: the pid is its own)."""
        return ["ip", "netns", "exec", self.name, *argv]


@dataclass(slots=True)
class Network:
    """``with Network(3) as net:`` — ``count`` hosts, removed again on the way out."""

    count: int
    tag: str = field(default_factory=lambda: secrets.token_hex(2))
    hosts: list[Host] = field(default_factory=list)
    subnet: ipaddress.IPv4Network | None = None
    _made: list[tuple[str, ...]] = field(default_factory=list)
    """What to run, in reverse, to undo what was made (``ip`` arguments)."""

    def __enter__(self) -> Network:
        try:
            self.subnet = pick_subnet()
            self._make(("route", "add", "unreachable", str(self.subnet)),
                       ("route", "del", "unreachable", str(self.subnet)))  # fmt: skip
            for index in range(self.count):
                self.hosts.append(self._host(index, self.subnet))
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _make(self, do: tuple[str, ...], undo: tuple[str, ...]) -> None:
        _ip(*do)
        self._made.append(undo)

    def _host(self, index: int, subnet: ipaddress.IPv4Network) -> Host:
        name = f"{PREFIX}-{self.tag}-{index}"
        self._make(("netns", "add", name), ("netns", "del", name))
        self._make(("-n", name, "link", "set", "lo", "up"), ())
        base = subnet.network_address + 8 * index
        services = self._link(name, f"sbp{self.tag}{index}s", "svc", base)
        store = self._link(name, f"sbp{self.tag}{index}d", "db", base + 4)
        return Host(name=name, services=services, store=store)

    def _link(self, ns: str, host_if: str, ns_if: str, base: ipaddress.IPv4Address) -> Link:
        host_addr, ns_addr = str(base + 1), str(base + 2)
        self._make(("link", "add", host_if, "type", "veth", "peer", "name", ns_if, "netns", ns),
                   ("link", "del", host_if))  # fmt: skip
        _ip("addr", "add", f"{host_addr}/30", "dev", host_if)
        _ip("link", "set", host_if, "up")
        _ip("-n", ns, "addr", "add", f"{ns_addr}/30", "dev", ns_if)
        _ip("-n", ns, "link", "set", ns_if, "up")
        return Link(host_if=host_if, ns_if=ns_if, host_addr=host_addr, ns_addr=ns_addr)

    def cut(self, host: Host) -> None:
        """PostgreSQL unreachable from ``host``, silently; Telegram and the model still are."""
        _ip("link", "set", host.store.host_if, "down")

    def heal(self, host: Host) -> None:
        _ip("link", "set", host.store.host_if, "up")

    def close(self) -> list[str]:
        """Undoes everything made, newest first, each step on its own; returns the failures
        (an undo of something already gone counts as done)."""
        failures: list[str] = []
        while self._made:
            undo = self._made.pop()
            if not undo:
                continue
            try:
                _ip(*undo)
            except RuntimeError as exc:
                if "Cannot find device" not in str(exc) and "No such" not in str(exc):
                    failures.append(str(exc))
        return failures

    def leftovers(self) -> list[str]:
        """What of this network still exists: namespaces, links, the /24 route."""
        found = [n for n in _ip("netns", "list").split() if n.startswith(f"{PREFIX}-{self.tag}-")]
        found += [
            str(link["ifname"])
            for link in json.loads(_ip("-j", "link") or "[]")
            if str(link.get("ifname", "")).startswith(f"sbp{self.tag}")
        ]
        if self.subnet is not None and str(self.subnet) in _ip("route", "show", "table", "all"):
            found.append(f"route {self.subnet}")
        return found


# --------------------------------------------------------------------------- forwarding


class Forwarder:
    """TCP relays from ``(address, port)`` to ``127.0.0.1:target``, on a loop of its own
    thread: ``with Forwarder() as fwd: fwd.add(...)``. A relay ends when either side closes."""

    def __init__(self) -> None:
        self._thread = LoopThread("partition-forwarder")
        self._servers: list[asyncio.Server] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self.relayed = 0

    def __enter__(self) -> Forwarder:
        self._thread.start(self._nothing)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def _nothing(self) -> None:
        return None

    def add(self, address: str, port: int, target_port: int) -> None:
        loop = self._thread.loop
        assert loop is not None, "the forwarder is not running"

        async def listen() -> None:
            async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await self._relay(reader, writer, target_port)

            self._servers.append(await asyncio.start_server(accepted, address, port))

        asyncio.run_coroutine_threadsafe(listen(), loop).result(timeout=10)

    async def _relay(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, target_port: int
    ) -> None:
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            writer.close()
            self._writers.discard(writer)
            return
        self._writers.add(up_writer)
        self.relayed += 1
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        self._writers.difference_update((writer, up_writer))

    def close(self) -> None:
        async def teardown() -> None:
            for server in self._servers:
                server.close()
            for writer in list(self._writers):
                writer.close()
            for server in self._servers:
                await server.wait_closed()
            self._servers.clear()
            await asyncio.sleep(0.05)  # the pipes see their writers closed and end

        if self._thread.loop is not None:
            self._thread.stop(teardown)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copies until EOF or an error on either side, then closes ``writer`` (which ends the
    opposite pipe too)."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):  # a side went away: the relay is over
        writer.transport.abort()
    finally:
        writer.close()
