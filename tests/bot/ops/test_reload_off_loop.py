"""``/reload`` reads and validates the configuration file off the event loop.

The admin's ``/reload`` runs through the real router, command and reloader against a file
under ``tmp_path``; ``tests.bot.loop_io`` records every file-system call under ``tmp_path``
that the loop's own thread makes meanwhile: there must be none.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml

from bot.app import Daemon, DaemonOptions, Overrides
from bot.config.loader import load_settings
from tests.bot.harness import started
from tests.bot.loop_io import describe, loop_io
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import PLAIN_CAPS, FakeChannel, dm


def _config(tmp_path: Path, run_timeout_s: int) -> dict[str, Any]:
    return {
        "config_version": 1,
        "state_dir": str(tmp_path / "state"),
        "access": {"dm_policy": "open", "admins": ["fake:root"]},
        "agent": {"run_timeout_s": run_timeout_s},
        "daemon": {"shutdown_grace_s": 2},
        "http": {"host": "127.0.0.1", "port": 0},
    }


async def test_reload_reads_the_config_file_off_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "switchboard.yaml"
    path.write_text(yaml.safe_dump(_config(tmp_path, run_timeout_s=30)))
    channel = FakeChannel(caps=PLAIN_CAPS)
    overrides = Overrides(channels=[channel], agent=FakeAgent())
    options = DaemonOptions(config_path=path, overrides=overrides)
    root_level = logging.getLogger().level  # a reload applies the file's log level
    try:
        async with started(Daemon(load_settings(path, {}), options)) as handle:
            path.write_text(yaml.safe_dump(_config(tmp_path, run_timeout_s=45)))
            with loop_io(tmp_path) as watch:
                await channel.inject(dm("/reload", message_id="1", user="root"))
                await channel.wait_text("Configuration reloaded.", within=10)
            assert handle.daemon.settings.agent.run_timeout_s == 45
    finally:
        logging.getLogger().setLevel(root_level)
    assert watch.calls == [], describe(watch.calls)
