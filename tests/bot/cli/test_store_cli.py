"""The store as an operator configures it (design §11, §13): ``store migrate`` on SQLite and
PostgreSQL, a malformed ``store.url`` (exit 78) and an unreachable server (exit 75) named
without the password, a conversation through ``switchboard chat`` kept in PostgreSQL, and
``store copy`` moving a SQLite installation into PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from bot.ops.instance_lock import InstanceLock
from tests.bot.cli.test_cli import EXAMPLE, _env, _switchboard
from tests.postgres import fresh_schema, require_postgres


def _config(tmp_path: Path, store: str) -> Path:
    config = tmp_path / "switchboard.yaml"
    config.write_text(
        f"config_version: 1\nstate_dir: {tmp_path / 'state'}\nhttp: {{enabled: false}}\n"
        f"store: {store}\n"
    )
    return config


@pytest.fixture
async def pg() -> AsyncIterator[tuple[str, str]]:
    url = require_postgres()
    async with fresh_schema(url, "t_cli") as schema:
        yield url, schema


def test_store_migrate_on_sqlite(tmp_path: Path) -> None:
    result = _switchboard("store", "migrate", "-c", str(_config(tmp_path, "{}")),
                          env=_env(tmp_path))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "sqlite store" in result.stdout
    assert (tmp_path / "state" / "switchboard.db").is_file()


async def test_store_migrate_on_postgres(tmp_path: Path, pg: tuple[str, str]) -> None:
    url, schema = pg
    config = _config(tmp_path, f"{{url: '{url}', schema: {schema}}}")
    result = _switchboard("store", "migrate", "-c", str(config), "--json", env=_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert '"backend": "postgres"' in result.stdout
    async with await psycopg.AsyncConnection.connect(url) as conn:
        query = sql.SQL("SELECT count(*) FROM {}.schema_version").format(sql.Identifier(schema))
        row = await (await conn.execute(query)).fetchone()
    assert row is not None
    assert row[0] >= 1


def test_a_malformed_store_url_exits_78_naming_the_key(tmp_path: Path) -> None:
    config = _config(tmp_path, "{url: 'mysql://root@127.0.0.1/switchboard'}")
    for command in ("check", "run"):
        result = _switchboard(command, "-c", str(config), env=_env(tmp_path))
        assert result.returncode == 78, result.stderr
        assert "store.url" in result.stderr


def test_an_unreachable_postgres_exits_75_naming_the_key_not_the_password(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, "{url: 'postgresql://bot:hunter2@127.0.0.1:9/switchboard'}")
    result = _switchboard("run", "-c", str(config), env=_env(tmp_path))
    assert result.returncode == 75, result.stderr
    assert "store.url" in result.stderr
    assert "127.0.0.1:9" in result.stderr
    assert "hunter2" not in result.stderr


async def test_a_chat_runs_on_a_postgres_store(tmp_path: Path, pg: tuple[str, str]) -> None:
    url, schema = pg
    state = tmp_path / "state"
    env = _env(state, SWITCHBOARD_STORE_URL=url)
    config = tmp_path / "switchboard.yaml"
    config.write_text(EXAMPLE.read_text().replace("schema: switchboard", f"schema: {schema}"))
    result = _switchboard("chat", "-c", str(config), "-m", "hello postgres", env=env)
    assert result.returncode == 0, result.stderr
    assert "hello postgres" in result.stdout
    async with await psycopg.AsyncConnection.connect(url) as conn:
        inbound = sql.SQL("SELECT count(*) FROM {}.inbound").format(sql.Identifier(schema))
        checkpoints = sql.SQL("SELECT count(*) FROM {}.checkpoints").format(sql.Identifier(schema))
        journaled = await (await conn.execute(inbound)).fetchone()
        saved = await (await conn.execute(checkpoints)).fetchone()
    assert journaled == (1,)
    assert saved is not None
    assert saved[0] >= 1
    assert state.is_dir()  # workspaces stay local
    assert not (state / "switchboard.db").exists()
    assert not (state / "agent.db").exists()


def test_store_copy_moves_a_sqlite_installation_into_postgres(
    tmp_path: Path, pg: tuple[str, str]
) -> None:
    url, schema = pg
    state = tmp_path / "state"
    env = _env(state)
    sqlite_config = _config(tmp_path, "{}")
    chatted = _switchboard("chat", "-c", str(sqlite_config), "-m", "hello sqlite", env=env)
    assert chatted.returncode == 0, chatted.stderr
    assert (state / "agent.db").is_file()

    copied = _switchboard("store", "copy", "-c", str(sqlite_config), "--to", url,
                          "--schema", schema, "--json", env=env)  # fmt: skip
    assert copied.returncode == 0, copied.stderr
    report = json.loads(copied.stdout)
    assert report["tables"]["inbound"] == 1
    assert report["tables"]["conversations"] == 1
    assert report["checkpoints"]["threads"] == 1
    assert report["checkpoints"]["checkpoints"] >= 1
    assert report["to"].endswith(f"(schema {schema})")

    again = _switchboard("store", "copy", "--from", f"sqlite://{state / 'switchboard.db'}",
                         "--to", url, "--schema", schema, env=env)  # fmt: skip
    assert again.returncode == 1
    assert "not empty" in again.stderr

    pg_config = tmp_path / "pg.yaml"
    pg_config.write_text(
        f"config_version: 1\nstate_dir: {tmp_path / 'pg-state'}\nhttp: {{enabled: false}}\n"
        f"store: {{url: '{url}', schema: {schema}}}\n"
    )
    audit = _switchboard("audit", "-c", str(pg_config), "--json", env=env)
    assert audit.returncode == 0, audit.stderr
    assert '"action": "store copy"' in audit.stdout
    conversations = _switchboard("conversations", "-c", str(pg_config), "--json", env=env)
    assert conversations.returncode == 0, conversations.stderr
    assert '"console"' in conversations.stdout


def test_store_copy_refuses_a_running_daemon_and_hides_the_password(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = _env(state)
    config = _config(tmp_path, "{}")
    assert _switchboard("store", "migrate", "-c", str(config), env=env).returncode == 0
    target = "postgresql://bot:hunter2@127.0.0.1:9/switchboard"

    with InstanceLock(state):
        locked = _switchboard("store", "copy", "--from", str(state), "--to", target, env=env)
    assert locked.returncode == 1
    assert "daemon" in locked.stderr

    unreachable = _switchboard("store", "copy", "--from", str(state), "--to", target, env=env)
    assert unreachable.returncode == 1
    assert "127.0.0.1:9" in unreachable.stderr
    assert "hunter2" not in unreachable.stderr + unreachable.stdout

    missing = _switchboard("store", "copy", "--to", target, env=env)
    assert missing.returncode == 1
    assert "--from is required" in missing.stderr
