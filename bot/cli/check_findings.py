"""``switchboard check``: what loads but will not work, each naming its key and the fix.

Offline and quick: nothing here opens a connection. An error is something that cannot work
(a token that cannot be the platform's, a webhook Telegram will not call, a state directory
that cannot exist); ``check`` exits 1 for it. A warning is valid but likely not what is meant
(the offline echo model in a real chat, nobody able to approve pairing requests). Secrets are
judged by their shape and never shown.
"""

from __future__ import annotations

import getpass
import os
import pwd
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from typing_extensions import override

from bot.cli.unit import SERVICE_USER, hidden_by_unit
from bot.config.settings import DmPolicy, Settings

TELEGRAM_TOKEN = re.compile(r"\d+:[A-Za-z0-9_-]+")
"""``<bot id>:<secret>``, as @BotFather gives it; anything else cannot be a bot token."""
TELEGRAM_SECRET_LENGTH = 35
"""The part after the colon in every token @BotFather issues."""
SLACK_PREFIXES = {"bot_token": "xoxb-", "app_token": "xapp-"}
FEISHU_APP_ID_PREFIX = "cli_"


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    key: str
    problem: str
    fix: str
    error: bool = False

    @override
    def __str__(self) -> str:
        return f"{self.key}: {self.problem}; {self.fix}"


def offline_findings(settings: Settings, program: tuple[str, ...]) -> list[Finding]:
    """Every problem ``check`` can see without asking anyone; ``program`` as a unit runs it."""
    return [
        *_echo_model(settings),
        *_pairing(settings),
        *_telegram(settings),
        *_slack(settings),
        *_feishu(settings),
        *_state_dirs(settings),
        *_hidden(program),
    ]


def _platforms(settings: Settings) -> list[str]:
    return sorted(name for name in settings.channels.enabled() if name != "console")


def _echo_model(settings: Settings) -> Iterator[Finding]:
    platforms = _platforms(settings)
    if platforms and settings.agent.backend == "embedded" and settings.agent.model.offline:
        yield Finding(
            key="agent.model",
            problem=f"no api_key, so the offline echo model answers on {', '.join(platforms)} "
            "(it repeats what it is told; fine for a first try)",
            fix="set agent.model.api_key (OPENAI_API_KEY), and base_url and name for your model",
        )


def _pairing(settings: Settings) -> Iterator[Finding]:
    admins = settings.access.admins
    for name in _platforms(settings):
        if settings.channel_policy(name).dm_policy is not DmPolicy.PAIRING:
            continue
        if not any(admin.startswith(f"{name}:") for admin in admins):
            yield Finding(
                key="access.admins",
                problem=f"channels.{name} uses dm_policy pairing but no admin is on {name}, "
                "so nobody can /approve a request in chat",
                fix=f"add '{name}:<your user id>' (the bot's /whoami shows it), or approve "
                "with `switchboard pairing approve CODE`",
            )


def _telegram(settings: Settings) -> Iterator[Finding]:
    block = settings.channels.telegram
    if not block.enabled or block.token is None:
        return
    token = block.token.get_secret_value()
    if not TELEGRAM_TOKEN.fullmatch(token):
        yield Finding(
            key="channels.telegram.token",
            problem="this cannot be a Telegram bot token (<digits>:<secret>)",
            fix="copy the token @BotFather gave you (/mybots, API Token) into the env file",
            error=True,
        )
    elif len(token.partition(":")[2]) != TELEGRAM_SECRET_LENGTH:
        yield Finding(
            key="channels.telegram.token",
            problem=f"@BotFather's tokens have {TELEGRAM_SECRET_LENGTH} characters after the "
            f"colon, this one {len(token.partition(':')[2])}",
            fix="check that it was copied whole",
        )
    webhook = block.webhook if block.mode == "webhook" else None
    if webhook is not None and urlsplit(webhook.url).scheme != "https":
        yield Finding(
            key="channels.telegram.webhook.url",
            problem="Telegram calls webhooks only at https:// URLs",
            fix="put a TLS proxy in front of http.port and give its https:// URL, "
            "or use mode: polling",
            error=True,
        )


def _slack(settings: Settings) -> Iterator[Finding]:
    block = settings.channels.slack
    if not block.enabled:
        return
    for key, prefix in SLACK_PREFIXES.items():
        value = getattr(block, key)
        if value is not None and not value.get_secret_value().startswith(prefix):
            kind = "Bot User OAuth Token" if key == "bot_token" else "App-Level Token"
            yield Finding(
                key=f"channels.slack.{key}",
                problem=f"Slack's {kind} starts with {prefix}, this one does not",
                fix=f"copy the {kind} ({prefix}…) from the app's settings "
                "(docs/platforms/slack.md)",
                error=True,
            )


def _feishu(settings: Settings) -> Iterator[Finding]:
    block = settings.channels.feishu
    if block.enabled and block.app_id and not block.app_id.startswith(FEISHU_APP_ID_PREFIX):
        yield Finding(
            key="channels.feishu.app_id",
            problem=f"Feishu and Lark App IDs start with {FEISHU_APP_ID_PREFIX}",
            fix="copy the App ID from Credentials & Basic Info (not the App Secret)",
        )


def _state_dirs(settings: Settings) -> Iterator[Finding]:
    for key, path in (("state_dir", settings.state_dir), ("workspace_dir", settings.workspace_dir)):
        if path is not None:
            yield from _writable(key, path.absolute(), service_account())


@dataclass(frozen=True, slots=True)
class Account:
    """Who the daemon runs as: a name, its uid and every group it is in."""

    name: str
    uid: int
    gids: frozenset[int]


def service_account() -> Account | None:
    """The system unit's user (``switchboard``), when ``check`` runs as root and it exists: root
    may write anywhere, so what matters is whether the service may."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        return None
    gids = frozenset(os.getgrouplist(entry.pw_name, entry.pw_gid))
    return Account(entry.pw_name, entry.pw_uid, gids)


def may_write(folder: Path, account: Account) -> bool:
    """Whether ``account`` may create files in ``folder``: its owner, group and mode (no ACLs)."""
    info = folder.stat()
    if info.st_uid == account.uid:
        wanted = stat.S_IWUSR | stat.S_IXUSR
    elif info.st_gid in account.gids:
        wanted = stat.S_IWGRP | stat.S_IXGRP
    else:
        wanted = stat.S_IWOTH | stat.S_IXOTH
    return info.st_mode & wanted == wanted


def _writable(key: str, path: Path, account: Account | None = None) -> Iterator[Finding]:
    """``path`` exists and the daemon's user may write it, or its nearest existing folder is
    writable. That user is the service's (``account``) when root runs ``check``, else whoever
    runs it."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        yield Finding(
            key=key,
            problem=f"{existing} is not a folder, so {path} cannot be created",
            fix=f"point {key} at a folder (the unit sets SWITCHBOARD_STATE_DIR)",
            error=True,
        )
        return
    if account is not None:
        writable, user = may_write(existing, account), f"the service user {account.name}"
    else:
        writable, user = os.access(existing, os.W_OK | os.X_OK), _user()
    if not writable:
        yield Finding(
            key=key,
            problem=f"{user} cannot write {existing}, so the daemon run as {user} cannot start",
            fix=f"give the service user the folder (sudo chown -R {SERVICE_USER}: {existing}), "
            f"or run check as that user (sudo -u {SERVICE_USER} switchboard check)",
        )


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return f"uid {os.getuid()}"


def _hidden(program: tuple[str, ...]) -> Iterator[Finding]:
    """The program only: a config elsewhere is what ``service install -c`` is given."""
    for path, top in hidden_by_unit(program[:1], None):
        yield Finding(
            key="program",
            problem=f"{path} is under {top}, which a system unit (service install) replaces "
            "with an empty folder of its own (PrivateTmp=yes), so the service could not start",
            fix="install into a virtualenv outside /tmp and /var/tmp (/opt/switchboard), or use "
            "`service install --user`",
        )
