"""``FakeDingTalk``: the loopback DingTalk the DingTalk adapter's tests talk to.

Everything a robot talks to sits under one origin (``fake.origin``, "http://127.0.0.1:P"):
the stream gateway (``/v1.0/gateway/connections/open`` + the ``/connect`` websocket), the
OpenAPI (``/v1.0/...``), the legacy oapi (``/gettoken``, ``/media/upload``), session webhooks
(``/robot/sendBySession``) and downloads (``/files/...``). The server runs on its own thread
and loop: the SDK blocks its loop in ``requests`` calls, so a fake sharing it would deadlock.

Inbound: ``push_message`` / ``push_callback`` / ``push_event`` queue frames for the stream
(delivered once a suitable socket is live) and never block; ``send_ping``,
``send_disconnect`` and ``drop_socket`` act on the live socket and wait for that, briefly.
What the bot did: ``observe.Observations``; scripted failures: ``faults.FaultScript``.
"""

from __future__ import annotations

import copy
import secrets
import uuid
from typing import Any

from typing_extensions import Unpack

from tests.fakes.common.records import Guard, Redeliver
from tests.fakes.common.server import LoopbackFake
from tests.fakes.dingtalk import inbound, media
from tests.fakes.dingtalk.faults import FaultScript
from tests.fakes.dingtalk.frames import CALLBACK, CHATBOT_TOPIC, DISCONNECT, EVENT, PING, Outgoing
from tests.fakes.dingtalk.inbound import MessageFields
from tests.fakes.dingtalk.observe import Observations
from tests.fakes.dingtalk.server import DingTalkServer
from tests.fakes.dingtalk.session import SESSION_PATH
from tests.fakes.dingtalk.stream import new_message_id
from tests.fakes.dingtalk.world import Identity, World

DEFAULT_GROUP = "cidGroup0001=="


class FakeDingTalk(LoopbackFake[DingTalkServer], Observations, FaultScript):
    """Loopback DingTalk: stream gateway + websocket, OpenAPI, oapi, session webhooks."""

    def __init__(
        self,
        *,
        client_id: str | None = None,
        client_secret: str = "fake-client-secret",  # noqa: S107 - fake credentials
        corp_id: str = "dingcorp1",
    ) -> None:
        self.ids = Identity(
            client_id=client_id or f"dingfake{secrets.token_hex(6)}",
            client_secret=client_secret,
            app_id=str(uuid.uuid4()),
            corp_id=corp_id,
            chatbot_user_id=f"$:LWCP_v1:$bot{secrets.token_hex(8)}",
        )
        self._guard = Guard()
        self._world = World(self.ids)
        self._server = DingTalkServer(self._world, self._guard)

    # ------------------------------------------------------------------ identity and config

    @property
    def client_id(self) -> str:
        """The app's clientId (appKey); also its ``robotCode``."""
        return self.ids.client_id

    @property
    def client_secret(self) -> str:
        return self.ids.client_secret

    @property
    def robot_code(self) -> str:
        return self.ids.client_id

    @property
    def corp_id(self) -> str:
        return self.ids.corp_id

    @property
    def chatbot_user_id(self) -> str:
        """The robot's dingtalkId, as in ``chatbotUserId`` and ``atUsers``."""
        return self.ids.chatbot_user_id

    def set_limits(self, *, image_bytes: int | None = None, file_bytes: int | None = None) -> None:
        """Lower the upload limits (10 MB images, 20 MB otherwise) to hit them cheaply."""
        with self._guard:
            self._world.image_limit = image_bytes or self._world.image_limit
            self._world.file_limit = file_bytes or self._world.file_limit

    # ------------------------------------------------------------------ the organisation

    def add_user(self, staff_id: str, nick: str | None = None) -> None:
        """A user 1:1 sends and IM_ROBOT cards can reach."""
        with self._guard:
            self._world.user(staff_id, nick)

    def add_group(
        self, open_conversation_id: str, members: tuple[str, ...] = (), title: str = ""
    ) -> None:
        """A group with the robot in it (again, after ``remove_from_group``)."""
        with self._guard:
            group = self._world.group(open_conversation_id, title)
            group.robot_in = True
            for staff_id in members:
                self._world.user(staff_id)
                if staff_id not in group.members:
                    group.members.append(staff_id)

    def remove_from_group(self, open_conversation_id: str) -> None:
        """The robot leaves the group: sends and card deliveries there answer 400."""
        with self._guard:
            self._world.group(open_conversation_id).robot_in = False

    def add_download(
        self,
        download_code: str,
        data: bytes,
        *,
        file_name: str = "file.bin",
        content_type: str | None = None,
    ) -> None:
        """Bytes ``messageFiles/download`` hands out a URL for, given ``download_code``."""
        with self._guard:
            self._world.downloads[download_code] = media.download(data, file_name, content_type)

    def add_card_template(self, template_id: str) -> None:
        """A card template ``card/instances`` may instantiate."""
        with self._guard:
            self._world.card_templates.add(template_id)

    # ------------------------------------------------------------------ inbound builders

    picture_content = staticmethod(inbound.picture_content)
    file_content = staticmethod(inbound.file_content)
    rich_text_content = staticmethod(inbound.rich_text_content)
    rich_picture = staticmethod(inbound.rich_picture)

    def message_payload(  # noqa: PLR0913 - mirrors the callback's fields
        self,
        text: str | None = None,
        *,
        conversation_type: str = inbound.ONE_TO_ONE,
        conversation_id: str | None = None,
        sender_staff_id: str = "staff_alice",
        sender_nick: str = "Alice",
        msgtype: str = "text",
        content: dict[str, Any] | None = None,
        at_bot: bool = False,
        at_users: tuple[str, ...] = (),
        msg_id: str | None = None,
        session_ttl_s: float = 3600.0,
        conversation_title: str = "",
        is_admin: bool = False,
    ) -> dict[str, Any]:
        """The decoded chatbot callback ``data`` for a user's message (not delivered).

        The sender (and mentioned users, and a group) join the world; the message gets its own
        sessionWebhook, valid for ``session_ttl_s``. 1:1 chats get a stable ``cid…`` per user;
        groups use ``conversation_id`` (default ``DEFAULT_GROUP``).
        """
        if conversation_type not in (inbound.ONE_TO_ONE, inbound.GROUP):
            raise ValueError("conversation_type is '1' (1:1) or '2' (group)")
        with self._guard:
            sender = self._world.user(sender_staff_id, sender_nick)
            if conversation_type == inbound.ONE_TO_ONE:
                cid, where, title = conversation_id or sender.conversation_id, sender.staff_id, ""
            else:
                cid = where = conversation_id or DEFAULT_GROUP
                group = self._world.group(cid, conversation_title)
                if sender.staff_id not in group.members:
                    group.members.append(sender.staff_id)
                title = group.title
            said = inbound.Said(
                sender=sender,
                conversation_type=conversation_type,
                conversation_id=cid,
                conversation_title=title,
                msgtype=msgtype,
                text=text,
                content=copy.deepcopy(content),
                at_bot=at_bot,
                at_users=tuple(self._world.user(s) for s in at_users),
                msg_id=msg_id or World.new_id("msg", 12),
                is_admin=is_admin,
            )
            session = self._world.open_session(where, session_ttl_s)
            webhook = f"{self.origin}{SESSION_PATH}?session={session.session_id}"
            return inbound.chatbot_message(self.ids, said, session, webhook, World.now_ms())

    # ------------------------------------------------------------------ the stream

    def push_callback(
        self, data: dict[str, Any], *, topic: str = CHATBOT_TOPIC, message_id: str | None = None
    ) -> str:
        """Queue a CALLBACK frame (delivered once a socket subscribed to ``topic`` is live);
        returns its ``messageId``."""
        item = Outgoing(
            message_id=message_id or new_message_id(),
            kind=CALLBACK,
            topic=topic,
            data=copy.deepcopy(data),
        )
        self._server.stream.submit(item)
        return item.message_id

    def push_message(self, text: str | None = None, **fields: Unpack[MessageFields]) -> str:
        """``push_callback(message_payload(text, **fields))``: returns the frame's
        ``messageId``."""
        return self.push_callback(self.message_payload(text, **fields))

    def push_event(self, topic: str, data: dict[str, Any]) -> str:
        """Queue an EVENT frame (for sockets subscribed to EVENT ``*`` or ``topic``)."""
        born = str(World.now_ms())
        headers = {
            "eventId": World.new_id("", 16),
            "eventType": topic,
            "eventBornTime": born,
            "eventCorpId": self.ids.corp_id,
            "eventUnifiedAppId": self.ids.app_id,
        }
        item = Outgoing(
            message_id=new_message_id(),
            kind=EVENT,
            topic=topic,
            data=copy.deepcopy(data),
            headers=headers,
        )
        self._server.stream.submit(item)
        return item.message_id

    def redeliver(self, message_id: str) -> None:
        """Send a pushed frame again: same ``messageId`` and data, next attempt."""
        with self._guard:
            if message_id not in self._server.stream.originals:
                raise KeyError(f"no frame {message_id!r} was pushed")
        self._server.stream.requeue(message_id)

    def redeliver_unacked(self, after_s: float = 1.0, *, times: int = 3) -> None:
        """Redeliver as DingTalk does (off by default): a callback/event not acked 200 within
        ``after_s`` of its delivery, or whose socket closed before its ack, goes out again
        (same ``messageId``, same data; on the live socket or the next one), at most
        ``times`` times per message. ``times=0`` switches it off again."""
        policy = Redeliver(after_s, times) if times > 0 and after_s >= 0 else None
        with self._guard:
            self._server.stream.redeliver = policy

    def send_ping(self) -> str:
        """A SYSTEM ``ping`` with ``{"opaque": <uuid>}``; the ack must echo the data (else a
        protocol error). Returns the frame's messageId."""
        data = {"opaque": str(uuid.uuid4())}
        return str(self._server.run(self._server.stream.send_system(PING, data)))

    def send_disconnect(self, reason: str = "fake gateway restarting") -> str:
        """A SYSTEM ``disconnect``: the socket takes nothing new and is closed once the frame
        is acked (or after 2 s); the client should open a new connection. Returns its id."""
        data = {"reason": reason}
        return str(self._server.run(self._server.stream.send_system(DISCONNECT, data)))

    def drop_socket(self) -> None:
        """Abort the live socket's TCP stream (no close frame)."""
        if not self._server.run(self._server.stream.drop()):
            raise RuntimeError("no live stream connection to drop")
