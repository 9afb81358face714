"""``FakeFeishu``: the loopback Feishu/Lark open platform the Feishu adapter's tests talk to.

Point the real SDK at ``fake.origin`` (``lark.Client.builder()...domain(fake.origin)`` and
``lark.ws.Client(fake.app_id, fake.app_secret, domain=fake.origin, ...)``). The server runs
on its own thread and loop (the SDK blocks inside its async calls), and every instance has
its own ``app_id`` because lark_oapi caches tokens process-wide by app_id.

Inbound: ``push_message`` / ``push_card_action`` / ``push_event`` deliver over the long
connection (queued until one is live), ``post_event`` / ``url_verification`` over HTTP.
Push methods never block; ``wait_*``, ``post_event``, ``url_verification``, ``drop_socket``
and ``close_socket`` do (a test on an event loop uses the ``await_*``/``a*`` forms).
What the bot did: see ``observe.Observations``; scripted failures: ``faults.FaultScript``.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from typing_extensions import Unpack

from tests.fakes.common.records import Guard, Redeliver
from tests.fakes.common.server import LoopbackFake
from tests.fakes.feishu import inbound
from tests.fakes.feishu.faults import FaultScript
from tests.fakes.feishu.inbound import ClickFields, MessageFields
from tests.fakes.feishu.longconn import Outgoing
from tests.fakes.feishu.observe import Observations
from tests.fakes.feishu.records import Upload
from tests.fakes.feishu.server import FeishuServer
from tests.fakes.feishu.webhook import Webhook
from tests.fakes.feishu.world import Identity, StoredMessage, World


class FakeFeishu(LoopbackFake[FeishuServer], Observations, FaultScript):
    """Loopback Feishu: REST ``/open-apis``, long connection ``/ws``, HTTP event delivery."""

    def __init__(  # noqa: PLR0913 - identity knobs
        self,
        *,
        app_id: str | None = None,
        app_secret: str = "fake-app-secret",  # noqa: S107 - fake credentials
        bot_open_id: str = "ou_bot",
        bot_name: str = "Switchboard Bot",
        verification_token: str = "fake-verification-token",  # noqa: S107
        encrypt_key: str = "fake-encrypt-key",
    ) -> None:
        self.ids = Identity(
            app_id=app_id or f"cli_fake_{secrets.token_hex(4)}",
            app_secret=app_secret,
            bot_open_id=bot_open_id,
            bot_name=bot_name,
            tenant_key="tenant_fake",
            verification_token=verification_token,
            encrypt_key=encrypt_key,
        )
        self._guard = Guard()
        self._world = World(self.ids)
        self._server = FeishuServer(self._world, self._guard)
        self._webhook = Webhook(self.ids)

    # ------------------------------------------------------------------ identity and config

    @property
    def app_id(self) -> str:
        return self.ids.app_id

    @property
    def app_secret(self) -> str:
        return self.ids.app_secret

    @property
    def bot_open_id(self) -> str:
        return self.ids.bot_open_id

    @property
    def bot_name(self) -> str:
        return self.ids.bot_name

    @property
    def tenant_key(self) -> str:
        return self.ids.tenant_key

    @property
    def verification_token(self) -> str:
        return self.ids.verification_token

    @property
    def encrypt_key(self) -> str:
        return self.ids.encrypt_key

    @property
    def client_config(self) -> dict[str, int]:
        """The ClientConfig discovery (and every pong) hands the SDK; assign to change it."""
        with self._guard:
            return dict(self._server.creds.client_config)

    @client_config.setter
    def client_config(self, config: dict[str, int]) -> None:
        with self._guard:
            self._server.creds.client_config = dict(config)

    def set_limits(self, *, image_bytes: int | None = None, file_bytes: int | None = None) -> None:
        """Lower the upload limits (10 MB / 30 MB) so tests can hit them cheaply."""
        with self._guard:
            self._world.image_limit = image_bytes or self._world.image_limit
            self._world.file_limit = file_bytes or self._world.file_limit

    # ------------------------------------------------------------------ the tenant

    def add_chat(self, chat_id: str, *, chat_type: str = "group", user: str | None = None) -> None:
        """A chat the bot is in (``user``: the other side of a p2p chat)."""
        with self._guard:
            self._world.add_chat(chat_id, chat_type, user)

    def remove_chat(self, chat_id: str) -> None:
        """The bot leaves (or is removed from) ``chat_id``: sends there answer 230002."""
        with self._guard:
            self._world.chats.pop(chat_id, None)

    def add_resource(  # noqa: PLR0913 - the contract's signature
        self,
        message_id: str,
        key: str,
        data: bytes,
        *,
        kind: str = "image",
        file_name: str | None = None,
        content_type: str = "application/octet-stream",
    ) -> None:
        """Serve ``data`` at ``GET .../messages/{message_id}/resources/{key}?type={kind}``."""
        upload = Upload(
            key=key,
            kind=kind,
            data=data,
            file_name=file_name or key,
            file_type=kind,
            content_type=content_type,
        )
        with self._guard:
            self._world.resources[(message_id, key)] = upload

    # ------------------------------------------------------------------ inbound builders

    mention = staticmethod(inbound.mention)
    post_content = staticmethod(inbound.post_content)
    image_content = staticmethod(inbound.image_content)
    file_content = staticmethod(inbound.file_content)

    def bot_mention(self, key: str = "@_user_1") -> dict[str, Any]:
        """The ``mentions`` entry for an @-mention of the bot (the text carries ``key``)."""
        return inbound.mention(key, self.bot_open_id, self.bot_name, self.tenant_key)

    def message_payload(  # noqa: PLR0913 - mirrors the event's fields
        self,
        text: str | None = None,
        *,
        chat_id: str = "oc_chat1",
        chat_type: str = "p2p",
        sender_open_id: str = "ou_u1",
        sender_type: str = "user",
        message_type: str = "text",
        content: dict[str, Any] | None = None,
        root_id: str = "",
        parent_id: str = "",
        thread_id: str = "",
        mentions: list[dict[str, Any]] | None = None,
        message_id: str | None = None,
        event_id: str | None = None,
    ) -> dict[str, Any]:
        """An ``im.message.receive_v1`` event (not delivered); the message becomes known to
        the fake (reply target, resources) and the bot joins ``chat_id``."""
        said = inbound.Said(
            message_id=message_id or World.new_id("om_"),
            chat_id=chat_id,
            chat_type=chat_type,
            sender_open_id=sender_open_id,
            sender_type=sender_type,
            message_type=message_type,
            content=_content(message_type, text, content),
            root_id=root_id,
            parent_id=parent_id,
            thread_id=thread_id,
            mentions=list(mentions or []),
        )
        payload = inbound.message_received(self.ids, said, event_id)
        with self._guard:
            self._world.add_chat(chat_id, chat_type, sender_open_id)
            self._world.store(_stored(said, payload["event"]["message"]["content"]))
        return payload

    def card_action_payload(  # noqa: PLR0913 - mirrors the callback's fields
        self,
        *,
        message_id: str,
        chat_id: str,
        value: dict[str, Any],
        open_id: str = "ou_u1",
        action_tag: str = "button",
        event_id: str | None = None,
    ) -> dict[str, Any]:
        click = inbound.Click(
            message_id=message_id,
            chat_id=chat_id,
            value=value,
            open_id=open_id,
            action_tag=action_tag,
        )
        return inbound.card_action(self.ids, click, event_id)

    # ------------------------------------------------------------------ long connection

    def push_event(self, payload: dict[str, Any], *, parts: int = 1) -> str:
        """Deliver a schema-2.0 event (split into ``parts`` frames); returns its event_id."""
        header = payload["header"]
        item = Outgoing(header["event_id"], header["event_type"], payload, parts)
        self._server.longconn.submit(item)
        return str(item.event_id)

    def push_message(
        self, text: str | None = None, *, parts: int = 1, **fields: Unpack[MessageFields]
    ) -> str:
        """Deliver a user's message (see ``message_payload``); returns its message_id.
        ``event_ids(message_id)`` names the event(s) that carried it."""
        payload = self.message_payload(text, **fields)
        self.push_event(payload, parts=parts)
        return str(payload["event"]["message"]["message_id"])

    def push_recall(self, message_id: str, *, deliver: bool = True) -> str:
        """The sender recalls their message: replies to it are refused from now on (230011)
        and ``im.message.recalled_v1`` is delivered (``deliver=False``: not yet, as when the
        event is late); returns its event_id."""
        with self._guard:
            found = self._world.messages.get(message_id)
            if found is None or found.sender_type == "app":
                raise ValueError(f"push_recall: no user message {message_id}")
            found.deleted = True
            payload = inbound.message_recalled(self.ids, message_id, found.chat_id)
        return self.push_event(payload) if deliver else str(payload["header"]["event_id"])

    def push_card_action(self, **fields: Unpack[ClickFields]) -> str:
        """Deliver ``card.action.trigger`` (see ``card_action_payload``) as an event frame
        (``type=event``: the SDK drops ``type=card`` frames); returns its event_id. The ack
        carries the handler's answer."""
        return self.push_event(self.card_action_payload(**fields))

    def event_ids(self, message_id: str) -> list[str]:
        """The event ids (first delivery and redeliveries) that carried ``message_id``."""
        with self._guard:
            payloads = self._server.longconn.payloads
            return [
                eid
                for eid, payload in payloads.items()
                if payload.get("event", {}).get("message", {}).get("message_id") == message_id
            ]

    def redeliver(self, event_id: str, *, new_event_id: bool = True) -> str:
        """Send an event again, by default under a new ``header.event_id`` (the message_id
        stays): how Feishu redelivers an event it saw no timely ack for."""
        with self._guard:
            payload = self._server.longconn.payloads[event_id]
        again = secrets.token_hex(16) if new_event_id else event_id
        return self.push_event(inbound.with_event_id(payload, again))

    def redeliver_unacked(self, after_s: float = 1.0, times: int = 3) -> None:
        """Redeliver as Feishu does (off by default): every later delivery is checked
        ``after_s`` after it went out; unless its frame was acked 200 by then, the event is
        sent again under a new ``event_id`` (same payload), at most ``times`` times per
        message. ``times=0`` (or ``after_s`` < 0) switches it off again. Each check is kept:
        ``redelivery_checks()``; those that sent the event again: ``redeliveries()``."""
        policy = Redeliver(after_s, times) if times > 0 and after_s >= 0 else None
        with self._guard:
            self._server.longconn.redeliver = policy

    def drop_socket(self) -> None:
        """Abort the live connection's TCP stream (no close frame); the SDK reconnects."""
        if not self._server.run(self._server.longconn.drop()):
            raise RuntimeError("no live long connection to drop")

    def close_socket(self, code: int = 1000) -> None:
        """Close the live connection with a close frame."""
        if not self._server.run(self._server.longconn.close(code)):
            raise RuntimeError("no live long connection to close")

    # ------------------------------------------------------------------ HTTP events mode

    def post_event(
        self,
        url: str,
        payload: dict[str, Any],
        *,
        encrypt: bool = False,
        bad_signature: bool = False,
    ) -> tuple[int, Any]:
        """POST an event to the bot's webhook as Feishu does (blocking); (status, answer)."""
        return self._webhook.post_event(
            url, payload, encrypt_body=encrypt, bad_signature=bad_signature
        )

    async def apost_event(
        self, url: str, payload: dict[str, Any], *, encrypt: bool = False
    ) -> tuple[int, Any]:
        return await asyncio.to_thread(self.post_event, url, payload, encrypt=encrypt)

    def url_verification(
        self, url: str, *, encrypt: bool | None = None, challenge: str | None = None
    ) -> tuple[int, Any]:
        """Send the challenge request (encrypted when an encrypt key is set, by default)."""
        return self._webhook.url_verification(url, encrypt_body=encrypt, challenge=challenge)

    async def aurl_verification(
        self, url: str, *, encrypt: bool | None = None, challenge: str | None = None
    ) -> tuple[int, Any]:
        return await asyncio.to_thread(
            self.url_verification, url, encrypt=encrypt, challenge=challenge
        )


def _content(message_type: str, text: str | None, content: dict[str, Any] | None) -> dict[str, Any]:
    if content is not None:
        return content
    if message_type == "text":
        return {"text": text or ""}
    if message_type == "post":
        return inbound.post_content([[{"tag": "text", "text": text or ""}]])
    raise ValueError(f"message_type {message_type!r} needs content=")


def _stored(said: inbound.Said, raw: str) -> StoredMessage:
    return StoredMessage(
        message_id=said.message_id,
        chat_id=said.chat_id,
        chat_type=said.chat_type,
        msg_type=said.message_type,
        content=said.content,
        raw_content=raw,
        sender_id=said.sender_open_id,
        sender_type=said.sender_type,
        parent_id=said.parent_id,
        root_id=said.root_id,
        thread_id=said.thread_id,
    )
