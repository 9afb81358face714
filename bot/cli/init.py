"""``switchboard init [PATH] [--channel NAME]``: write a configuration to start from.

Without ``--channel`` it writes the commented example (every key). With ``--channel`` it
writes a short config for that one platform, an env file beside it naming the variables the
config reads (``<name>.env``, created 0600, empty values, never overwritten: it may already
hold secrets), and for Slack the app manifest, for Feishu the permission list to import
(``docs/platforms/<channel>.md`` walks through each). Missing parent folders are created; an
existing config or manifest is kept unless ``--force``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from bot.cli.options import CommandFailed, Subcommands
from bot.exit_codes import EXIT_CONFIG, EXIT_OK
from bot.ops.private_files import create_private_file

EXAMPLE_CONFIG = "switchboard.example.yaml"
EXIT_CANNOT_CREATE = 73
"""``EX_CANTCREAT``: a file or folder could not be written (as ``service install``)."""
GUIDES = "docs/platforms"

_HEAD = """\
# Switchboard with {title} only: the few keys it needs ({guide}).
# Secrets are ${{NAME}} references filled from the environment: put the values into
# {env_name} beside this file (systemd reads it with EnvironmentFile=; in a shell:
# set -a; . ./{env_name}; set +a). `switchboard init FILE` writes the full commented
# example with every other key and its default.
config_version: 1

# The SQLite store, the instance lock and the thread workspaces. Default: ./var
state_dir: ${{SWITCHBOARD_STATE_DIR:-./var}}

# The model: any OpenAI-compatible endpoint. With no key the offline echo model answers.
agent:
  model:
    base_url: ${{OPENAI_BASE_URL:-https://api.openai.com/v1}}
    api_key: ${{OPENAI_API_KEY:-}}
    name: ${{OPENAI_MODEL:-gpt-4o-mini}}

access:
  # Admins as "{channel}:<user id>" (the bot's /whoami command shows yours). Default: []
  admins: []
  # Direct messages: pairing (strangers get a code an admin approves) | allowlist | open
  dm_policy: pairing
  # Groups: mention (answer when addressed) | all | off | listen
  group_policy: mention

channels:
"""

_TELEGRAM = """\
  telegram:
    enabled: true
    # The bot token from @BotFather (secret).
    token: ${TELEGRAM_BOT_TOKEN}
    # polling (no inbound port) | webhook (then add the webhook block: url, secret_token)
    mode: polling
"""

_SLACK = """\
  slack:
    enabled: true
    # Bot User OAuth Token xoxb-... (secret).
    bot_token: ${SLACK_BOT_TOKEN}
    # App-level token xapp-... with connections:write (secret); socket mode only.
    app_token: ${SLACK_APP_TOKEN}
    # socket (Socket Mode, no inbound port) | http (then signing_secret, events_path)
    mode: socket
"""

_FEISHU = """\
  feishu:
    enabled: true
    # App ID cli_... and App Secret (secret) from Credentials & Basic Info.
    app_id: ${FEISHU_APP_ID}
    app_secret: ${FEISHU_APP_SECRET}
    # https://open.feishu.cn (Feishu) | https://open.larksuite.com (Lark)
    domain: https://open.feishu.cn
    # websocket (long connection, no inbound port) | webhook (then verification_token)
    mode: websocket
"""

_DINGTALK = """\
  dingtalk:
    enabled: true
    # Client ID (AppKey) and Client Secret (AppSecret) of the app (secret).
    client_id: ${DINGTALK_CLIENT_ID}
    client_secret: ${DINGTALK_CLIENT_SECRET}
    # An AI card template id streams answers into a card; null: answers arrive whole.
    card_template_id: null
"""

_ENV_HEAD = """\
# Secrets for {config_name}, one NAME=value a line. Keep this file private (mode 0600).
# systemd reads it with EnvironmentFile=; in a shell: set -a; . ./{env_name}; set +a
"""
_MODEL_ENV = """\
# The model (optional; empty: the offline echo model, the default endpoint and model).
OPENAI_API_KEY=
OPENAI_BASE_URL=
OPENAI_MODEL=
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Platform:
    """What ``init --channel`` writes for one platform."""

    title: str
    block: str
    env: tuple[str, ...]
    """The variables the block reads, in the order the guide asks for them."""
    artefact: str | None = None
    """A file of ``bot/templates`` copied beside the config (the app's setup to import)."""


PLATFORMS = {
    "telegram": Platform(title="Telegram", block=_TELEGRAM, env=("TELEGRAM_BOT_TOKEN",)),
    "slack": Platform(
        title="Slack",
        block=_SLACK,
        env=("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"),
        artefact="slack-manifest.yaml",
    ),
    "feishu": Platform(
        title="Feishu/Lark",
        block=_FEISHU,
        env=("FEISHU_APP_ID", "FEISHU_APP_SECRET"),
        artefact="feishu-permissions.json",
    ),
    "dingtalk": Platform(
        title="DingTalk",
        block=_DINGTALK,
        env=("DINGTALK_CLIENT_ID", "DINGTALK_CLIENT_SECRET"),
    ),
}


def add_commands(commands: Subcommands) -> None:
    init = commands.add_parser(
        "init", help="write the commented example config, or a short one for one platform"
    )
    init.add_argument("path", nargs="?", type=Path, default=Path("switchboard.yaml"))
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.add_argument(
        "--channel",
        choices=sorted(PLATFORMS),
        help="a short config for this platform, its env file (and Slack manifest, Feishu "
        "permissions) beside it",
    )
    init.set_defaults(handler=_init_command)


def _init_command(args: argparse.Namespace) -> int:
    if args.channel is None:
        return init_example(args.path, force=args.force)
    return init_channel(args.path, args.channel, force=args.force)


def template_text(name: str) -> str:
    return resources.files("bot").joinpath("templates", name).read_text("utf-8")


def channel_config(channel: str, path: Path) -> str:
    """The short config ``init --channel`` writes to ``path``."""
    platform = PLATFORMS[channel]
    head = _HEAD.format(
        title=platform.title,
        guide=f"{GUIDES}/{channel}.md",
        env_name=env_path(path).name,
        channel=channel,
    )
    return head + platform.block


def env_text(channel: str, path: Path) -> str:
    """The env file's first contents: the platform's variables, then the model's."""
    head = _ENV_HEAD.format(config_name=path.name, env_name=env_path(path).name)
    names = "".join(f"{name}=\n" for name in PLATFORMS[channel].env)
    return f"{head}{names}{_MODEL_ENV}"


def env_path(config: Path) -> Path:
    """``switchboard.yaml`` → ``switchboard.env`` beside it (as ``service install`` names it)."""
    return config.with_suffix(".env")


def init_example(path: Path, *, force: bool) -> int:
    if path.exists() and not force:
        return _refuse(path)
    _write(path, template_text(EXAMPLE_CONFIG))
    print(f"wrote {path}; edit it, then run: switchboard check -c {path}")
    return EXIT_OK


def init_channel(path: Path, channel: str, *, force: bool) -> int:
    platform = PLATFORMS[channel]
    artefact = path.parent / platform.artefact if platform.artefact else None
    for target in (path, artefact):
        if target is not None and target.exists() and not force:
            return _refuse(target)
    _write(path, channel_config(channel, path))
    print(f"wrote {path}")
    env = env_path(path)
    if _create_private(env, env_text(channel, path)):
        print(f"wrote {env} (mode 0600)")
    else:
        print(f"kept {env} (it exists; it must name {', '.join(platform.env)})")
    if artefact is not None and platform.artefact is not None:
        _write(artefact, template_text(platform.artefact))
        print(f"wrote {artefact}")
    _print_next_steps(path, env, channel)
    return EXIT_OK


def _print_next_steps(path: Path, env: Path, channel: str) -> None:
    names = ", ".join(PLATFORMS[channel].env)
    print(
        "\nNext:\n"
        f"  1. set up the app ({GUIDES}/{channel}.md) and fill {env}: {names}\n"
        f"  2. set -a; . {_sourceable(env)}; set +a; switchboard check --online -c {path}\n"
        f"  3. switchboard run -c {path}"
    )


def _sourceable(path: Path) -> str:
    """``path`` as the shell's ``.`` finds it: a bare name would be looked up in ``PATH``."""
    shown = str(path)
    return shown if "/" in shown else f"./{shown}"


def _refuse(path: Path) -> int:
    print(f"switchboard: {path} exists; use --force to overwrite", file=sys.stderr)
    return EXIT_CONFIG


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    except OSError as exc:
        raise CommandFailed(f"cannot write {path}: {exc.strerror}", EXIT_CANNOT_CREATE) from None


def _create_private(path: Path, text: str) -> bool:
    try:
        return create_private_file(path, text)
    except OSError as exc:
        raise CommandFailed(f"cannot write {path}: {exc.strerror}", EXIT_CANNOT_CREATE) from None
