"""``switchboard check`` names what will go wrong before the daemon runs:
each problem as a warning or an error with the key and the fix; errors exit 1."""

from __future__ import annotations

import contextlib
import io
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.cli.check_findings import Account, _writable, may_write
from bot.cli.check_online import hint
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_api import FakeTelegram

TELEGRAM_TOKEN = "123456789:AAE" + "x" * 32  # the shape of a real token
MODEL = "agent: {model: {base_url: 'https://llm.example.com/v1', api_key: sk-test-1234}}\n"
ADMINS = "access: {admins: ['telegram:42', 'slack:U1']}\n"


def _check(tmp_path: Path, body: str, *extra: str) -> tuple[int, str, str]:
    config = tmp_path / "switchboard.yaml"
    config.write_text(f"config_version: 1\nstate_dir: '{tmp_path / 'state'}'\n{body}")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["check", "-c", str(config), *extra])
    return status, out.getvalue(), err.getvalue()


def _summary(tmp_path: Path, body: str, *extra: str) -> tuple[int, dict[str, Any]]:
    """``check --json``, without the warning about where the program lives: a checkout under
    /tmp (a CI clone) gets it whatever the config says (tests/bot/cli/test_service_hidden.py)."""
    status, out, _ = _check(tmp_path, body, "--json", *extra)
    summary = json.loads(out)
    summary["warnings"] = [w for w in summary["warnings"] if not w.startswith("program: ")]
    return status, summary


def _telegram(token: str = TELEGRAM_TOKEN, extra: str = "") -> str:
    return f"channels:\n  telegram: {{enabled: true, token: '{token}'{extra}}}\n"


def test_the_echo_model_with_a_platform_is_a_warning(tmp_path: Path) -> None:
    status, out, _ = _check(tmp_path, ADMINS + _telegram())
    assert status == 0
    warning = next(line for line in out.splitlines() if line.startswith("warning: agent.model"))
    assert "echo" in warning
    assert "api_key" in warning


def test_a_real_model_and_an_admin_leave_nothing_to_say(tmp_path: Path) -> None:
    status, summary = _summary(tmp_path, MODEL + ADMINS + _telegram())
    assert status == 0
    assert summary["warnings"] == []
    assert summary["errors"] == []


def test_pairing_with_nobody_to_approve_is_a_warning(tmp_path: Path) -> None:
    status, summary = _summary(tmp_path, MODEL + _telegram())
    assert status == 0
    (warning,) = summary["warnings"]
    assert warning.startswith("access.admins: ")
    assert "dm_policy pairing" in warning
    assert "telegram:<your user id>" in warning
    open_dms = "access: {dm_policy: open}\n"
    assert _summary(tmp_path, MODEL + open_dms + _telegram())[1]["warnings"] == []


def test_a_token_that_cannot_be_telegrams_is_an_error(tmp_path: Path) -> None:
    status, out, _ = _check(tmp_path, MODEL + ADMINS + _telegram("notatoken"))
    assert status == 1
    assert "error: channels.telegram.token: " in out
    assert "@BotFather" in out
    assert "notatoken" not in out  # never a secret, even a wrong one
    status, summary = _summary(tmp_path, MODEL + ADMINS + _telegram("123456:short"))
    assert status == 0
    assert any("channels.telegram.token" in w and "35" in w for w in summary["warnings"])


def test_slack_tokens_of_the_wrong_kind_are_errors(tmp_path: Path) -> None:
    slack = (
        "channels:\n  slack: {enabled: true, bot_token: xapp-1-S3CRET, app_token: xoxb-2-S3CRET}\n"
    )
    status, summary = _summary(tmp_path, MODEL + ADMINS + slack)
    assert status == 1
    errors = summary["errors"]
    assert any(e.startswith("channels.slack.bot_token: ") and "xoxb-" in e for e in errors)
    assert any(e.startswith("channels.slack.app_token: ") and "xapp-" in e for e in errors)
    assert "S3CRET" not in json.dumps(summary)


def test_a_feishu_app_id_not_starting_cli_is_a_warning(tmp_path: Path) -> None:
    feishu = "channels:\n  feishu: {enabled: true, app_id: '12345', app_secret: s3cret}\n"
    admins = "access: {admins: ['feishu:ou_1']}\n"
    status, summary = _summary(tmp_path, MODEL + admins + feishu)
    assert status == 0
    assert any(w.startswith("channels.feishu.app_id: ") for w in summary["warnings"])


def test_a_webhook_url_that_is_not_https_is_an_error(tmp_path: Path) -> None:
    webhook = (
        ", mode: webhook, webhook: {url: 'http://bot.example.com/telegram/webhook',"
        " secret_token: 'a-secret-token-of-24-chars'}"
    )
    status, out, _ = _check(tmp_path, MODEL + ADMINS + _telegram(extra=webhook))
    assert status == 1
    assert "error: channels.telegram.webhook.url: " in out
    assert "https://" in out


def test_a_state_dir_that_cannot_be_created_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    config = tmp_path / "switchboard.yaml"
    config.write_text(
        f"config_version: 1\nstate_dir: '{tmp_path / 'a-file' / 'state'}'\n{MODEL}{ADMINS}"
        + _telegram()
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["check", "-c", str(config)]) == 1
    assert f"error: state_dir: {tmp_path / 'a-file'} is not a folder" in out.getvalue()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_online_failure_names_the_url_and_what_to_try(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with FakeOpenAIServer() as model:
        body = (
            f"agent: {{model: {{base_url: '{model.base_url}', api_key: sk-test}}}}\n{ADMINS}"
            + _telegram(extra=f", api_base_url: '{url}'")
        )
        status, out, _ = _check(tmp_path, body, "--online")
    assert status == 1
    lines = out.splitlines()
    failed = lines.index(next(line for line in lines if "channel telegram" in line))
    assert "FAIL" in lines[failed]
    assert url in lines[failed + 1]
    assert "firewall" in lines[failed + 1]
    assert "proxy" in lines[failed + 1]


def test_check_online_warns_about_privacy_mode_for_group_policy_all(tmp_path: Path) -> None:
    with FakeOpenAIServer() as model, FakeTelegram(token=TELEGRAM_TOKEN) as fake:
        body = (
            f"agent: {{model: {{base_url: '{model.base_url}', api_key: sk-test}}}}\n"
            "access: {admins: ['telegram:42'], group_policy: all}\n"
            + _telegram(extra=f", api_base_url: '{fake.api_origin}'")
        )
        status, summary = _summary(tmp_path, body, "--online")
        assert status == 0, summary
        (warning,) = summary["warnings"]
        assert warning.startswith("channels.telegram: group_policy all: ")
        assert "can_read_all_group_messages" in warning
        assert "/setprivacy" in warning
        fake.set_privacy_mode(on=False)
        assert _summary(tmp_path, body, "--online")[1]["warnings"] == []
        assert _summary(tmp_path, body)[1]["warnings"] == []  # offline: getMe is not asked


@pytest.mark.parametrize(
    ("detail", "says"),
    [
        ("Slack refused the token (token_revoked)", "credentials were refused"),
        ("auth.test failed: not_allowed_token_type", "credentials were refused"),
        ("apps.connections.open failed: missing_scope", "lacks a permission"),
        ("httpx.ConnectError: [Errno 111] Connection refused", "nothing answered"),
    ],
)
def test_a_failed_probe_gets_the_hint_that_fits_its_reason(detail: str, says: str) -> None:
    assert says in hint("channel slack", detail)


def test_as_root_the_state_dir_is_checked_for_the_service_user(tmp_path: Path) -> None:
    """Root may write anywhere: what ``check`` run as root must ask is whether the unit's user
    may."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    owner = state.stat().st_uid
    stranger = Account("switchboard", uid=owner + 4242, gids=frozenset({owner + 4242}))
    (finding,) = _writable("state_dir", state, stranger)
    assert finding.key == "state_dir"
    assert f"the service user switchboard cannot write {state}" in finding.problem
    assert "chown -R switchboard:" in finding.fix
    assert not may_write(state, stranger)
    state.chmod(0o707)
    assert may_write(state, stranger)
    assert list(_writable("state_dir", state, stranger)) == []
    itself = Account("switchboard", uid=owner, gids=frozenset())
    state.chmod(0o700)
    assert may_write(state, itself)
