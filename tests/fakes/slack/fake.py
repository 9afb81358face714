"""``FakeSlack``: the loopback Slack the Slack adapter's tests talk to.

It serves the Web API (``api_base_url``), Socket Mode websockets (the URL
``apps.connections.open`` hands out) and delivers events as signed HTTP POSTs once
``set_http_target`` was called. Its aiohttp server runs on 127.0.0.1:0 on its own thread and
event loop, so a test (or the daemon under test) never serves it and cannot starve it.

Push methods never block. ``wait_*``, ``post_signed`` and ``verify_url`` do, so a test on an
event loop calls them through ``asyncio.to_thread`` (``await_call``/``await_until`` do that).
``disconnect``/``drop_socket``/``stall_socket`` act on the live socket: wait for
``connections()`` first. Close the Slack clients before leaving the ``with`` block; the fake
closes its websockets on exit.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, TypeAlias

from aiohttp import web

from tests.fakes.common.observe import Observing
from tests.fakes.common.records import Guard
from tests.fakes.common.server import LoopbackFake
from tests.fakes.slack import records
from tests.fakes.slack.delivery import Deliverer, SignedPost
from tests.fakes.slack.payloads import (
    Click,
    block_actions,
    changed_event,
    deleted_event,
    event_callback,
    message_events,
)
from tests.fakes.slack.records import EVENTS_API, INTERACTIVE, Call, Delivery, Envelope, Fault
from tests.fakes.slack.server import ThreadedServer
from tests.fakes.slack.web import WebApi
from tests.fakes.slack.workspace import Workspace
from tests.fakes.slack.world import Identity, Message, World


class FakeSlack(LoopbackFake[ThreadedServer], Observing, Workspace):
    """Loopback fake Slack: Web API + Socket Mode websocket + signed HTTP event delivery."""

    Call: TypeAlias = records.Call
    _who = "FakeSlack"

    def __init__(  # noqa: PLR0913 - the contract's signature
        self,
        *,
        bot_token: str = "xoxb-test",  # noqa: S107 - fake credentials
        app_token: str = "xapp-test",  # noqa: S107
        signing_secret: str = "shh-a-test-signing-secret",  # noqa: S107
        team_id: str = "T0001",
        bot_user_id: str = "UBOT0001",
        bot_id: str = "B0001",
        app_id: str = "A0001",
    ) -> None:
        self.ids = Identity(
            team_id=team_id,
            bot_user_id=bot_user_id,
            bot_id=bot_id,
            app_id=app_id,
            bot_token=bot_token,
            app_token=app_token,
        )
        self.signing_secret = signing_secret
        self._guard = Guard()
        self._world = World(self.ids)
        self._web = WebApi(self._world, self._guard)
        self._deliverer = Deliverer(self._world, self._guard, signing_secret)
        app = web.Application()
        self._web.routes(app)
        app.router.add_get("/link/", self._deliverer.websocket)
        self._server = ThreadedServer(
            "fake-slack", app, on_start=self._on_start, on_stop=self._deliverer.stop
        )

    # ------------------------------------------------------------------ lifecycle

    async def _on_start(self) -> None:
        with self._guard:
            self._world.origin = self.origin
        await self._deliverer.start()

    @property
    def api_base_url(self) -> str:
        return f"{self.origin}/api/"

    @property
    def bot_token(self) -> str:
        return self.ids.bot_token

    @property
    def app_token(self) -> str:
        return self.ids.app_token

    # ------------------------------------------------------------------ inbound

    def push_event(
        self,
        event: dict[str, Any],
        *,
        event_id: str | None = None,
        retry_attempt: int = 0,
        retry_reason: str = "",
    ) -> str:
        """Wrap ``event`` in an event_callback and deliver it; returns the event_id."""
        event_id = event_id or f"Ev{uuid.uuid4().hex[:10].upper()}"
        with self._guard:
            self._world.note_event(event)
        envelope = Envelope(
            envelope_id=str(uuid.uuid4()),
            kind=EVENTS_API,
            payload=event_callback(self.ids, dict(event), event_id),
            event_id=event_id,
            retry_attempt=retry_attempt,
            retry_reason=retry_reason,
        )
        self._deliverer.submit(envelope)
        return event_id

    def push_message(  # noqa: PLR0913 - the contract's signature
        self,
        text: str,
        *,
        channel: str = "D0001",
        channel_type: str = "im",
        user: str = "UHUMAN01",
        ts: str | None = None,
        thread_ts: str | None = None,
        files: list[dict[str, Any]] | None = None,
        event_id: str | None = None,
        also_app_mention: bool = False,
    ) -> str:
        """Deliver a human's message; returns its ts. With ``also_app_mention`` an
        ``app_mention`` event for the same message goes first (``event_id`` names the
        ``message`` event's id)."""
        with self._guard:
            self._world.add_channel(channel, channel_type)
            ts = ts or self._world.next_ts()
            parent = self._world.find(channel, thread_ts) if thread_ts else None
            said = Message(
                channel=channel, ts=ts, user=user, text=text, files=files, thread_ts=thread_ts
            )
            events = message_events(self.ids, said, channel_type, parent.user if parent else None)
        if also_app_mention:
            self.push_event(events["app_mention"])
        self.push_event(events["message"], event_id=event_id)
        return ts

    def push_edit(self, channel: str, ts: str, text: str) -> str:
        """The author edits their message ``ts`` to ``text`` (``message_changed``; the same
        ``text`` sends what an unfurl sends: a change that leaves the text as it was).
        Returns the event's ts."""
        with self._guard:
            message = self._world.find(channel, ts)
            if message is None or message.by_bot:
                raise ValueError(f"push_edit: no human message {ts} in {channel}")
            before = message.as_api(self.ids)
            event_ts = self._world.next_ts()
            message.text, message.edited_ts = text, event_ts
            kind = self._world.channels.get(channel, "channel")
            event = changed_event(self.ids, before, message, kind, event_ts)
        self.push_event(event)
        return event_ts

    def push_delete(self, channel: str, ts: str) -> str:
        """The author deletes their message ``ts`` (``message_deleted``); returns the event ts."""
        with self._guard:
            message = self._world.find(channel, ts)
            if message is None or message.by_bot:
                raise ValueError(f"push_delete: no human message {ts} in {channel}")
            before = message.as_api(self.ids)
            self._world.remove(message)
            event_ts = self._world.next_ts()
            kind = self._world.channels.get(channel, "channel")
            event = deleted_event(before, channel, kind, event_ts)
        self.push_event(event)
        return event_ts

    def push_interaction(self, payload: dict[str, Any]) -> None:
        envelope = Envelope(envelope_id=str(uuid.uuid4()), kind=INTERACTIVE, payload=payload)
        self._deliverer.submit(envelope)

    def click_button(  # noqa: PLR0913 - the contract's signature
        self,
        *,
        channel: str,
        message_ts: str,
        action_id: str,
        value: str,
        user: str = "UHUMAN01",
        thread_ts: str | None = None,
    ) -> None:
        """A block_actions payload for a click on a button of a (posted) message."""
        with self._guard:
            world = self._world
            found = world.find(channel, message_ts)
            message = world.render(found) if found else {"type": "message", "ts": message_ts}
            if thread_ts is None and found is not None and found.thread_ts != found.ts:
                thread_ts = found.thread_ts
            token = uuid.uuid4().hex
            world.response_urls[token] = (channel, message_ts)
            world.note_users(user, None)
        click = Click(
            channel=channel,
            message_ts=message_ts,
            action_id=action_id,
            value=value,
            user=user,
            thread_ts=thread_ts,
        )
        url = f"{self.origin}/actions/{token}"
        self.push_interaction(block_actions(self.ids, click, message, url))

    def redeliver(self, event_id: str, *, retry_reason: str = "timeout") -> None:
        """Send the event again, as its newest delivery with ``retry_attempt + 1``."""
        with self._guard:
            latest = self._deliverer.latest[event_id]
        self._deliverer.submit(self._deliverer.retry_of(latest, retry_reason))

    def withhold_acks(self, on: bool) -> None:  # noqa: FBT001 - the contract's signature
        """While on, acks are recorded in ``acks()`` but count as lost: events get retried."""
        with self._guard:
            self._deliverer.withholding = on

    @property
    def ack_timeout_s(self) -> float:
        with self._guard:
            return self._deliverer.ack_timeout_s

    @ack_timeout_s.setter
    def ack_timeout_s(self, seconds: float) -> None:
        with self._guard:
            self._deliverer.ack_timeout_s = seconds

    def set_ack_timeouts(self, *seconds: float) -> None:
        """Ack timeouts of each event's first deliveries: ``seconds[n]`` for retry attempt
        ``n``; later attempts wait ``ack_timeout_s``."""
        with self._guard:
            self._deliverer.ack_timeouts_s = seconds

    def disconnect(self, reason: str = "refresh_requested") -> None:
        """Send ``disconnect`` on the live socket; later events wait for the next connection."""
        self._deliverer.call(self._deliverer.disconnect, reason)

    def drop_socket(self) -> None:
        """Abort the live socket's TCP connection without a close frame."""
        self._deliverer.call(self._deliverer.drop)

    def stall_socket(self) -> None:
        """Leave the live socket open but dead: no pongs, no events, acks lost."""
        self._deliverer.call(self._deliverer.stall)

    def set_http_target(self, url: str) -> None:
        """Deliver events and interactions as signed POSTs to ``url`` from now on."""
        with self._guard:
            self._deliverer.http_target = url
        self._deliverer.kick()

    def post_signed(
        self,
        body: bytes,
        *,
        content_type: str = "application/json",
        bad_signature: bool = False,
        timestamp: int | None = None,
    ) -> int:
        """POST ``body`` to the HTTP target, signed (or wrongly signed); the bot's status."""
        target = self._target()
        post = SignedPost(
            target=target,
            body=body,
            content_type=content_type,
            timeout=10,
            bad_signature=bad_signature,
            timestamp=timestamp,
        )
        status, _ = self._deliverer.run(self._deliverer.post(post), 15)
        if not status:
            raise ConnectionError(f"no answer from {target}")
        return int(status)

    def verify_url(self, target: str, *, challenge: str | None = None) -> dict[str, Any]:
        """Send Slack's signed ``url_verification`` request; returns the JSON answer."""
        challenge = challenge or uuid.uuid4().hex
        request = {"token": "fake-verification-token", "type": "url_verification"}
        body = json.dumps({**request, "challenge": challenge}).encode()
        post = SignedPost(target=target, body=body, timeout=10)
        status, data = self._deliverer.run(self._deliverer.post(post), 15)
        answer = json.loads(data) if data else None
        if not isinstance(answer, dict):
            raise TypeError(f"url_verification got status {status} and body {data!r}")
        return answer

    def _target(self) -> str:
        with self._guard:
            target = self._deliverer.http_target
        if target is None:
            raise RuntimeError("call set_http_target() first")
        return target

    # ------------------------------------------------------------------ what the bot did

    def calls(self, method: str | None = None) -> list[Call]:
        with self._guard:
            return [c for c in self._web.calls if method is None or c.method == method]

    def wait_for_call(
        self, method: str, predicate: Callable[[Call], bool] | None = None, timeout: float = 5.0
    ) -> Call:
        """The first call of ``method`` (made so far or later) that matches ``predicate``."""

        def missing() -> str:
            seen = [c.method for c in self.calls()]
            return f"no matching {method} call; calls so far: {seen}"

        return self._wait_first(lambda: self.calls(method), predicate, timeout, missing)

    async def await_call(
        self,
        method: str,
        predicate: Callable[[Call], bool] | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109 - the wait runs in a worker thread
    ) -> Call:
        return await asyncio.to_thread(self.wait_for_call, method, predicate, timeout)

    def acks(self) -> list[str]:
        """Envelope ids the client acked (in HTTP mode: envelopes answered with 2xx)."""
        with self._guard:
            return list(self._deliverer.ack_log)

    def ack_payloads(self) -> dict[str, dict[str, Any]]:
        with self._guard:
            return dict(self._deliverer.ack_payloads)

    def deliveries(self) -> list[Delivery]:
        with self._guard:
            return list(self._deliverer.deliveries)

    def connections(self) -> int:
        with self._guard:
            return self._deliverer.connections

    # ------------------------------------------------------------------ faults

    def fail_next(
        self,
        method: str,
        *,
        error: str | None = None,
        status: int = 200,
        retry_after: int | None = None,
        times: int = 1,
    ) -> None:
        """Fail the next ``times`` calls of ``method`` (also ``files.upload`` for the upload
        URL and ``files.download`` for private file downloads)."""
        fault = Fault(error=error, status=status, retry_after=retry_after)
        with self._guard:
            self._web.faults.setdefault(method, deque()).extend([fault] * times)

    def revoke_token(self) -> None:
        with self._guard:
            self._web.revoked = True

    def restore_token(self) -> None:
        with self._guard:
            self._web.revoked = False
