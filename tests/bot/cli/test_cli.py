"""The ``switchboard`` command as a user runs it: real subprocesses (design §13)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import ErrorReply, FakeOpenAIServer, Reply

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "config" / "switchboard.example.yaml"


def _env(state_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SWITCHBOARD_"))}
    env.update({"SWITCHBOARD_STATE_DIR": str(state_dir), "NO_PROXY": "127.0.0.1,localhost"})
    env.update(extra)
    return env


def _switchboard(
    *args: str, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        check=False,
    )


def test_config_error_exits_78_and_names_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "config_version: 1\n"
        "agent:\n  max_concurrent_runs: 0\n"
        "channels:\n  telegram:\n    enabled: true\n"
    )
    result = _switchboard("check", "-c", str(bad), env=_env(tmp_path))
    assert result.returncode == 78
    assert "agent.max_concurrent_runs" in result.stderr
    assert "channels.telegram.token" in result.stderr


def test_a_bad_dingtalk_url_exits_78_naming_the_key_for_check_and_run(tmp_path: Path) -> None:
    """A malformed ``api_base_url`` is a configuration error (78, not restarted by systemd)
    naming the key, never a traceback or a connection retried forever."""
    config = tmp_path / "dingtalk.yaml"
    config.write_text(
        f"config_version: 1\nstate_dir: {tmp_path / 'state'}\nhttp: {{enabled: false}}\n"
        "channels:\n  dingtalk: {enabled: true, client_id: id, client_secret: secret,"
        " api_base_url: 'api.dingtalk.com/v1'}\n"
    )
    for command in ("check", "run"):
        result = _switchboard(command, "-c", str(config), env=_env(tmp_path))
        assert result.returncode == 78, result.stderr
        assert "channels.dingtalk.api_base_url" in result.stderr
        assert "Traceback" not in result.stderr


def test_missing_config_file_exits_78(tmp_path: Path) -> None:
    result = _switchboard("run", "-c", str(tmp_path / "nope.yaml"), env=_env(tmp_path))
    assert result.returncode == 78
    assert "nope.yaml" in result.stderr


def test_init_writes_a_config_that_checks(tmp_path: Path) -> None:
    target = tmp_path / "switchboard.yaml"
    assert _switchboard("init", str(target), env=_env(tmp_path)).returncode == 0
    assert target.read_text() == EXAMPLE.read_text()
    assert _switchboard("init", str(target), env=_env(tmp_path)).returncode == 78
    result = _switchboard("check", "-c", str(target), "--json", env=_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert '"ok": true' in result.stdout
    assert "offline echo model" in result.stdout


def test_chat_quick_start_answers_and_runs_commands(tmp_path: Path) -> None:
    result = _switchboard(
        "chat",
        "-c",
        str(EXAMPLE),
        env=_env(tmp_path / "state"),
        stdin="/help\nhello there\n/status\n",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "bot> **Commands**" in out
    assert "hello there" in out.split("**Commands**", 1)[1]
    assert "offline" in out
    assert "Thread: " in out


def test_a_piped_script_gets_every_answer_in_order(tmp_path: Path) -> None:
    """Lines piped in are read one answer at a time, as if typed: none is merged into
    another turn or dropped by ``/new``."""
    script = "first question\nsecond question\n/new\nthird question\n"
    with FakeOpenAIServer() as model:
        model.script(*(Reply(text=f"answer {n}", delay_s=0.2) for n in (1, 2, 3)))
        env = _env(tmp_path / "state", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=model.base_url)
        result = _switchboard("chat", "-c", str(EXAMPLE), env=env, stdin=script)
        requests = model.requests
    assert result.returncode == 0, result.stderr
    answers = [line for line in result.stdout.splitlines() if line.startswith("bot> ")]
    assert answers[0] == "bot> answer 1"
    assert answers[1] == "bot> answer 2"
    assert answers[2].startswith("bot> Started a new conversation")
    assert answers[3] == "bot> answer 3"
    assert [r.messages[-1]["content"] for r in requests] == [
        "first question",
        "second question",
        "third question",
    ]
    assert len(requests[2].messages) < len(requests[1].messages)  # a fresh thread


def test_chat_m_asks_once_and_exits_with_the_outcome(tmp_path: Path) -> None:
    with FakeOpenAIServer() as model:
        model.script(Reply(text="the one answer"), ErrorReply(status=401, message="bad key"))
        env = _env(tmp_path / "state", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=model.base_url)
        ok = _switchboard("chat", "-c", str(EXAMPLE), "-m", "a single\nquestion", env=env)
        failed = _switchboard("chat", "-c", str(EXAMPLE), "-m", "again", env=env)
        empty = _switchboard("chat", "-c", str(EXAMPLE), "-m", "  ", env=env)
        requests = model.requests
    assert ok.returncode == 0, ok.stderr
    assert "bot> the one answer" in ok.stdout
    assert requests[0].messages[-1]["content"] == "a single question"
    assert failed.returncode == 1
    assert "Sorry, I could not finish this reply" in failed.stdout
    assert "the agent could not answer" in failed.stderr
    assert empty.returncode == 2
    assert "the message is empty" in empty.stderr


def test_sigterm_drains_a_running_turn(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(
        "config_version: 1\n"
        "state_dir: ${SWITCHBOARD_STATE_DIR}\n"
        "agent:\n  model: {base_url: '${OPENAI_BASE_URL}', api_key: '${OPENAI_API_KEY}'}\n"
        "http: {enabled: false}\n"
        "daemon: {shutdown_grace_s: 15}\n"
        "channels:\n  console: {enabled: true, dm_policy: open}\n"
    )
    with FakeOpenAIServer() as model:
        model.script(Reply(text="the drained answer", delay_s=1.0))
        env = _env(tmp_path / "state", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=model.base_url)
        process = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "bot", "run", "-c", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )
        assert process.stdin is not None
        process.stdin.write("please think slowly\n")
        process.stdin.flush()
        model.wait_for_requests(1, timeout=30)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "bot> the drained answer" in out
    assert "stopping" in err


def test_chat_talks_to_the_configured_model_endpoint(tmp_path: Path) -> None:
    with FakeOpenAIServer() as model:
        model.script(Reply(text="hello from the real pipeline"))
        env = _env(tmp_path / "state", OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=model.base_url)
        result = _switchboard("chat", "-c", str(EXAMPLE), env=env, stdin="hi model\n")
        requests = model.requests
    assert result.returncode == 0, result.stderr
    assert "bot> hello from the real pipeline" in result.stdout
    assert "offline" not in result.stdout
    assert requests[0].authorization == "Bearer sk-test"
    assert requests[0].messages[-1]["content"].startswith("hi model")


def test_check_online_probes_the_model_endpoint(tmp_path: Path) -> None:
    with FakeOpenAIServer() as model:
        env = _env(tmp_path, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=model.base_url)
        good = _switchboard("check", "-c", str(EXAMPLE), "--online", env=env)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "agent embedded  ok" in good.stdout
    env = _env(tmp_path, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    bad = _switchboard("check", "-c", str(EXAMPLE), "--online", env=env)
    assert bad.returncode == 1
    assert "FAIL  cannot reach http://127.0.0.1:9/v1" in bad.stdout
