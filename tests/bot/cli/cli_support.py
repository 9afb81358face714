"""Running ``switchboard`` in the test's process and reading what it printed."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.cli import main


@dataclass(frozen=True, slots=True)
class Result:
    status: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*args: str | Path) -> Result:
    """``switchboard ARGS`` in this process (from a thread when a test's loop is running)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(arg) for arg in args])
    return Result(status, out.getvalue(), err.getvalue())
