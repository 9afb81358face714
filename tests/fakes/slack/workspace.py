"""The fake Slack's workspace as a test sets it up and reads it back: files, channels and
users in; the bot's messages, its ephemeral messages and its uploads out. Mixed into
``FakeSlack``; every method takes the fake's lock."""

from __future__ import annotations

from typing import Any

from tests.fakes.common.records import Guard
from tests.fakes.slack.records import Ephemeral
from tests.fakes.slack.world import StoredFile, World


class Workspace:
    _guard: Guard
    _world: World

    def add_file(
        self, file_id: str, content: bytes, *, name: str, mimetype: str = "text/plain"
    ) -> dict[str, Any]:
        """Host a file at its url_private_download; returns the event's file object."""
        with self._guard:
            meta = self._world.file_meta(
                file_id, name=name, mimetype=mimetype, size=len(content), user="UHUMAN01"
            )
            self._world.files[file_id] = StoredFile(meta=meta, content=content)
            return dict(meta)

    def add_channel(self, channel: str, *, channel_type: str | None = None) -> None:
        with self._guard:
            self._world.add_channel(channel, channel_type)

    def add_user(
        self,
        user: str,
        *,
        name: str | None = None,
        real_name: str | None = None,
        display_name: str | None = None,
        is_bot: bool = False,
    ) -> dict[str, Any]:
        with self._guard:
            return self._world.add_user(
                user, name=name, real_name=real_name, display_name=display_name, is_bot=is_bot
            )

    def uploads(self) -> dict[str, bytes]:
        with self._guard:
            return dict(self._world.uploads)

    def channel_messages(self, channel: str) -> list[dict[str, Any]]:
        """The bot's messages in ``channel``, in ts order, as they read now."""
        with self._guard:
            return self._world.bot_messages(channel)

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        """Any message (the bot's or a human's), e.g. to look at its reactions."""
        with self._guard:
            found = self._world.find(channel, ts)
            return None if found is None else self._world.render(found)

    def ephemeral_messages(self, channel: str | None = None) -> list[Ephemeral]:
        """The bot's ``chat.postEphemeral`` messages (in ``channel``, or anywhere), oldest first."""
        with self._guard:
            return [e for e in self._world.ephemerals if channel in (None, e.channel)]
