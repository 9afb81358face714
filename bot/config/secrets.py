"""The secrets that authenticate requests to the daemon's HTTP server, by key path.

Only those in use are listed: a webhook secret when its channel is enabled in HTTP mode, the
push token when the push API is on, the console token when the console is. Each must be at
least ``MIN_SECRET_CHARS`` long (checked at load, ``bot/config/loader.py``): a short one can
be guessed, and an empty one would match a request that sends none at all.
"""

from __future__ import annotations

from typing import Final

from pydantic import SecretStr

from bot.config.settings import Settings

MIN_SECRET_CHARS: Final = 16
TELEGRAM_SECRET_PATH: Final = "channels.telegram.webhook.secret_token"  # noqa: S105 - a key path


def _text(value: SecretStr | None) -> str:
    return "" if value is None else value.get_secret_value()


def auth_secrets(settings: Settings) -> list[tuple[str, str]]:
    """``(key path, value)`` of every secret in use; blank ones too (the caller decides)."""
    found: list[tuple[str, str]] = []
    channels = settings.channels
    telegram, slack, feishu = channels.telegram, channels.slack, channels.feishu
    if telegram.enabled and telegram.mode == "webhook" and telegram.webhook is not None:
        found.append((TELEGRAM_SECRET_PATH, _text(telegram.webhook.secret_token)))
    if slack.enabled and slack.mode == "http":
        found.append(("channels.slack.signing_secret", _text(slack.signing_secret)))
    if feishu.enabled and feishu.mode == "webhook":
        found.append(("channels.feishu.verification_token", _text(feishu.verification_token)))
        # Optional (plain events are then checked by the token alone), but never weak if set.
        found.append(("channels.feishu.encrypt_key", _text(feishu.encrypt_key)))
    if settings.http.push_api.enabled:
        found.append(("http.push_api.token", _text(settings.http.push_api.token)))
    if settings.console.enabled:
        found.append(("console.token", settings.console.token_text))
    return found
