"""What a daemon that serves no HTTP loads: ``switchboard run`` with ``http.enabled: false``,
Telegram polling the fake Bot API, runs without importing aiohttp (``bot/ops/routes.py``):
aiohttp's client half builds TLS contexts at import, about 10 MB of a daemon that has no use
for them. (The embedded agent's OpenAI client loads aiohttp itself with the first turn; a
remote agent never does.)"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from tests.channels.cli_support import cli_config, cli_env, start_run
from tests.fakes.common.waiting import eventually
from tests.fakes.telegram_api import FakeTelegram


def _aiohttp_files(pid: int) -> list[str]:
    """aiohttp's compiled modules mapped into the process (``import aiohttp`` loads them)."""
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return sorted({line.split()[-1] for line in maps if "/aiohttp/" in line})


async def test_a_polling_daemon_without_http_does_not_load_aiohttp(tmp_path: Path) -> None:
    with FakeTelegram() as fake, (tmp_path / "run.log").open("w") as log:
        telegram = f"{{enabled: true, token: '{fake.token}', api_base_url: '{fake.api_origin}'}}"
        config = cli_config(tmp_path, "{}", f"  telegram: {telegram}\n")
        daemon = start_run(config, log, cli_env(tmp_path / "state"))
        try:
            # Polling has started: the daemon is up, and no turn has loaded the agent.
            await eventually(lambda: bool(fake.calls("getUpdates")), 30)
            loaded = _aiohttp_files(daemon.pid)
        finally:
            daemon.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(daemon.wait, 30)
    assert code == 0, (tmp_path / "run.log").read_text()
    assert loaded == [], loaded
