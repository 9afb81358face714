"""The configuration schema of design §2 as pydantic models.

Unknown keys are errors (``extra="forbid"``) so a typo never silently falls back to a default.
Secrets are ``SecretStr``. Loading, ``${VAR}`` expansion and error formatting live in
``bot/config/loader.py``.
"""

from __future__ import annotations

from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from typing_extensions import override

from bot.approvals.config import ApprovalSettings
from bot.config.console_settings import WebConsoleSettings
from bot.config.http import HttpSettings
from bot.config.listen import ListenSettings
from bot.config.revisions import EditAfterAnswer
from bot.config.store import StoreSettings
from bot.takeover.config import TakeoverAccess
from bot.usage.config import UsageSettings

DEFAULT_MODEL_BASE_URL = "https://api.openai.com/v1"
CONFIG_VERSION = 1


class GroupScope(StrEnum):
    TOPIC = "topic"
    CHAT = "chat"
    USER = "user"


class BusyPolicy(StrEnum):
    QUEUE = "queue"
    INTERRUPT = "interrupt"
    REJECT = "reject"


class DmPolicy(StrEnum):
    OPEN = "open"
    ALLOWLIST = "allowlist"
    PAIRING = "pairing"


class GroupPolicy(StrEnum):
    MENTION = "mention"
    ALL = "all"
    OFF = "off"
    LISTEN = "listen"
    """As ``mention``, and unaddressed messages are kept as the agent's context."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LogSettings(Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    format: Literal["text", "json"] = "text"


class ModelSettings(Section):
    base_url: str = DEFAULT_MODEL_BASE_URL
    api_key: SecretStr | None = None
    name: str = "gpt-4o-mini"

    @property
    def offline(self) -> bool:
        """No key and the default endpoint: the built-in offline echo model is used."""
        has_key = self.api_key is not None and self.api_key.get_secret_value() != ""
        return not has_key and self.base_url.rstrip("/") == DEFAULT_MODEL_BASE_URL


class RemoteSettings(Section):
    url: str = "http://127.0.0.1:2024"
    assistant_id: str = "agent"
    api_key: SecretStr | None = None


class AgentSettings(Section):
    backend: Literal["embedded", "remote", "echo"] = "embedded"
    model: ModelSettings = ModelSettings()
    system_prompt: str = "You are a helpful assistant."
    run_timeout_s: float = Field(default=900, gt=0)
    max_concurrent_runs: int = Field(default=64, ge=1)
    max_upload_bytes: int = Field(default=20 * 1024 * 1024, ge=0)
    remote: RemoteSettings = RemoteSettings()
    approvals: ApprovalSettings = ApprovalSettings()


class ConversationSettings(Section):
    group_scope: GroupScope = GroupScope.TOPIC
    busy_policy: BusyPolicy = BusyPolicy.QUEUE
    clarification_ttl_s: float = Field(default=1800, gt=0)
    max_inbound_chars: int = Field(default=20_000, ge=100, le=1_000_000)
    """A longer message is refused with a reply, never given to the agent (design §10)."""
    listen: ListenSettings = ListenSettings()
    on_edit_after_answer: EditAfterAnswer = EditAfterAnswer.IGNORE
    delete_answers_of_recalled: bool = False
    """A recalled message's answer is deleted too (where the platform lets the bot delete)."""


class AccessSettings(TakeoverAccess):
    """Who may use the bot (design §10), and the human takeover keys (``TakeoverAccess``)."""

    admins: tuple[str, ...] = ()
    dm_policy: DmPolicy = DmPolicy.PAIRING
    group_policy: GroupPolicy = GroupPolicy.MENTION
    max_pending_pairings: int = Field(default=20, ge=1, le=1000)
    """Pending pairing requests per channel; a new one evicts the oldest (design §10)."""


class DaemonSettings(Section):
    """Process-level knobs that design §2 leaves unnamed; documented in the example config."""

    shutdown_grace_s: float = Field(default=20, ge=0)
    inbound_queue_size: int = Field(default=1000, ge=1)
    journal_retention_days: int = Field(default=7, ge=7)
    outbox_max_attempts: int = Field(default=8, ge=1)
    replica_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._:@-]{1,128}$")
    """This process's name among the replicas of one store; default
    ``<hostname>-<pid>-<random>``, new for every start (design §11)."""
    replica_expiry_s: float = Field(default=15, gt=0)
    """A replica whose heartbeat is older than this is no longer live."""
    rebalance_moves: int = Field(default=2, ge=0, le=100)
    """Idle chats a replica holding more than its fair share hands to less loaded live
    replicas per ownership sweep (about a second); 0 turns rebalancing off (design §11)."""

    @field_validator("replica_id", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """``${SWITCHBOARD_REPLICA_ID:-}`` left empty means the default."""
        return None if isinstance(value, str) and not value.strip() else value


class ChannelSettings(Section):
    """What every channel block has: the switch and the per-channel policy overrides."""

    enabled: bool = False
    group_scope: GroupScope | None = None
    dm_policy: DmPolicy | None = None
    group_policy: GroupPolicy | None = None
    allowed_users: tuple[str, ...] = ()
    ignore_bots: bool = True
    """Drop messages from other bots (the bot's own are always dropped)."""
    start_timeout_s: float = Field(default=60, gt=0)
    """How long connecting may take before the start counts as failed (and is retried)."""
    close_timeout_s: float = Field(default=10, gt=0)
    """How long closing may take; a hung SDK is then abandoned so stop and reload go on."""

    def required_secrets(self) -> tuple[str, ...]:
        """Fields that must be non-empty when the channel is enabled."""
        return ()


class TelegramWebhookSettings(Section):
    url: str
    secret_token: SecretStr
    path: str = "/telegram/webhook"


class TelegramSettings(ChannelSettings):
    token: SecretStr | None = None
    mode: Literal["polling", "webhook"] = "polling"
    api_base_url: str = "https://api.telegram.org"
    webhook: TelegramWebhookSettings | None = None
    max_requests_in_flight: int = Field(default=4, ge=1, le=64)

    @override
    def required_secrets(self) -> tuple[str, ...]:
        return ("token", "webhook") if self.mode == "webhook" else ("token",)


class SlackSettings(ChannelSettings):
    bot_token: SecretStr | None = None
    app_token: SecretStr | None = None
    mode: Literal["socket", "http"] = "socket"
    signing_secret: SecretStr | None = None
    api_base_url: str = "https://slack.com/api/"
    events_path: str = "/slack/events"

    @override
    def required_secrets(self) -> tuple[str, ...]:
        return (
            ("bot_token", "app_token") if self.mode == "socket" else ("bot_token", "signing_secret")
        )


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""The only hosts lark-oapi accepts over plain ``http://``."""


class FeishuSettings(ChannelSettings):
    app_id: str | None = None
    app_secret: SecretStr | None = None
    domain: str = "https://open.feishu.cn"
    """An origin (no path, no trailing slash); ``http://`` only for loopback, as lark-oapi
    requires."""
    mode: Literal["websocket", "webhook"] = "websocket"
    verification_token: SecretStr | None = None
    encrypt_key: SecretStr | None = None
    events_path: str = "/feishu/events"

    @field_validator("domain")
    @classmethod
    def _origin_only(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError("must be an origin such as https://open.feishu.cn")
        if parts.path or parts.query or parts.fragment or parts.username or value.endswith("/"):
            raise ValueError("must be an origin without a path, query or trailing slash")
        if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
            raise ValueError("http:// is allowed only for 127.0.0.1, localhost and ::1")
        _ = parts.port  # raises ValueError for a malformed port
        return value

    @override
    def required_secrets(self) -> tuple[str, ...]:
        base = ("app_id", "app_secret")
        return (*base, "verification_token") if self.mode == "webhook" else base


PUBLIC_DINGTALK_API = "https://api.dingtalk.com"
PUBLIC_DINGTALK_OAPI = "https://oapi.dingtalk.com"


def _base_url(value: str) -> str:
    """An ``http(s)://host[:port][/prefix]`` base without query, fragment or credentials,
    normalised without a trailing slash (so ``base + "/v1.0/..."`` is always one URL)."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError("must be an http(s) URL such as https://api.dingtalk.com")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError("must not carry a query, fragment or credentials")
    _ = parts.port  # raises ValueError for a malformed port
    return value.strip().rstrip("/")


class DingTalkSettings(ChannelSettings):
    """DingTalk has no reply threads, so its groups default to one conversation per member.

    ``api_base_url`` alone decides where the stream gateway and the OpenAPI calls go;
    ``oapi_base_url`` is the legacy host (``/gettoken``, ``/media/upload``): by default the
    public oapi host when ``api_base_url`` is the public one, otherwise ``api_base_url`` itself
    (a proxy or a test fake serves both). ``DINGTALK_OPENAPI_ENDPOINT`` is never consulted.
    """

    group_scope: GroupScope | None = GroupScope.USER
    client_id: str | None = None
    client_secret: SecretStr | None = None
    api_base_url: str = PUBLIC_DINGTALK_API
    oapi_base_url: str | None = None
    card_template_id: str | None = None
    """An AI card template: answers stream into it. Without one, answers arrive whole."""
    card_content_key: str = "content"
    """The template's Markdown variable the answer streams into."""

    @field_validator("api_base_url", "oapi_base_url")
    @classmethod
    def _normalised(cls, value: str | None) -> str | None:
        return None if value is None else _base_url(value)

    @property
    def oapi_origin(self) -> str:
        if self.oapi_base_url is not None:
            return self.oapi_base_url
        if self.api_base_url == PUBLIC_DINGTALK_API:
            return PUBLIC_DINGTALK_OAPI
        return self.api_base_url

    @override
    def required_secrets(self) -> tuple[str, ...]:
        return ("client_id", "client_secret")


class ConsoleSettings(ChannelSettings):
    """The stdin/stdout channel. ``switchboard chat`` enables it on its own."""

    user_id: str = "local"
    display_name: str = "you"


class ChannelsSettings(Section):
    telegram: TelegramSettings = TelegramSettings()
    slack: SlackSettings = SlackSettings()
    feishu: FeishuSettings = FeishuSettings()
    dingtalk: DingTalkSettings = DingTalkSettings()
    console: ConsoleSettings = ConsoleSettings()

    def blocks(self) -> dict[str, ChannelSettings]:
        return {
            "telegram": self.telegram,
            "slack": self.slack,
            "feishu": self.feishu,
            "dingtalk": self.dingtalk,
            "console": self.console,
        }

    def enabled(self) -> dict[str, ChannelSettings]:
        return {name: block for name, block in self.blocks().items() if block.enabled}


class ScheduleSettings(Section):
    """Durable schedules (design §19 "Schedules"): limits and the defaults a new one takes."""

    enabled: bool = True
    max_per_chat: int = Field(default=20, ge=0)
    """Active schedules one chat may have (0: none may be created)."""
    max_total: int = Field(default=1000, ge=0)
    misfire_grace_s: int = Field(default=300, ge=0)
    """A firing missed (the daemon was down) by at most this is delivered late; else skipped."""
    default_timezone: str = "UTC"

    @field_validator("default_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (an IANA name: Europe/Berlin)") from None
        return value


class Settings(Section):
    config_version: int
    state_dir: Path = Path("./var")
    log: LogSettings = LogSettings()
    http: HttpSettings = HttpSettings()
    agent: AgentSettings = AgentSettings()
    conversations: ConversationSettings = ConversationSettings()
    access: AccessSettings = AccessSettings()
    daemon: DaemonSettings = DaemonSettings()
    channels: ChannelsSettings = ChannelsSettings()
    store: StoreSettings = StoreSettings()
    schedules: ScheduleSettings = ScheduleSettings()
    console: WebConsoleSettings = WebConsoleSettings()
    """The operator console in the browser (design §23); not ``channels.console``."""
    usage: UsageSettings = UsageSettings()
    """Prices, budgets and rate limits (design §25)."""
    workspace_dir: Path | None = None
    """Where per-thread workspaces live (``<workspace_dir>/threads/<thread_id>``); default
    ``state_dir``. Several replicas on one PostgreSQL store need it on shared storage."""

    @field_validator("workspace_dir", mode="before")
    @classmethod
    def _blank_is_state_dir(cls, value: object) -> object:
        """``${SWITCHBOARD_WORKSPACE_DIR:-}`` left empty means ``state_dir``."""
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def workspace_root(self) -> Path:
        """The directory holding ``threads/``: ``workspace_dir``, else ``state_dir``."""
        return self.state_dir if self.workspace_dir is None else self.workspace_dir

    @cached_property
    def _policies(self) -> dict[str, ChannelPolicy]:
        """Filled by ``channel_policy`` (pydantic leaves cached properties out of ``==``)."""
        return {}

    def channel_policy(self, channel: str) -> ChannelPolicy:
        """Asked for every message; settings are immutable, so each answer is kept."""
        policy = self._policies.get(channel)
        if policy is None:
            block = self.channels.blocks().get(channel, ChannelSettings())
            policy = self._policies[channel] = ChannelPolicy(
                group_scope=block.group_scope or self.conversations.group_scope,
                dm_policy=block.dm_policy or self.access.dm_policy,
                group_policy=block.group_policy or self.access.group_policy,
                allowed_users=frozenset(block.allowed_users),
                ignore_bots=block.ignore_bots,
            )
        return policy


class ChannelPolicy(Section):
    """The effective access and scope settings of one channel after overrides."""

    group_scope: GroupScope
    dm_policy: DmPolicy
    group_policy: GroupPolicy
    allowed_users: frozenset[str]
    ignore_bots: bool = True
