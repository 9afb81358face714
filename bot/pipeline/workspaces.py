"""Each thread's workspace, its directories made on the thread's first turn in this process.

Making them touches the disk (``ThreadWorkspace.for_thread`` resolves ``workspace_dir`` on its
first use), so it runs off the loop, once per thread; the cache is bounded and simply starts
over when full (a forgotten thread costs one more ``mkdir -p``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bot.workspace import ThreadWorkspace

WORKSPACES_REMEMBERED = 4096


class ThreadWorkspaces:
    def __init__(self, root: Callable[[], Path]) -> None:
        """``root``: the configured ``workspace_dir`` as it stands now (reloads change it)."""
        self._root = root
        self._known: dict[str, ThreadWorkspace] = {}

    async def get(self, thread_id: str) -> ThreadWorkspace:
        workspace = self._known.get(thread_id)
        if workspace is None:
            workspace = await asyncio.to_thread(_created, self._root(), thread_id)
            if len(self._known) >= WORKSPACES_REMEMBERED:
                self._known.clear()
            self._known[thread_id] = workspace
        return workspace


def _created(workspace_dir: Path, thread_id: str) -> ThreadWorkspace:
    workspace = ThreadWorkspace.for_thread(workspace_dir, thread_id)
    workspace.create()
    return workspace
