"""``switchboard`` as a user runs it, with Slack enabled against FakeSlack: ``check --online``
probes it with ``auth.test``, and ``run`` serves Slack and Telegram at the same time
(design §13, §15). The fakes run on their own threads in this process; the daemon is a child."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from tests.channels import telegram_support as tg
from tests.channels.cli_support import check_online, cli_config, daemon_process
from tests.channels.slack_support import texts
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram


def _config(tmp_path: Path, slack: FakeSlack, extra: str = "", *, backend: str = "echo") -> Path:
    return cli_config(
        tmp_path,
        f"{{backend: {backend}}}",
        "  slack:\n"
        "    enabled: true\n"
        f"    bot_token: {slack.ids.bot_token}\n"
        f"    app_token: {slack.ids.app_token}\n"
        f"    api_base_url: {slack.api_base_url}\n"
        f"{extra}",
    )


def test_check_online_probes_slack_with_auth_test(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        config = _config(tmp_path, fake)
        good = check_online(config, tmp_path / "state")
        fake.revoke_token()
        bad = check_online(config, tmp_path / "state")
        calls = [c.method for c in fake.calls()]
    assert good.returncode == 0, good.stdout + good.stderr
    assert "channel slack  ok" in good.stdout
    assert "Fake (T0001) as @fakebot" in good.stdout
    assert bad.returncode == 1
    assert "channel slack  FAIL" in bad.stdout
    assert "token_revoked" in bad.stdout
    assert calls.count("auth.test") == 2


async def test_run_serves_slack_and_telegram_at_the_same_time(tmp_path: Path) -> None:
    with FakeSlack() as slack, FakeTelegram() as telegram:
        telegram_block = (
            "  telegram:\n"
            "    enabled: true\n"
            f"    token: '{telegram.token}'\n"
            f"    api_base_url: {telegram.api_origin}\n"
        )
        config = _config(tmp_path, slack, telegram_block, backend="embedded")
        with daemon_process(config, tmp_path / "state") as process:
            slack.push_message("hello from slack")
            telegram.push_message("hello from telegram")
            await slack.await_until(
                lambda: any("hello from slack" in text for text in texts(slack, "D0001")),
                timeout=45,
            )
            await tg.wait_text(telegram, 42, "hello from telegram", within=45)
            process.send_signal(signal.SIGTERM)
            _, err = await asyncio.to_thread(process.communicate, timeout=30)
        assert process.returncode == 0, err
        assert "channel slack: starting -> running" in err
        assert "channel telegram: starting -> running" in err


def test_check_online_says_once_that_the_app_token_is_refused(tmp_path: Path) -> None:
    with FakeSlack() as fake:
        config = _config(tmp_path, fake)
        config.write_text(config.read_text().replace(fake.ids.app_token, "xapp-1-not-this-one"))
        bad = check_online(config, tmp_path / "state")
    assert bad.returncode == 1
    assert "Slack refused the app token (invalid_auth)" in bad.stdout
    assert "refused the token (" not in bad.stdout  # not nested in itself
