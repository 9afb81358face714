"""The platform guides (``docs/platforms/``) name only what exists and all the adapters need.

- Every config key a guide names as a dotted path (`` `channels.slack.bot_token` ``) is a key
  of the settings schema.
- Slack: the guide's scopes and events are the manifest's; every Web API method the adapter
  calls has its scope in the manifest (``METHOD_SCOPES``), and the manifest asks for nothing
  without a reason.
- Feishu: the guide's permissions, events and callbacks are ``feishu-permissions.json``'s, and
  they are the events the adapter reads and the fake sends.
- Telegram: the update types the guide names are the ones the adapter asks for.
- DingTalk: the guide's stream topics are the ones the adapter subscribes to, and its
  permissions are ``DINGTALK_PERMISSIONS``, each for APIs the adapter calls.
- The "not set" lines a guide quotes name the variables ``init --channel`` writes.
"""

from __future__ import annotations

import json
import re
import types
import typing
from functools import cache
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel
from slack_sdk.web.async_client import AsyncWebClient
from telegram.constants import UpdateType

from bot.cli.init import PLATFORMS, channel_config, template_text
from bot.config.settings import Settings
from channels.dingtalk.handler import TOPIC
from channels.feishu.inbound import CARD_ACTION_EVENT, MESSAGE_EVENT, RECALLED_EVENT
from channels.telegram.polling import ALLOWED_UPDATES

REPO = Path(__file__).resolve().parents[2]
GUIDES = REPO / "docs" / "platforms"
NAMES = sorted(PLATFORMS)
FENCE = re.compile(r"^\s*(```|~~~)")
CODE = re.compile(r"`([^`]+)`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")

METHOD_SCOPES = {
    "auth_test": None,
    "apps_connections_open": "connections:write",  # the app-level token, not a bot scope
    "chat_postMessage": "chat:write",
    "chat_postEphemeral": "chat:write",
    "chat_update": "chat:write",
    "chat_delete": "chat:write",
    "reactions_add": "reactions:write",
    "reactions_remove": "reactions:write",
    "files_upload_v2": "files:write",  # files.getUploadURLExternal + completeUploadExternal
    "users_info": "users:read",
}
"""Each Slack Web API method the adapter calls → the scope Slack requires for it."""
EVENT_SCOPES = {
    "app_mention": "app_mentions:read",
    "message.channels": "channels:history",
    "message.groups": "groups:history",
    "message.im": "im:history",
    "message.mpim": "mpim:history",
}
OTHER_SLACK_SCOPES = {
    "files:read": "downloads of shared files (url_private_download)",
    "commands": "the slash commands",
}
DINGTALK_PERMISSIONS = {
    "qyapi_robot_sendmsg": (
        "/v1.0/robot/oToMessages/batchSend",
        "/v1.0/robot/groupMessages/send",
        "/v1.0/robot/messageFiles/download",
    ),
    "Card.Instance.Write": ("/v1.0/card/instances", "/v1.0/card/instances/deliver"),
    "Card.Streaming.Write": ("/v1.0/card/streaming",),
}
"""Each DingTalk permission the guide asks for → the OpenAPI paths of the adapter that need it.

DingTalk has no file to import permissions from (unlike Feishu's JSON), so this is the one
list. DingTalk's API reference (help.dingtalk.io) names ``qyapi_robot_sendmsg`` for the three
robot paths; the two ``Card.*`` names are confirmed only by secondary sources.
"""
API_FAMILIES = ("apps", "auth", "chat", "conversations", "files", "reactions", "users", "views")


def _guide(name: str) -> str:
    return (GUIDES / f"{name}.md").read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """The text outside fenced blocks."""
    kept, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            kept.append(line)
    return "\n".join(kept)


def _section(text: str, title: str) -> str:
    """The lines under the heading ``title`` up to the next heading of its level or above."""
    lines, level = [], 0
    for line in text.splitlines():
        match = HEADING.match(line)
        if match and level and len(match.group(1)) <= level:
            break
        if level:
            lines.append(line)
        elif match and match.group(2) == title:
            level = len(match.group(1))
    assert level, f"no heading {title!r}"
    return "\n".join(lines)


def _first_column(section: str) -> set[str]:
    """The code spans in the first cell of each table row."""
    names = set()
    for line in section.splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2 and (found := CODE.search(cells[1])):
            names.add(found.group(1))
    return names


def _unwrap(annotation: object) -> type[BaseModel] | None:
    """The settings model an annotation holds (``X | None`` included), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            if (model := _unwrap(arg)) is not None:
                return model
    return None


def _is_key(path: str) -> bool:
    model: type[BaseModel] | None = Settings
    for part in path.split("."):
        if model is None or part not in model.model_fields:
            return False
        model = _unwrap(model.model_fields[part].annotation)
    return True


def _config_keys(text: str) -> set[str]:
    """Dotted paths under a top-level settings section, as the guides write them."""
    tops = tuple(f"{name}." for name in Settings.model_fields)
    keys = set()
    for span in CODE.findall(_prose(text)):
        first = span.split()[0].rstrip(":") if span.split() else ""
        if first.startswith(tops) and re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", first):
            keys.add(first)
    return keys


@pytest.mark.parametrize("name", NAMES)
def test_every_config_key_a_guide_names_exists(name: str) -> None:
    keys = _config_keys(_guide(name))
    assert f"channels.{name}.enabled" in keys
    assert [key for key in sorted(keys) if not _is_key(key)] == []


@pytest.mark.parametrize("name", NAMES)
def test_the_quoted_unset_lines_name_the_variables_init_writes(name: str) -> None:
    quoted = re.findall(
        r"channels\.(\w+)\.(\w+): required when the channel is enabled "
        r"\(environment variable (\w+) is not set\)",
        _guide(name),
    )
    assert quoted, "the guide quotes what check says when the env file was not loaded"
    config = channel_config(name, Path("switchboard.yaml"))
    for channel, field, variable in quoted:
        assert channel == name
        assert f"    {field}: ${{{variable}}}\n" in config


@pytest.mark.parametrize("name", NAMES)
def test_each_guide_has_the_online_check_and_three_mistakes(name: str) -> None:
    text = _guide(name)
    assert f"switchboard init --channel {name}" in text
    assert f"channel {name}" in _section(text, "Steps")
    mistakes = _section(text, "Common mistakes")
    assert [line[:3] for line in mistakes.splitlines() if re.match(r"\d\. ", line)] == [
        "1. ",
        "2. ",
        "3. ",
    ]


def test_the_readme_and_operations_link_every_guide() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    operations = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    for name in NAMES:
        assert f"(docs/platforms/{name}.md)" in readme
        assert f"(platforms/{name}.md)" in operations


# --------------------------------------------------------------------------- Slack


@cache
def _manifest() -> dict[str, typing.Any]:
    loaded = yaml.safe_load(template_text("slack-manifest.yaml"))
    assert isinstance(loaded, dict)
    return loaded


def _manifest_scopes() -> set[str]:
    return set(_manifest()["oauth_config"]["scopes"]["bot"])


def _manifest_events() -> set[str]:
    return set(_manifest()["settings"]["event_subscriptions"]["bot_events"])


def _slack_calls() -> set[str]:
    """Web API methods named in the adapter's source (``.chat_update(``, ``.reactions_add``)."""
    methods = {
        name
        for name in dir(AsyncWebClient)
        if not name.startswith("_") and name.split("_")[0] in API_FAMILIES
    }
    source = "\n".join(p.read_text() for p in (REPO / "channels" / "slack").glob("*.py"))
    return {name for name in re.findall(r"\.([a-zA-Z_0-9]+)\b", source) if name in methods}


def test_slack_guide_scopes_and_events_are_the_manifests() -> None:
    text = _guide("slack")
    assert _first_column(_section(text, "Bot token scopes")) == _manifest_scopes()
    assert _first_column(_section(text, "Bot events")) == _manifest_events()


def test_every_slack_method_the_adapter_calls_has_its_scope_in_the_manifest() -> None:
    calls = _slack_calls()
    assert {"chat_postMessage", "files_upload_v2", "auth_test"} <= calls
    assert calls - METHOD_SCOPES.keys() == set(), "add the new method's scope to METHOD_SCOPES"
    bot_scopes = {METHOD_SCOPES[call] for call in calls} - {None, "connections:write"}
    assert bot_scopes <= _manifest_scopes()
    assert {EVENT_SCOPES[event] for event in _manifest_events()} <= _manifest_scopes()


def test_the_slack_manifest_asks_for_nothing_without_a_reason() -> None:
    reasons = {*METHOD_SCOPES.values(), *EVENT_SCOPES.values(), *OTHER_SLACK_SCOPES}
    assert _manifest_scopes() <= reasons
    assert _manifest_events() <= EVENT_SCOPES.keys()
    settings = _manifest()["settings"]
    assert settings["socket_mode_enabled"] is True
    assert settings["interactivity"]["is_enabled"] is True
    assert _manifest()["features"]["app_home"]["messages_tab_enabled"] is True
    commands = [entry["command"] for entry in _manifest()["features"]["slash_commands"]]
    assert "/status" not in commands  # Slack keeps it for itself and refuses the manifest


# --------------------------------------------------------------------------- Feishu


@cache
def _feishu() -> dict[str, typing.Any]:
    loaded = json.loads(template_text("feishu-permissions.json"))
    assert isinstance(loaded, dict)
    return loaded


def test_feishu_guide_permissions_are_the_json_ones() -> None:
    listed = _first_column(_section(_guide("feishu"), "Permissions"))
    data = _feishu()
    assert data["scopes"]["user"] == []
    assert listed == {*data["scopes"]["tenant"], *data["optional_scopes"]["tenant"]}


def test_feishu_events_match_the_json_the_adapter_and_the_fake() -> None:
    listed = _first_column(_section(_guide("feishu"), "Events and callbacks"))
    data = _feishu()
    assert listed == {*data["events"], *data["callbacks"]}
    assert listed == {MESSAGE_EVENT, RECALLED_EVENT, CARD_ACTION_EVENT}
    fake = (REPO / "tests" / "fakes" / "feishu" / "inbound.py").read_text()
    assert set(re.findall(r'header\(ids, "([a-z_.0-9]+)"', fake)) == listed


# --------------------------------------------------------------------------- Telegram


def test_telegram_guide_names_the_update_types_the_adapter_asks_for() -> None:
    kinds = {kind.value for kind in UpdateType}
    named = {span for span in CODE.findall(_prose(_guide("telegram"))) if span in kinds}
    assert named == set(ALLOWED_UPDATES)


# --------------------------------------------------------------------------- DingTalk


def test_dingtalk_permissions_are_the_list_and_the_adapter_calls_their_apis() -> None:
    text = _guide("dingtalk")
    assert _first_column(_section(text, "Permissions")) == DINGTALK_PERMISSIONS.keys()
    grant = re.search(r"\*\*Grant the permissions\*\*.*?(?=\n\d+\. )", text, re.DOTALL)
    assert grant is not None, "the step that grants the permissions"
    assert set(CODE.findall(grant.group())) == DINGTALK_PERMISSIONS.keys()
    source = "\n".join(p.read_text() for p in (REPO / "channels" / "dingtalk").glob("*.py"))
    called = set(re.findall(r'"(/v1\.0/(?:robot|card)/[A-Za-z/]+)"', source))
    assert called == {path for paths in DINGTALK_PERMISSIONS.values() for path in paths}


def test_dingtalk_topics_are_the_ones_the_adapter_subscribes_to() -> None:
    listed = _first_column(_section(_guide("dingtalk"), "Stream topics"))
    assert listed == {TOPIC}
    adapter = (REPO / "channels" / "dingtalk" / "adapter.py").read_text()
    assert re.findall(r"handlers = \{(\w+): ", adapter) == ["TOPIC"]  # one topic, this one
