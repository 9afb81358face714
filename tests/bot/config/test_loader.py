"""Loading the YAML config: discovery, ${VAR} expansion, validation and error messages."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from bot.config.loader import UnsetRef, expand_env, find_config_path, load_settings
from bot.config.settings import (
    CONFIG_VERSION,
    DmPolicy,
    GroupPolicy,
    GroupScope,
    Settings,
    TelegramWebhookSettings,
)
from bot.errors import ConfigError

EXAMPLE = Path(__file__).resolve().parents[3] / "config" / "switchboard.example.yaml"
SECRET = "sk-TOPSECRET-7f3a9c"  # noqa: S105 - a marker that must never be echoed


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "switchboard.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def load_error(tmp_path: Path, body: str, environ: dict[str, str] | None = None) -> str:
    path = write(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ or {})
    return str(info.value)


# --------------------------------------------------------------------------- example config


def test_example_loads_without_any_environment() -> None:
    settings = load_settings(EXAMPLE, {})
    assert settings.config_version == CONFIG_VERSION
    assert settings.state_dir == Path("./var")
    assert settings.agent.backend == "embedded"
    assert settings.agent.model.offline
    assert settings.channels.enabled() == {}


def test_example_picks_up_the_environment() -> None:
    environ = {
        "SWITCHBOARD_STATE_DIR": "/var/lib/switchboard",
        "OPENAI_API_KEY": SECRET,
        "OPENAI_MODEL": "qwen-max",
        "TELEGRAM_BOT_TOKEN": "123:abc",
    }
    settings = load_settings(EXAMPLE, environ)
    assert settings.state_dir == Path("/var/lib/switchboard")
    assert settings.agent.model.name == "qwen-max"
    assert not settings.agent.model.offline
    token = settings.channels.telegram.token
    assert token is not None
    assert token.get_secret_value() == "123:abc"


def _field_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    paths = set()
    for name, field in model.model_fields.items():
        key = field.alias or name  # what the YAML spells (``store.schema``)
        paths.add(prefix + key)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            paths |= _field_paths(annotation, f"{prefix}{key}.")
    return paths


def _yaml_paths(node: object, prefix: str = "") -> set[str]:
    if not isinstance(node, dict):
        return set()
    paths = set()
    for key, value in node.items():
        paths.add(f"{prefix}{key}")
        paths |= _yaml_paths(value, f"{prefix}{key}.")
    return paths


def test_example_documents_every_setting() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert _yaml_paths(yaml.safe_load(text)) == _field_paths(Settings)


def test_example_commented_webhook_block_is_valid() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    block = text.split("    # webhook:\n", 1)[1]
    lines = [line.removeprefix("    #   ") for line in block.splitlines()]
    body = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    data, unset = expand_env(
        yaml.safe_load(body.split("\n\n", 1)[0]), {"TELEGRAM_WEBHOOK_SECRET": "s"}
    )
    assert unset == ()
    webhook = TelegramWebhookSettings.model_validate(data)
    assert set(TelegramWebhookSettings.model_fields) == set(webhook.model_fields_set)


def test_example_has_a_comment_for_every_key() -> None:
    previous = ""
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        if re.match(r"\s*[a-z_]+:", line):
            assert "#" in line or previous.lstrip().startswith("#"), line
        if line.strip():
            previous = line


# --------------------------------------------------------------------------- ${VAR} expansion


def test_expand_env_forms() -> None:
    tree = {
        "a": "${A}",
        "b": "x-${B:-dflt}-${A}-y",
        "c": "cost $$5 and $HOME stays",
        "d": ["${MISSING}", 3, None, True],
        "e": {"f": "${EMPTY:-fallback}", "g": "${EMPTY}"},
    }
    expanded, unset = expand_env(tree, {"A": "1", "EMPTY": ""})
    assert expanded == {
        "a": "1",
        "b": "x-dflt-1-y",
        "c": "cost $5 and $HOME stays",
        "d": ["", 3, None, True],
        "e": {"f": "fallback", "g": ""},
    }
    assert unset == (UnsetRef("d.0", "MISSING"),)
    assert unset[0] == ("d.0", "MISSING")


def test_expand_env_records_unset_variable_with_empty_default() -> None:
    _, unset = expand_env({"x": {"token": "${TOKEN:-}"}}, {})
    assert unset == (UnsetRef("x.token", "TOKEN"),)


@pytest.mark.parametrize("value", ["${UNCLOSED", "${1BAD}", "${A-b}", "${}", "${A:-${B}}"])
def test_expand_env_malformed_reference_names_the_key(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        expand_env({"channels": {"slack": {"bot_token": SECRET + value}}}, {})
    message = str(info.value)
    assert message.startswith("channels.slack.bot_token: ")
    assert SECRET not in message


# --------------------------------------------------------------------------- finding the file


def test_find_config_path_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = write(tmp_path, "config_version: 1\n")
    from_env = tmp_path / "env.yaml"
    from_env.write_text("config_version: 1\n", encoding="utf-8")
    env = {"SWITCHBOARD_CONFIG": str(from_env)}
    assert find_config_path(explicit, env) == explicit
    assert find_config_path(None, env) == from_env
    monkeypatch.chdir(tmp_path)
    assert find_config_path(None, {}) == Path("switchboard.yaml")


def test_find_config_path_missing_says_how_it_was_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=r"nope\.yaml.*-c"):
        find_config_path(missing, {})
    with pytest.raises(ConfigError, match=r"nope\.yaml.*SWITCHBOARD_CONFIG"):
        find_config_path(None, {"SWITCHBOARD_CONFIG": str(missing)})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"switchboard\.yaml.*default"):
        find_config_path(None, {})


# --------------------------------------------------------------------------- error messages


def test_enabled_channel_without_secret_names_key_and_variable(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        """\
        config_version: 1
        channels:
          telegram: {enabled: true, token: "${TELEGRAM_BOT_TOKEN}"}
          slack: {enabled: true, mode: http, bot_token: x, signing_secret: ""}
          feishu: {enabled: false}
        """,
    )
    lines = message.splitlines()
    assert (
        "channels.telegram.token: required when the channel is enabled "
        "(environment variable TELEGRAM_BOT_TOKEN is not set)"
    ) in lines
    assert "channels.slack.signing_secret: required when the channel is enabled" in lines
    assert not any("feishu" in line for line in lines)


def test_disabled_channel_needs_no_secret(tmp_path: Path) -> None:
    path = write(tmp_path, "config_version: 1\nchannels: {telegram: {token: '${NOPE}'}}\n")
    assert not load_settings(path, {}).channels.telegram.enabled


def test_all_schema_errors_are_reported_at_once(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        """\
        config_version: 1
        agent: {max_concurrent_runs: 0}
        conversations: {group_scope: forum}
        http: {port: "${PORT}"}
        channels:
          telegram: {enabled: true, tokn: abc}
          dingtalk: {enabled: true}
        """,
    )
    lines = message.splitlines()
    assert str(tmp_path / "switchboard.yaml") in lines[0]
    assert "agent.max_concurrent_runs: Input should be greater than or equal to 1" in lines
    assert "conversations.group_scope: Input should be 'topic', 'chat' or 'user'" in lines
    assert "channels.telegram.tokn: Extra inputs are not permitted" in lines
    assert any(
        line.startswith("http.port: ") and line.endswith("(environment variable PORT is not set)")
        for line in lines
    )
    assert "channels.dingtalk.client_id: required when the channel is enabled" in lines
    assert "channels.dingtalk.client_secret: required when the channel is enabled" in lines


def test_config_version_missing(tmp_path: Path) -> None:
    message = load_error(tmp_path, "log: {level: INFO}\n")
    assert "config_version: field required" in message.splitlines()


@pytest.mark.parametrize(("value", "shown"), [("2", "2"), ('"1"', "'1'"), ("true", "True")])
def test_config_version_unsupported(tmp_path: Path, value: str, shown: str) -> None:
    message = load_error(tmp_path, f"config_version: {value}\nbogus: key\n")
    expected = f"config_version: unsupported version {shown} (this Switchboard reads 1)"
    assert expected in message.splitlines()
    assert "bogus" not in message


def test_yaml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        f"""\
        config_version: 1
        channels:
          telegram: {{enabled: true, token: "{SECRET}
        log: [
        """,
    )
    assert re.search(r"switchboard\.yaml:\d+:\d+: YAML syntax error", message)
    assert SECRET not in message


def test_yaml_error_line_number(tmp_path: Path) -> None:
    message = load_error(tmp_path, "config_version: 1\nlog:\n  level: INFO\n bad: indent\n")
    assert re.search(r"switchboard\.yaml:4:\d+: YAML syntax error", message)


def test_duplicate_key_is_an_error(tmp_path: Path) -> None:
    message = load_error(tmp_path, "config_version: 1\nlog: {}\nlog: {level: DEBUG}\n")
    assert re.search(r"switchboard\.yaml:3:1: .*duplicate key 'log'", message)


@pytest.mark.parametrize(("body", "needle"), [("", "empty"), ("- 1\n", "list")])
def test_top_level_must_be_a_mapping(tmp_path: Path, body: str, needle: str) -> None:
    assert needle in load_error(tmp_path, body)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path, {})
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"config_version: 1\nlog: {level: \xe9}\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_settings(latin, {})


@pytest.mark.parametrize(
    "body",
    [
        f"config_version: 1\nagent: {{max_concurrent_runs: {SECRET}}}\n",
        f"config_version: 1\nchannels: {{telegram: {{tokn: {SECRET}}}}}\n",
        f"config_version: 1\nchannels: {{telegram: {{token: [{SECRET}]}}}}\n",
        f"config_version: 1\nagent: {{model: {{api_key: {{k: {SECRET}}}}}}}\n",
        f"config_version: 1\nlog: {{level: {SECRET}}}\n",
        f"config_version: 1\nchannels: {{slack: {{bot_token: '{SECRET}${{oops'}}}}\n",
        f"config_version: 1\nchannels: {{telegram: {{token: '{SECRET}', enabled: maybe}}}}\n",
    ],
)
def test_secret_values_never_appear_in_errors(tmp_path: Path, body: str) -> None:
    message = load_error(tmp_path, body)
    assert SECRET not in message
    assert "TOPSECRET" not in message


def test_secret_from_environment_never_appears_in_errors(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        "config_version: 1\nagent: {run_timeout_s: '${TOKEN}'}\n",
        {"TOKEN": SECRET},
    )
    assert message.splitlines()[1].startswith("agent.run_timeout_s: ")
    assert SECRET not in message


def test_default_environ_is_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SB_TEST_MODEL", "from-env")
    path = write(tmp_path, "config_version: 1\nagent: {model: {name: '${SB_TEST_MODEL}'}}\n")
    assert load_settings(path).agent.model.name == "from-env"


# --------------------------------------------------------------------------- values


def test_per_channel_overrides_resolve_through_channel_policy(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        config_version: 1
        conversations: {group_scope: chat}
        access: {dm_policy: open, group_policy: all, admins: ["telegram:1"]}
        channels:
          slack: {group_scope: topic, dm_policy: allowlist, allowed_users: [U1, U2]}
          dingtalk: {group_scope: user, group_policy: "${DT_GROUPS:-off}"}
        """,
    )
    settings = load_settings(path, {})
    slack = settings.channel_policy("slack")
    assert slack.group_scope is GroupScope.TOPIC
    assert slack.dm_policy is DmPolicy.ALLOWLIST
    assert slack.group_policy is GroupPolicy.ALL
    assert slack.allowed_users == frozenset({"U1", "U2"})
    dingtalk = settings.channel_policy("dingtalk")
    assert (dingtalk.group_scope, dingtalk.group_policy) == (GroupScope.USER, GroupPolicy.OFF)
    telegram = settings.channel_policy("telegram")
    assert telegram.group_scope is GroupScope.CHAT
    assert telegram.dm_policy is DmPolicy.OPEN
    assert settings.access.admins == ("telegram:1",)


def test_expanded_strings_are_coerced_by_the_schema(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        config_version: 1
        http: {enabled: "${HTTP_ON:-false}", port: "${PORT:-9000}"}
        channels:
          telegram:
            enabled: "${TG_ON}"
            token: "${TG_TOKEN}"
        """,
    )
    settings = load_settings(path, {"TG_ON": "true", "TG_TOKEN": SECRET})
    assert settings.http.port == 9000
    assert not settings.http.enabled
    assert settings.channels.telegram.enabled
    assert SECRET not in repr(settings)


def test_operator_reads_need_no_channel_secrets(tmp_path: Path) -> None:
    config = tmp_path / "service.yaml"
    config.write_text("config_version: 1\nchannels:\n  telegram:\n    enabled: true\n")
    with pytest.raises(ConfigError, match=r"channels\.telegram\.token"):
        load_settings(config, {})
    settings = load_settings(config, {}, require_secrets=False)
    assert settings.channels.telegram.enabled
