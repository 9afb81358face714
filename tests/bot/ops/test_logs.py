"""Logs an operator can trust (design §13): no forged lines, no secrets, bounded, prioritised.

Every test runs the daemon's real handler (``configure_logging``) and reads what it wrote.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
import telegram
from slack_bolt.middleware.request_verification import RequestVerification
from slack_bolt.request import BoltRequest
from slack_bolt.response import BoltResponse

from bot.ops.log_format import MAX_LINE
from tests.bot.ops.log_support import daemon_log, settings_with
from tests.channels.telegram_support import free_port

FORGED = "hello\nCRITICAL bot.app: disk wiped\r\x1b]0;owned\x07\x1b[2J\u2028\x9b31m"
TOKEN = "123456:AAE-telegram-token-for-the-log-test"  # noqa: S105 - a test value
WEBHOOK_SECRET = "webhook-secret-value-17"  # noqa: S105 - a test value


def _fail(exc: Exception) -> None:
    raise exc


def _no_raw_controls(text: str) -> None:
    for line in text.splitlines():
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in line), repr(line)
        assert "\u2028" not in line


def test_untrusted_text_cannot_forge_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with daemon_log(tmp_path, monkeypatch) as log:
        log.configure(settings_with(tmp_path))
        logging.getLogger("bot.pipeline.intake").info("from %s", FORGED)
        lines = log.lines()
    assert len(lines) == 1
    assert "CRITICAL bot.app" not in lines[0].split(" ", 3)[2]
    assert "hello\\nCRITICAL bot.app: disk wiped\\r\\x1b]0;owned\\x07\\x1b[2J" in lines[0]
    assert "\\u2028\\x9b31m" in lines[0]
    _no_raw_controls(log.text())


def test_a_huge_message_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with daemon_log(tmp_path, monkeypatch) as log:
        log.configure(settings_with(tmp_path))
        logging.getLogger("slack_sdk").warning("body %s", "x" * 900_000)
        lines = log.lines()
    assert len(lines) == 1
    assert len(lines[0]) < MAX_LINE + 40
    assert lines[0].endswith("chars)")


def test_a_traceback_stays_lines_but_each_is_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with daemon_log(tmp_path, monkeypatch) as log:
        log.configure(settings_with(tmp_path))
        try:
            _fail(ValueError(FORGED))
        except ValueError:
            logging.getLogger("bot.kernel").exception("turn failed")
        lines = log.lines()
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1].startswith("ValueError: hello\\nCRITICAL bot.app")
    _no_raw_controls(log.text())


def test_json_mode_is_one_object_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with daemon_log(tmp_path, monkeypatch) as log:
        log.configure(settings_with(tmp_path, log={"format": "json"}))
        try:
            _fail(ValueError(FORGED))
        except ValueError:
            logging.getLogger("bot.kernel").exception("failed for %s", FORGED)
        lines = log.lines()
    assert len(lines) == 1
    assert "\\u2028" in lines[0]
    _no_raw_controls(lines[0])


def test_an_unsigned_slack_request_body_is_never_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """slack_bolt logs the raw body of a badly signed request at INFO."""
    headers = {"x-slack-signature": "v0=forged", "x-slack-request-timestamp": str(int(time.time()))}
    with daemon_log(tmp_path, monkeypatch) as log:
        log.configure(settings_with(tmp_path))
        verification = RequestVerification(signing_secret="slack-signing-secret")  # noqa: S106
        for body in (f"token=x&text={FORGED}", "a" * 900_000):
            request = BoltRequest(body=body, headers=dict(headers))
            response = verification.process(
                req=request, resp=BoltResponse(status=200), next=lambda: BoltResponse(status=200)
            )
            assert response.status == 401
        text = log.text()
    assert "disk wiped" not in text
    assert "aaaaaaaa" not in text
    assert "signature" not in text


async def test_telegram_token_and_webhook_secret_never_reach_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PTB's DEBUG lines carry ``…/bot<TOKEN>`` and the ``setWebhook`` parameters."""
    webhook = {"url": "https://bot.example.com/tg", "secret_token": WEBHOOK_SECRET}
    block = {"token": TOKEN, "mode": "webhook", "webhook": webhook}
    settings = settings_with(tmp_path, channels={"telegram": block})
    closed = f"http://127.0.0.1:{free_port()}/bot"
    with daemon_log(tmp_path, monkeypatch) as log:
        log.configure(settings, level="DEBUG")
        bot = telegram.Bot(TOKEN, base_url=closed)
        with pytest.raises(telegram.error.NetworkError):
            await bot.set_webhook(webhook["url"], secret_token=WEBHOOK_SECRET)
        text = log.text()
    assert "Set Bot API URL" in text
    assert "setWebhook" in text
    assert TOKEN not in text
    assert TOKEN.split(":")[1] not in text
    assert WEBHOOK_SECRET not in text


def test_secrets_added_by_a_reload_are_redacted_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.ops.logs import apply_settings  # noqa: PLC0415 - the reload's entry point

    fresh = settings_with(tmp_path, agent={"model": {"api_key": "sk-new-key-from-reload"}})
    store = "postgresql://sb:db-password-42@127.0.0.1:5432/test?sslpassword=ssl-secret-9"
    with daemon_log(tmp_path, monkeypatch) as log:
        log.configure(settings_with(tmp_path, store={"url": store}))
        apply_settings(fresh)
        logging.getLogger("bot.kernel").warning("key sk-new-key-from-reload in %s", store)
        logging.getLogger("bot.kernel").warning("bare db-password-42 ssl-secret-9")
        text = log.text()
    assert "sk-new-key-from-reload" not in text
    assert "db-password-42" not in text
    assert "ssl-secret-9" not in text
    assert "postgresql://sb:***@127.0.0.1:5432/test" in text


def test_under_journald_every_line_carries_its_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """journald reads ``<N>`` per line: ``journalctl -p warning`` then works."""
    with daemon_log(tmp_path, monkeypatch) as log:
        found = log.path.stat()
        monkeypatch.setenv("JOURNAL_STREAM", f"{found.st_dev}:{found.st_ino}")
        log.configure(settings_with(tmp_path), level="DEBUG")
        sample = logging.getLogger("bot.kernel")
        sample.debug("d")
        sample.info("i")
        sample.warning("w")
        sample.critical("c")
        try:
            _fail(RuntimeError("boom"))
        except RuntimeError:
            sample.exception("e")
        lines = log.lines()
    assert [line[:3] for line in lines[:4]] == ["<7>", "<6>", "<4>", "<2>"]
    assert len(lines) > 5
    assert all(line.startswith("<3>") for line in lines[4:])


def test_without_journald_lines_have_no_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``JOURNAL_STREAM`` set, but stderr redirected elsewhere (it names another file)."""
    monkeypatch.setenv("JOURNAL_STREAM", "1:1")
    with daemon_log(tmp_path, monkeypatch) as log:
        log.configure(settings_with(tmp_path))
        logging.getLogger("bot.kernel").error("e")
        lines = log.lines()
    assert not lines[0].startswith("<")
