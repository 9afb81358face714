"""The fake workspace: channels, users, messages, files and the message clock.

Plain data with no locking of its own: every caller holds the fake's ``Guard``.
"""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.slack.records import Ephemeral

_CHANNEL_TYPES = {"D": "im", "C": "channel", "G": "group"}
_STORED_SUBTYPES = {None, "file_share", "thread_broadcast", "bot_message"}
_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    team_id: str
    bot_user_id: str
    bot_id: str
    app_id: str
    bot_token: str
    app_token: str


@dataclass(slots=True, kw_only=True)
class Message:
    """A message as the workspace holds it; ``as_api`` renders Slack's message object."""

    channel: str
    ts: str
    user: str
    text: str
    by_bot: bool = False
    blocks: list[dict[str, Any]] | None = None
    files: list[dict[str, Any]] | None = None
    thread_ts: str | None = None
    edited_ts: str | None = None
    reactions: dict[str, list[str]] = field(default_factory=dict)

    def as_api(self, ids: Identity) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "message", "user": self.user, "text": self.text}
        out["ts"] = self.ts
        out["team"] = ids.team_id
        if self.by_bot:
            out.update(bot_id=ids.bot_id, app_id=ids.app_id)
        if self.blocks:
            out["blocks"] = self.blocks
        if self.files:
            out["files"] = self.files
            out["upload"] = False
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        if self.edited_ts:
            out["edited"] = {"user": self.user, "ts": self.edited_ts}
        if self.reactions:
            out["reactions"] = [
                {"name": name, "users": list(users), "count": len(users)}
                for name, users in self.reactions.items()
            ]
        return out


@dataclass(slots=True, kw_only=True)
class StoredFile:
    meta: dict[str, Any]
    content: bytes | None = None  # None while an upload URL was issued but not yet used


class World:
    def __init__(self, ids: Identity) -> None:
        self.ids = ids
        self.origin = ""
        self.channels: dict[str, str] = {}  # id -> channel_type
        self.users: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, list[Message]] = {}
        self.ephemerals: list[Ephemeral] = []  # chat.postEphemeral, in the order posted
        self.files: dict[str, StoredFile] = {}
        self.uploads: dict[str, bytes] = {}  # file_id -> bytes uploaded by the bot
        self.dm_users: dict[str, str] = {}  # DM channel -> the human on the other side
        self.tickets: set[str] = set()
        self.response_urls: dict[str, tuple[str, str]] = {}  # token -> (channel, message ts)
        self._serial = itertools.count(1)
        self._clock = (0, 0)  # last (seconds, microseconds) handed out
        self.add_user(ids.bot_user_id, name="fakebot", is_bot=True)

    def serial(self) -> int:
        return next(self._serial)

    # ------------------------------------------------------------------ clock

    def next_ts(self) -> str:
        """A fresh, strictly increasing message ts close to the wall clock."""
        seconds, micros = self._clock
        now = int(time.time())
        if now > seconds:
            seconds, micros = now, 100
        else:
            micros += 100
            if micros > 999_999:
                seconds, micros = seconds + 1, 100
        self._clock = (seconds, micros)
        return f"{seconds}.{micros:06d}"

    def note_ts(self, ts: str) -> None:
        """Keep the clock ahead of a ts a test chose itself."""
        head, _, tail = ts.partition(".")
        if head.isdigit() and tail.isdigit():
            self._clock = max(self._clock, (int(head), int(tail[:6].ljust(6, "0"))))

    # ------------------------------------------------------------------ directory

    def add_channel(self, channel: str, channel_type: str | None = None) -> None:
        kind = (
            channel_type or self.channels.get(channel) or _CHANNEL_TYPES.get(channel[:1], "channel")
        )
        self.channels[channel] = kind
        self.messages.setdefault(channel, [])

    def resolve_channel(self, channel: object) -> str | None:
        """A known channel id, or a user id which Slack resolves to the bot's DM with them."""
        if not isinstance(channel, str) or not channel:
            return None
        if channel in self.channels:
            return channel
        if channel[:1] in "UW" and channel in self.users:
            for dm, user in self.dm_users.items():
                if user == channel:
                    return dm
            dm = "D" + channel[1:]
            self.add_channel(dm, "im")
            self.dm_users[dm] = channel
            return dm
        return None

    def add_user(
        self,
        user: str,
        *,
        name: str | None = None,
        real_name: str | None = None,
        display_name: str | None = None,
        is_bot: bool = False,
    ) -> dict[str, Any]:
        handle = name or user.lower()
        real = real_name or handle
        profile = {"real_name": real, "display_name": display_name or handle}
        entry = {
            "id": user,
            "team_id": self.ids.team_id,
            "name": handle,
            "real_name": real,
            "is_bot": is_bot,
            "deleted": False,
            "profile": profile,
        }
        self.users[user] = entry
        return entry

    def note_users(self, user: object, text: object) -> None:
        """Users who appear in an event (as author or mention) exist in the workspace."""
        found = [user] if isinstance(user, str) and user else []
        if isinstance(text, str):
            found += _MENTION.findall(text)
        for uid in found:
            if uid not in self.users:
                self.add_user(uid)

    def channel_info(self, channel: str) -> dict[str, Any]:
        kind = self.channels[channel]
        info: dict[str, Any] = {
            "id": channel,
            "name": channel.lower(),
            "is_channel": kind == "channel",
            "is_group": kind == "group",
            "is_im": kind == "im",
            "is_mpim": kind == "mpim",
            "is_private": kind in ("group", "im", "mpim"),
            "is_archived": False,
            "is_member": True,
            "context_team_id": self.ids.team_id,
        }
        if kind == "im" and channel in self.dm_users:
            info["user"] = self.dm_users[channel]
        return info

    # ------------------------------------------------------------------ messages

    def note_event(self, event: dict[str, Any]) -> None:
        """A message event also puts its message into the workspace (for replies, reactions)."""
        world, channel, ts = self, event.get("channel"), event.get("ts")
        if not isinstance(channel, str) or not channel:
            return
        world.add_channel(channel, event.get("channel_type"))
        world.note_users(event.get("user"), event.get("text"))
        if event.get("channel_type") == "im" and isinstance(event.get("user"), str):
            world.dm_users.setdefault(channel, event["user"])
        kind_ok = event.get("type") in ("message", "app_mention")
        if not kind_ok or event.get("subtype") not in _STORED_SUBTYPES or not isinstance(ts, str):
            return
        if world.find(channel, ts) is None:
            user = str(event.get("user") or "")
            world.add_message(
                Message(
                    channel=channel,
                    ts=ts,
                    user=user,
                    text=str(event.get("text") or ""),
                    by_bot=user == world.ids.bot_user_id,
                    files=event.get("files"),
                    thread_ts=event.get("thread_ts"),
                )
            )

    def add_message(self, message: Message) -> Message:
        self.add_channel(message.channel)
        self.note_ts(message.ts)
        self.messages[message.channel].append(message)
        return message

    def find(self, channel: str, ts: object) -> Message | None:
        for message in self.messages.get(channel, []):
            if message.ts == ts:
                return message
        return None

    def remove(self, message: Message) -> None:
        self.messages[message.channel].remove(message)

    def thread(self, channel: str, ts: str) -> list[Message]:
        chain = [m for m in self.messages.get(channel, []) if ts in (m.ts, m.thread_ts)]
        return sorted(chain, key=lambda m: _ts_key(m.ts))

    def render(self, message: Message) -> dict[str, Any]:
        """The message object, with thread summary fields on a thread parent."""
        out = message.as_api(self.ids)
        replies = [m for m in self.thread(message.channel, message.ts) if m.ts != message.ts]
        if replies and message.thread_ts in (None, message.ts):
            out["thread_ts"] = message.ts
            out["reply_count"] = len(replies)
            out["reply_users"] = sorted({m.user for m in replies})
            out["latest_reply"] = replies[-1].ts
        elif message.thread_ts and message.thread_ts != message.ts:
            parent = self.find(message.channel, message.thread_ts)
            if parent is not None:
                out["parent_user_id"] = parent.user
        return out

    def bot_messages(self, channel: str) -> list[dict[str, Any]]:
        mine = [m for m in self.messages.get(channel, []) if m.by_bot]
        return [self.render(m) for m in sorted(mine, key=lambda m: _ts_key(m.ts))]

    # ------------------------------------------------------------------ files

    def file_meta(
        self, file_id: str, *, name: str, mimetype: str, size: int, user: str
    ) -> dict[str, Any]:
        base = f"{self.origin}/files-pri/{self.ids.team_id}-{file_id}"
        return {
            "id": file_id,
            "created": int(time.time()),
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rpartition(".")[2] if "." in name else "text",
            "user": user,
            "size": size,
            "mode": "hosted",
            "is_external": False,
            "url_private": f"{base}/{name}",
            "url_private_download": f"{base}/download/{name}",
        }


def _ts_key(ts: str) -> tuple[int, int]:
    head, _, tail = ts.partition(".")
    return (int(head or 0), int(tail[:6].ljust(6, "0") or 0))
