"""Finding, reading and validating the YAML configuration file (design §2).

Every problem becomes one ``ConfigError`` whose message names the key path of each fault, one
per line, so an operator can fix the whole file in one pass; the CLI exits 78 on it (design §13).
Error text is built from key paths and pydantic's ``msg`` only, never from input values, so a
token pasted into the wrong field is not echoed to the terminal or the journal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import NamedTuple

import yaml
from pydantic import SecretStr, ValidationError
from typing_extensions import override
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, ScalarNode

from bot.config.secrets import MIN_SECRET_CHARS, TELEGRAM_SECRET_PATH, auth_secrets
from bot.config.settings import CONFIG_VERSION, ChannelSettings, ChannelsSettings, Settings
from bot.errors import ConfigError

ENV_CONFIG_PATH = "SWITCHBOARD_CONFIG"
DEFAULT_CONFIG_PATH = Path("switchboard.yaml")

_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MERGE_TAG = "tag:yaml.org,2002:merge"


class UnsetRef(NamedTuple):
    """A ``${VAR}`` without a default whose variable was not set; it expanded to ``""``."""

    path: str
    variable: str


def find_config_path(explicit: Path | None, environ: Mapping[str, str]) -> Path:
    """``-c PATH``, else ``$SWITCHBOARD_CONFIG``, else ``./switchboard.yaml`` (design §2)."""
    if explicit is not None:
        path, origin = explicit, "given with -c"
    elif environ.get(ENV_CONFIG_PATH):
        path, origin = Path(environ[ENV_CONFIG_PATH]), f"from ${ENV_CONFIG_PATH}"
    else:
        path = DEFAULT_CONFIG_PATH
        origin = "the default; pass -c PATH, set $SWITCHBOARD_CONFIG or run `switchboard init`"
    path = path.expanduser()
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist ({origin})")
    return path


def load_settings(
    path: Path, environ: Mapping[str, str] | None = None, *, require_secrets: bool = True
) -> Settings:
    """Read, expand and validate ``path``; raise one ``ConfigError`` listing every problem.

    Operator commands that only read ``state_dir`` and ``http`` pass
    ``require_secrets=False``: under systemd the secrets live in the unit's
    ``EnvironmentFile``, which an operator's shell does not have.
    """
    env = os.environ if environ is None else environ
    raw = _parse_yaml(path, _read(path))
    if not isinstance(raw, dict):
        kind = "empty" if raw is None else f"a {type(raw).__name__}"
        raise ConfigError(
            f"{path}: the file is {kind}; expected a mapping starting with "
            f"`config_version: {CONFIG_VERSION}`"
        )
    try:
        expanded, unset = expand_env(raw, env)
    except ConfigError as exc:
        raise ConfigError(f"{path}: invalid configuration\n{exc}") from None
    if not isinstance(expanded, dict):  # pragma: no cover - expand_env keeps the shape
        raise ConfigError(f"{path}: expected a mapping at the top level")
    _check_version(path, expanded)
    problems: list[str] = []
    settings: Settings | None = None
    try:
        settings = Settings.model_validate(expanded)
    except ValidationError as exc:
        problems.extend(_validation_lines(exc, prefix=(), unset=unset))
    if require_secrets:
        problems.extend(_missing_secrets(expanded.get("channels"), unset))
        if settings is not None:
            problems.extend(_missing_tokens(settings, unset))
            problems.extend(_weak_secrets(settings, unset))
    if problems or settings is None:
        raise ConfigError(f"{path}: invalid configuration\n" + "\n".join(problems))
    return settings


# --------------------------------------------------------------------------- ${VAR} expansion


def expand_env(value: object, environ: Mapping[str, str]) -> tuple[object, tuple[UnsetRef, ...]]:
    """Expand ``${VAR}``, ``${VAR:-default}`` and ``$$`` in every string of a parsed YAML tree.

    ``${VAR:-default}`` uses the default when VAR is unset *or empty*, as in the shell, so an
    ``EnvironmentFile`` line ``VAR=`` does not defeat a default. An unset ``${VAR}`` expands to
    ``""`` and is reported back (so is ``${VAR:-}``, the example config's form for optional
    secrets) so errors can say which variable was missing. Mapping keys are not expanded. A
    ``$`` not followed by ``{`` or ``$`` is kept as written.
    """
    unset: list[UnsetRef] = []
    return _expand_node(value, "", environ, unset), tuple(unset)


def _expand_node(
    value: object, path: str, environ: Mapping[str, str], unset: list[UnsetRef]
) -> object:
    if isinstance(value, str):
        return _expand_string(value, path, environ, unset)
    if isinstance(value, dict):
        return {
            key: _expand_node(item, _join(path, key), environ, unset) for key, item in value.items()
        }
    if isinstance(value, list):
        return [_expand_node(item, _join(path, i), environ, unset) for i, item in enumerate(value)]
    return value


def _expand_string(text: str, path: str, environ: Mapping[str, str], unset: list[UnsetRef]) -> str:
    out: list[str] = []
    i = 0
    while (dollar := text.find("$", i)) != -1:
        out.append(text[i:dollar])
        nxt = text[dollar + 1 : dollar + 2]
        if nxt == "$":
            out.append("$")
            i = dollar + 2
        elif nxt == "{":
            close = text.find("}", dollar + 2)
            if close == -1:
                raise ConfigError(
                    f"{path or '<root>'}: `${{` without a closing `}}` (write $$ for a literal $)"
                )
            out.append(_resolve(text[dollar + 2 : close], path, environ, unset))
            i = close + 1
        else:
            out.append("$")
            i = dollar + 1
    out.append(text[i:])
    return "".join(out)


def _resolve(ref: str, path: str, environ: Mapping[str, str], unset: list[UnsetRef]) -> str:
    name, has_default, default = ref.partition(":-")
    if not _VAR_NAME.fullmatch(name) or "${" in default:
        # The reference text is not quoted back: it may be a mistyped literal secret.
        raise ConfigError(
            f"{path or '<root>'}: malformed variable reference; use ${{NAME}} or "
            "${NAME:-default} where NAME is letters, digits and _ (write $$ for a literal $)"
        )
    value = environ.get(name)
    if value is None and not default:
        unset.append(UnsetRef(path, name))
    if has_default:
        return value or default
    return value or ""


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


# --------------------------------------------------------------------------- reading and YAML


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror or exc})") from None


class _StrictLoader(yaml.SafeLoader):
    """``safe_load`` that rejects a key written twice in one mapping (PyYAML keeps the last)."""

    @override
    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, object]:
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            ident = (key_node.tag, key_node.value)
            if ident in seen:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"duplicate key {key_node.value!r}",
                    key_node.start_mark,
                )
            seen.add(ident)
        return super().construct_mapping(node, deep=deep)


def _parse_yaml(path: Path, text: str) -> object:
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        # Only ``problem``/``context`` are used: ``str(exc)`` quotes the offending line, which
        # may hold a secret.
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        what = "; ".join(part for part in (exc.problem, exc.context) if part)
        raise ConfigError(f"{where}: YAML syntax error: {what or 'invalid YAML'}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: YAML error: {type(exc).__name__}") from None


# --------------------------------------------------------------------------- validation


def _check_version(path: Path, data: dict[object, object]) -> None:
    """Stop before schema validation: another version's keys would only produce noise."""
    if "config_version" not in data:
        raise ConfigError(f"{path}: invalid configuration\nconfig_version: field required")
    version = data["config_version"]
    if type(version) is not int or version != CONFIG_VERSION:
        shown = str(version) if isinstance(version, int) else repr(version)
        raise ConfigError(
            f"{path}: invalid configuration\nconfig_version: unsupported version {shown} "
            f"(this Switchboard reads {CONFIG_VERSION})"
        )


def _validation_lines(
    exc: ValidationError, *, prefix: tuple[str, ...], unset: tuple[UnsetRef, ...]
) -> list[str]:
    lines = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        path = ".".join((*prefix, *(str(part) for part in error["loc"])))
        lines.append(f"{path or '<root>'}: {error['msg']}{_unset_hint(path, unset)}")
    return lines


def _missing_secrets(channels: object, unset: tuple[UnsetRef, ...]) -> list[str]:
    """Required secrets of every enabled channel whose block is otherwise valid.

    Each block is validated on its own so these lines join the schema errors of other blocks
    in one report instead of appearing only after those are fixed.
    """
    if not isinstance(channels, dict):
        return []
    lines = []
    for name, default in ChannelsSettings().blocks().items():
        try:
            block = type(default).model_validate(channels.get(name, {}))
        except ValidationError:
            continue  # already reported by the full validation
        if not block.enabled:
            continue
        for field in block.required_secrets():
            if _is_blank(block, field):
                path = f"channels.{name}.{field}"
                lines.append(
                    f"{path}: required when the channel is enabled{_unset_hint(path, unset)}"
                )
    return lines


def _missing_tokens(settings: Settings, unset: tuple[UnsetRef, ...]) -> list[str]:
    """The push API (design §19) and the operator console (design §23) let nobody in without
    their token: one is required when either is enabled."""
    push, console = settings.http.push_api, settings.console
    push_token = "" if push.token is None else push.token.get_secret_value().strip()
    needed = (
        ("http.push_api.token", "the push API", push.enabled and not push_token),
        ("console.token", "the console", console.enabled and not console.token_text),
    )
    return [
        f"{path}: required when {what} is enabled{_unset_hint(path, unset)}"
        for path, what, missing in needed
        if missing
    ]


def _weak_secrets(settings: Settings, unset: tuple[UnsetRef, ...]) -> list[str]:
    """Secrets that let a request in must be long enough not to be guessed: an empty one
    would even match a request that sends none. Blank required ones are reported above."""
    return [
        f"{path}: must be at least {MIN_SECRET_CHARS} characters{_unset_hint(path, unset)}"
        for path, value in auth_secrets(settings)
        if len(value.strip()) < MIN_SECRET_CHARS and (value.strip() or path == TELEGRAM_SECRET_PATH)
    ]


def _is_blank(block: ChannelSettings, field: str) -> bool:
    value: object = getattr(block, field)
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    return value is None or (isinstance(value, str) and not value.strip())


def _unset_hint(path: str, unset: tuple[UnsetRef, ...]) -> str:
    names = sorted(
        {ref.variable for ref in unset if path == ref.path or path.startswith(ref.path + ".")}
    )
    if not names:
        return ""
    if len(names) == 1:
        return f" (environment variable {names[0]} is not set)"
    return f" (environment variables {', '.join(names)} are not set)"
