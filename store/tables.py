"""The Store port over any ``Backend``: every table store, built once on the backend's
database (``store.sqlite``, ``store.postgres.store`` add opening, closing and leases)."""

from __future__ import annotations

import logging

from typing_extensions import override

from bot.errors import StoreError
from bot.lifecycle import StartClose
from bot.ports import Store
from store.access import SqlAccessStore
from store.approvals import SqlApprovalStore
from store.audit import SqlAuditLog, SqlSettingsStore
from store.chats import SqlChatDirectory
from store.clarifications import SqlClarificationStore
from store.console_sessions import SqlRevokedSessions
from store.conversations import SqlConversationStore, SqlLinkStore
from store.dialect import Backend
from store.inbound import SqlInboundJournal
from store.journal_window import SqlJournalWindow
from store.mutes import SqlMuteStore
from store.outbox import SqlOutboxStore
from store.replicas import SqlReplicaStore
from store.schedules import SqlScheduleStore
from store.usage import SqlUsageStore

logger = logging.getLogger(__name__)


class Tables(StartClose, Store):
    """The table stores of one database; a subclass opens and closes it."""

    def __init__(self, db: Backend) -> None:
        self._backend = db
        self._inbound = SqlInboundJournal(db)
        self._conversations = SqlConversationStore(db)
        self._links = SqlLinkStore(db)
        self._outbox = SqlOutboxStore(db)
        self._clarifications = SqlClarificationStore(db)
        self._access = SqlAccessStore(db)
        self._audit = SqlAuditLog(db)
        self._settings = SqlSettingsStore(db)
        self._replicas = SqlReplicaStore(db)

    @property
    @override
    def inbound(self) -> SqlInboundJournal:
        return self._inbound

    @property
    @override
    def conversations(self) -> SqlConversationStore:
        return self._conversations

    @property
    @override
    def links(self) -> SqlLinkStore:
        return self._links

    @property
    @override
    def outbox(self) -> SqlOutboxStore:
        return self._outbox

    @property
    @override
    def clarifications(self) -> SqlClarificationStore:
        return self._clarifications

    @property
    @override
    def access(self) -> SqlAccessStore:
        return self._access

    @property
    @override
    def audit(self) -> SqlAuditLog:
        return self._audit

    @property
    @override
    def settings(self) -> SqlSettingsStore:
        return self._settings

    @property
    @override
    def replicas(self) -> SqlReplicaStore:
        return self._replicas

    @property
    def chats(self) -> SqlChatDirectory:
        """What the journal knows of a chat (``bot.ports.chats``: pushes, design §19)."""
        return SqlChatDirectory(self._backend)  # stateless: no attribute of its own

    @property
    def schedules(self) -> SqlScheduleStore:
        """Schedules and their firings (``bot.ports.schedules``, design §19)."""
        return SqlScheduleStore(self._backend)  # stateless: no attribute of its own

    @property
    def approvals(self) -> SqlApprovalStore:
        """Tool calls paused agent runs wait on (``bot.ports.approvals``, design §24)."""
        return SqlApprovalStore(self._backend)  # stateless: no attribute of its own

    @property
    def journal_window(self) -> SqlJournalWindow:
        """The journal's newest entries and times (``bot.ports.activity``: the console)."""
        return SqlJournalWindow(self._backend)  # stateless: no attribute of its own

    @property
    def mutes(self) -> SqlMuteStore:
        """Muted conversations (``bot.ports.mutes``, design §22)."""
        return SqlMuteStore(self._backend)  # stateless: no attribute of its own

    @property
    def console_sessions(self) -> SqlRevokedSessions:
        """Logged-out console sessions (``bot.ports.console_sessions``, design §23)."""
        return SqlRevokedSessions(self._backend)  # stateless: no attribute of its own

    @property
    def usage(self) -> SqlUsageStore:
        """Model usage and message counts (``bot.ports.usage``, design §25)."""
        return SqlUsageStore(self._backend)  # stateless: no attribute of its own

    @override
    async def start(self) -> None:
        """``open``, for ``async with`` (``StartClose``)."""
        await self.open()

    @override
    async def writable(self) -> bool:
        """Commit a one-row write; ``False`` when the database cannot take it (for /readyz):
        unreachable, read-only (a file, a standby), a full disk."""
        db = self._backend
        if not db.is_open:
            return False
        try:
            await db.execute(
                "INSERT INTO write_probe (id, at) VALUES (1, ?)"
                " ON CONFLICT (id) DO UPDATE SET at = excluded.at",
                (db.dialect.time(db.now()),),
            )
        except StoreError as exc:
            logger.warning("store %s is not writable: %s", db.where, exc)
            return False
        return True
