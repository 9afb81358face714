"""The organisation the fake DingTalk models: the app's identity, users and groups, session
webhooks, access tokens, files to download, uploads, AI cards and everything the bot sent.

All of it is guarded by the fake's one lock (``records.Guard``); nothing here locks itself.
"""

from __future__ import annotations

import copy
import hashlib
import secrets
import time
from dataclasses import dataclass, field

from tests.fakes.dingtalk.records import CardUpdate, CardView, Sent, Upload

FINISHED_FLOW_STATUSES = frozenset({"3", "5"})  # finished, failed


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    client_id: str  # also the robotCode and the stream appKey
    client_secret: str
    app_id: str  # headers.appId on stream frames
    corp_id: str
    chatbot_user_id: str  # the robot's dingtalkId (chatbotUserId, atUsers)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(slots=True, kw_only=True)
class User:
    staff_id: str
    nick: str

    @property
    def dingtalk_id(self) -> str:
        """The ``senderId`` / ``atUsers[].dingtalkId`` DingTalk shows for this user."""
        return f"$:LWCP_v1:${_digest(self.staff_id)[:24]}"

    @property
    def conversation_id(self) -> str:
        """The ``conversationId`` of the user's 1:1 chat with the robot."""
        return f"cid{_digest('p2p:' + self.staff_id)[:22]}=="


@dataclass(slots=True, kw_only=True)
class Group:
    open_conversation_id: str
    title: str
    members: list[str] = field(default_factory=list)
    robot_in: bool = True


@dataclass(slots=True, kw_only=True)
class Session:
    """A sessionWebhook: where a reply to one inbound message goes, until it expires."""

    session_id: str
    conversation: str  # staff id (1:1) or openConversationId (group)
    expires_ms: int


@dataclass(frozen=True, slots=True)
class Download:
    data: bytes
    file_name: str
    content_type: str


@dataclass(slots=True, kw_only=True)
class Card:
    out_track_id: str
    template_id: str
    params: dict[str, str]
    open_spaces: frozenset[str]  # the spaces whose OpenSpaceModel came with the create call
    space: str = ""
    target_id: str = ""
    delivered: bool = False
    content: dict[str, str] = field(default_factory=dict)
    finalized_keys: set[str] = field(default_factory=set)
    updates: list[CardUpdate] = field(default_factory=list)
    error: bool = False

    @property
    def flow_status(self) -> str:
        return self.params.get("flowStatus", "")

    @property
    def finished(self) -> bool:
        return self.flow_status in FINISHED_FLOW_STATUSES or bool(self.finalized_keys)

    def view(self) -> CardView:
        return CardView(
            out_track_id=self.out_track_id,
            template_id=self.template_id,
            space=self.space,
            target_id=self.target_id,
            delivered=self.delivered,
            params=dict(self.params),
            content=dict(self.content),
            updates=tuple(CardUpdate(u.op, copy.deepcopy(u.body)) for u in self.updates),
            finalized=self.finished,
            flow_status=self.flow_status,
            error=self.error or self.flow_status == "5",
        )


class World:
    def __init__(self, ids: Identity) -> None:
        self.ids = ids
        self.users: dict[str, User] = {}
        self.groups: dict[str, Group] = {}
        self.sessions: dict[str, Session] = {}
        self.sessions_expired = False  # ``expire_sessions()``: every webhook answers 300001
        self.tokens: set[str] = set()  # issued and not revoked (one store for both APIs)
        self.tokens_issued: list[str] = []
        self.token_expire_s = 7200
        self.refuse_credentials = False
        self.downloads: dict[str, Download] = {}  # downloadCode -> file
        self.files: dict[str, Download] = {}  # id served at GET /files/{id}
        self.file_ids: dict[str, str] = {}  # downloadCode -> that id
        self.uploads: dict[str, Upload] = {}  # media_id -> bytes
        self.card_templates: set[str] = set()
        self.cards: dict[str, Card] = {}
        self.sent: list[Sent] = []
        self.image_limit = 10 * 1024 * 1024
        self.file_limit = 20 * 1024 * 1024

    @staticmethod
    def new_id(prefix: str = "", size: int = 16) -> str:
        return f"{prefix}{secrets.token_hex(size)}"

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    # ------------------------------------------------------------------ tokens

    def issue_token(self) -> str:
        """A fresh token on every fetch; earlier ones stay valid until ``revoke_tokens``."""
        token = self.new_id("", 16)
        self.tokens.add(token)
        self.tokens_issued.append(token)
        return token

    def token_ok(self, token: str | None) -> bool:
        return token is not None and token in self.tokens

    # ------------------------------------------------------------------ people and chats

    def user(self, staff_id: str, nick: str | None = None) -> User:
        """The user ``staff_id``, added if unknown (``nick`` renames a known one)."""
        found = self.users.get(staff_id)
        if found is None:
            found = self.users[staff_id] = User(staff_id=staff_id, nick=nick or staff_id)
        elif nick:
            found.nick = nick
        return found

    def group(self, open_conversation_id: str, title: str = "") -> Group:
        found = self.groups.get(open_conversation_id)
        if found is None:
            found = Group(open_conversation_id=open_conversation_id, title=title or "Group")
            self.groups[open_conversation_id] = found
        elif title:
            found.title = title
        return found

    def open_session(self, conversation: str, ttl_s: float) -> Session:
        session = Session(
            session_id=self.new_id("s", 12),
            conversation=conversation,
            expires_ms=self.now_ms() + int(ttl_s * 1000),
        )
        self.sessions[session.session_id] = session
        return session

    def live_session(self, session_id: str) -> Session | None:
        found = self.sessions.get(session_id)
        if found is None or self.sessions_expired or found.expires_ms <= self.now_ms():
            return None
        return found

    # ------------------------------------------------------------------ what the bot sent

    def sent_to(self, conversation: str | None) -> list[Sent]:
        return [s for s in self.sent if conversation is None or s.conversation == conversation]
