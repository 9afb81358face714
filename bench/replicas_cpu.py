"""CPU accounting for ``bench/replicas.py``, from ``/proc`` (Linux; elsewhere it reports None).

A ``CpuMeter`` taken before and read after a measured load gives the daemons' CPU time per
answer (all their threads), the PostgreSQL server's (every ``postgres`` process on the machine:
other users of the server count too), and how busy the machine's CPUs were meanwhile.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

_PROC = Path("/proc")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (0 if it is gone)."""
    try:
        fields = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def _postgres_pids() -> list[int]:
    pids = []
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().strip() == "postgres":
                    pids.append(int(entry.name))
    return pids


def _machine() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot."""
    values = [int(v) for v in (_PROC / "stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return (sum(values) - idle, sum(values))


class CpuMeter:
    """CPU used by ``pids`` (the daemons), by PostgreSQL and by the machine since it started."""

    def __init__(self, pids: Iterable[int]) -> None:
        self.available = (_PROC / "stat").exists()
        self._pids = list(pids)
        self._daemons = sum(process_cpu_s(pid) for pid in self._pids)
        self._postgres = self._postgres_now()
        self._machine = _machine() if self.available else (0.0, 0.0)

    def _postgres_now(self) -> dict[int, float]:
        if not self.available:
            return {}
        return {pid: process_cpu_s(pid) for pid in _postgres_pids()}

    def read(self, answers: int) -> dict[str, float | None]:
        if not self.available or answers <= 0:
            return {"daemons_ms_per_answer": None}
        daemons = sum(process_cpu_s(pid) for pid in self._pids) - self._daemons
        now = self._postgres_now()
        postgres = sum(cpu - self._postgres.get(pid, 0.0) for pid, cpu in now.items())
        busy, total = _machine()
        busy_share = (busy - self._machine[0]) / max(1.0, total - self._machine[1])
        return {
            "daemons_ms_per_answer": round(daemons / answers * 1000, 1),
            "postgres_ms_per_answer": round(postgres / answers * 1000, 1),
            "machine_busy": round(busy_share, 3),
        }
