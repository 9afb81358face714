"""The protocols the edges implement: Channel, AgentBackend and Store (design §1).

The kernel depends only on these; ``bot/registry.py`` loads the configured implementations.

Split by concern into ``bot/ports/{channel,agent,store}.py``; import from here.
"""

from __future__ import annotations

from bot.ports.agent import (
    AgentBackend,
    AgentEvent,
    ApprovalRequest,
    ClarificationRequest,
    FinalAnswer,
    PresentedFile,
    SavedUpload,
    TextDelta,
    ToolActivity,
    Turn,
)
from bot.ports.channel import (
    Admission,
    BotIdentity,
    ButtonLimits,
    Channel,
    ChannelCapabilities,
    ChannelContext,
    ChannelHealth,
    MenuCommand,
    Publish,
    TextUnit,
    WebhookHandler,
    WebhookRoutes,
)
from bot.ports.leases import LeaseStore, NameLock
from bot.ports.store import (
    AccessStore,
    AuditLog,
    ClarificationStore,
    ConversationStore,
    InboundJournal,
    LinkStore,
    OutboxStore,
    ReplicaStore,
    SettingsStore,
    Store,
)

__all__ = [
    "AccessStore",
    "Admission",
    "AgentBackend",
    "AgentEvent",
    "ApprovalRequest",
    "AuditLog",
    "BotIdentity",
    "ButtonLimits",
    "Channel",
    "ChannelCapabilities",
    "ChannelContext",
    "ChannelHealth",
    "ClarificationRequest",
    "ClarificationStore",
    "ConversationStore",
    "FinalAnswer",
    "InboundJournal",
    "LeaseStore",
    "LinkStore",
    "MenuCommand",
    "NameLock",
    "OutboxStore",
    "PresentedFile",
    "Publish",
    "ReplicaStore",
    "SavedUpload",
    "SettingsStore",
    "Store",
    "TextDelta",
    "TextUnit",
    "ToolActivity",
    "Turn",
    "WebhookHandler",
    "WebhookRoutes",
]
