"""The fake Slack speaks Slack's wire format to the real slack_sdk / slack_bolt clients."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.common.server import serve_app
from tests.fakes.slack_api import FakeSlack

WRONG_TOKEN = "xoxb-nope"  # noqa: S105 - a fake credential


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


@pytest.fixture
def client(fake: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token=fake.bot_token, base_url=fake.api_base_url)


async def _error(call: Any) -> str:
    with pytest.raises(SlackApiError) as raised:
        await call
    return str(raised.value.response["error"])


@asynccontextmanager
async def socket_client(
    fake: FakeSlack, *, ping_interval: float = 5
) -> AsyncIterator[asyncio.Queue[SocketModeRequest]]:
    """A raw Socket Mode client that acks everything and queues what it received."""
    async with _raw_socket_client(fake, ping_interval=ping_interval, auto_ack=True) as client:
        yield client[0]


Ack = Callable[[SocketModeRequest], Awaitable[None]]


@asynccontextmanager
async def socket_client_acking_by_hand(
    fake: FakeSlack,
) -> AsyncIterator[tuple[asyncio.Queue[SocketModeRequest], Ack]]:
    """A raw Socket Mode client that queues what it received and acks only when told to."""
    async with _raw_socket_client(fake, ping_interval=5, auto_ack=False) as client:
        yield client


@asynccontextmanager
async def _raw_socket_client(
    fake: FakeSlack, *, ping_interval: float, auto_ack: bool
) -> AsyncIterator[tuple[asyncio.Queue[SocketModeRequest], Ack]]:
    received: asyncio.Queue[SocketModeRequest] = asyncio.Queue()
    web_client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_base_url)
    sm = SocketModeClient(fake.app_token, web_client=web_client, ping_interval=ping_interval)

    async def ack(request: SocketModeRequest) -> None:
        await sm.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))

    async def listener(_: AsyncBaseSocketModeClient, request: SocketModeRequest) -> None:
        await received.put(request)
        if auto_ack:
            await ack(request)

    sm.socket_mode_request_listeners.append(listener)
    await sm.connect()  # type: ignore[no-untyped-call]
    try:
        yield received, ack
    finally:
        await sm.close()  # type: ignore[no-untyped-call]


async def _next(queue: asyncio.Queue[SocketModeRequest]) -> SocketModeRequest:
    return await asyncio.wait_for(queue.get(), 3)


# ---------------------------------------------------------------------- Web API


async def test_auth_test_answers_with_the_bot_identity(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    response = await client.auth_test()

    assert [response[k] for k in ("user_id", "bot_id", "team_id")] == ["UBOT0001", "B0001", "T0001"]
    assert fake.calls("auth.test")[0].token == fake.bot_token


async def test_tokens_are_checked(fake: FakeSlack) -> None:
    wrong = AsyncWebClient(token=WRONG_TOKEN, base_url=fake.api_base_url)
    app_level = AsyncWebClient(token=fake.app_token, base_url=fake.api_base_url)

    assert await _error(wrong.auth_test()) == "invalid_auth"
    assert await _error(app_level.chat_postMessage(channel="D0001", text="x")) == (
        "not_allowed_token_type"
    )
    assert await _error(wrong.apps_connections_open(app_token=WRONG_TOKEN)) == "invalid_auth"


async def test_post_and_update_a_message(fake: FakeSlack, client: AsyncWebClient) -> None:
    fake.push_message("hi")

    first = await client.chat_postMessage(channel="D0001", text="thinking")
    second = await client.chat_postMessage(channel="D0001", text="more", thread_ts=first["ts"])
    await client.chat_update(channel="D0001", ts=first["ts"], text="done")
    await client.chat_update(channel="D0001", ts=first["ts"], text="done")  # identical is fine

    assert float(second["ts"]) > float(first["ts"])
    assert first["message"]["bot_id"] == "B0001"
    texts = [(m["text"], m.get("thread_ts")) for m in fake.channel_messages("D0001")]
    assert texts == [("done", first["ts"]), ("more", first["ts"])]  # a parent has thread_ts
    assert fake.calls("chat.postMessage")[0].params["text"] == "thinking"
    assert await _error(client.chat_update(channel="D0001", ts="1.000001", text="x")) == (
        "message_not_found"
    )


async def test_parameters_merge_from_query_form_and_json(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    fake.add_channel("C0001")
    section = [{"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}]

    await client.api_call(
        "chat.postMessage",
        params={"channel": "C0001"},
        data={"text": "form", "blocks": json.dumps(section)},
    )
    posted = fake.channel_messages("C0001")[0]
    await client.api_call("chat.update", json={"channel": "C0001", "ts": posted["ts"], "text": "j"})

    assert fake.channel_messages("C0001")[0]["text"] == "j"
    assert fake.channel_messages("C0001")[0]["blocks"] == section  # omitted blocks are kept


def _section(chars: int) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": "x" * chars}}


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"channel": "C0404"}, "channel_not_found"),
        ({"text": "x" * 40_001}, "msg_too_long"),
        ({"blocks": [_section(3001)]}, "invalid_blocks"),
        ({"blocks": [_section(0)]}, "invalid_blocks"),
        ({"blocks": [{"type": "markdown", "text": "x" * 6001}] * 2}, "invalid_blocks"),
        ({"blocks": [{"type": "divider"}] * 51}, "invalid_blocks"),
        ({"blocks": [{"type": "nope"}]}, "invalid_blocks"),
    ],
)
async def test_message_errors(
    fake: FakeSlack, client: AsyncWebClient, arguments: dict[str, Any], error: str
) -> None:
    fake.add_channel("C0001")
    post = client.chat_postMessage(**{"channel": "C0001", "text": "x", **arguments})

    assert await _error(post) == error
    assert fake.calls("chat.postMessage")[0].error == error
    assert fake.channel_messages("C0001") == []


async def test_reactions(fake: FakeSlack, client: AsyncWebClient) -> None:
    ts = fake.push_message("hi")

    await client.reactions_add(channel="D0001", timestamp=ts, name="eyes")
    assert await _error(client.reactions_add(channel="D0001", timestamp=ts, name="eyes")) == (
        "already_reacted"
    )
    await client.reactions_remove(channel="D0001", timestamp=ts, name="eyes")
    await client.reactions_add(channel="D0001", timestamp=ts, name="white_check_mark")

    message = fake.message("D0001", ts)
    assert message is not None
    assert [r["name"] for r in message["reactions"]] == ["white_check_mark"]


async def test_scripted_faults(fake: FakeSlack, client: AsyncWebClient) -> None:
    fake.push_message("hi")
    fake.fail_next("chat.postMessage", status=429, retry_after=7)
    fake.fail_next("chat.postMessage", error="not_in_channel")
    fake.fail_next("chat.postMessage", status=500)

    with pytest.raises(SlackApiError) as limited:
        await client.chat_postMessage(channel="D0001", text="x")
    assert limited.value.response.status_code == 429
    assert limited.value.response.headers["Retry-After"] == "7"
    assert limited.value.response["error"] == "ratelimited"
    assert await _error(client.chat_postMessage(channel="D0001", text="x")) == "not_in_channel"
    with pytest.raises(SlackApiError) as broken:
        await client.chat_postMessage(channel="D0001", text="x")
    assert broken.value.response.status_code == 500
    await client.chat_postMessage(channel="D0001", text="x")


async def test_rate_limit_retry_handler_honours_retry_after(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    fake.push_message("hi")
    fake.fail_next("chat.postMessage", status=429, retry_after=0)
    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=1))

    await client.chat_postMessage(channel="D0001", text="x")

    assert [c.ok for c in fake.calls("chat.postMessage")] == [False, True]


async def test_revoked_token(fake: FakeSlack, client: AsyncWebClient) -> None:
    fake.revoke_token()

    assert await _error(client.auth_test()) == "token_revoked"
    assert await _error(client.apps_connections_open(app_token=fake.app_token)) == "invalid_auth"


async def test_conversations_replies_returns_the_thread(
    fake: FakeSlack, client: AsyncWebClient
) -> None:
    root = fake.push_message("<@UBOT0001> hi", channel="C0001", channel_type="channel")
    await client.chat_postMessage(channel="C0001", text="hello", thread_ts=root)
    fake.push_message("more", channel="C0001", channel_type="channel", thread_ts=root)

    replies = await client.conversations_replies(channel="C0001", ts=root)

    assert [m["text"] for m in replies["messages"]] == ["<@UBOT0001> hi", "hello", "more"]
    assert replies["messages"][0]["reply_count"] == 2
    assert await _error(client.conversations_replies(channel="C0001", ts="1.000001")) == (
        "thread_not_found"
    )


# ---------------------------------------------------------------------- files


async def test_files_upload_v2_round_trip(fake: FakeSlack, client: AsyncWebClient) -> None:
    root = fake.push_message("send me a file")

    done = await client.files_upload_v2(
        channel="D0001", thread_ts=root, filename="a.txt", content=b"hello", title="A"
    )

    file_id = done["file"]["id"]
    assert fake.uploads() == {file_id: b"hello"}
    shared = fake.channel_messages("D0001")[0]
    assert (shared["thread_ts"], shared["files"][0]["title"]) == (root, "A")
    assert [c.method for c in fake.calls()][-3:] == [
        "files.getUploadURLExternal",
        "files.upload",
        "files.completeUploadExternal",
    ]


async def test_private_download_requires_the_bot_token(fake: FakeSlack) -> None:
    info = fake.add_file("F1", b"data", name="a.txt")
    url = info["url_private_download"]

    async with aiohttp.ClientSession() as http:
        async with http.get(url, headers={"Authorization": f"Bearer {fake.bot_token}"}) as good:
            assert (good.status, await good.read()) == (200, b"data")
        async with http.get(url) as anonymous:
            assert anonymous.content_type == "text/html"  # Slack's sign-in page
        async with http.get(url, headers={"Authorization": f"Bearer {WRONG_TOKEN}"}) as wrong:
            assert wrong.content_type == "text/html"

    assert [(c.token, c.ok) for c in fake.calls("files.download")] == [
        (fake.bot_token, True),
        (None, False),
        (WRONG_TOKEN, False),
    ]


# ---------------------------------------------------------------------- Socket Mode


async def test_bolt_socket_mode_receives_and_acks(fake: FakeSlack) -> None:
    app = AsyncApp(client=AsyncWebClient(token=fake.bot_token, base_url=fake.api_base_url))
    seen: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    @app.event("message")
    async def on_message(event: dict[str, Any]) -> None:
        await seen.put(event)

    handler = AsyncSocketModeHandler(app, fake.app_token)
    await handler.connect_async()  # type: ignore[no-untyped-call]
    try:
        ts = fake.push_message("hello")
        event = await asyncio.wait_for(seen.get(), 3)
        await fake.await_until(lambda: len(fake.acks()) == 1)
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]

    assert (event["text"], event["ts"], event["channel_type"]) == ("hello", ts, "im")
    assert fake.acks() == [fake.deliveries()[0].envelope_id]
    assert fake.calls("auth.test")  # bolt's first-event check
    assert fake.connections() == 1


async def test_hello_and_mention_pair(fake: FakeSlack) -> None:
    opener = AsyncWebClient(base_url=fake.api_base_url)
    opened = await opener.apps_connections_open(app_token=fake.app_token)
    async with aiohttp.ClientSession() as http, http.ws_connect(str(opened["url"])) as ws:
        fake.push_message(
            "<@UBOT0001> hi", channel="C0001", channel_type="channel", also_app_mention=True
        )
        frames = [json.loads((await ws.receive(timeout=3)).data) for _ in range(3)]

    assert frames[0]["type"] == "hello"
    events = [f["payload"]["event"] for f in frames[1:]]
    assert [e["type"] for e in events] == ["app_mention", "message"]
    assert events[0]["ts"] == events[1]["ts"]
    ids = {f["payload"]["event_id"] for f in frames[1:]}
    assert len(ids) == 2
    assert frames[1]["retry_attempt"] == 0


async def test_redeliver_carries_retry_attempt(fake: FakeSlack) -> None:
    async with socket_client(fake) as received:
        event_id = fake.push_event({"type": "message", "channel": "D0001", "text": "x"})
        first = await _next(received)
        fake.redeliver(event_id, retry_reason="timeout")
        again = await _next(received)

    assert (first.retry_attempt, again.retry_attempt, again.retry_reason) == (0, 1, "timeout")
    assert first.payload["event_id"] == again.payload["event_id"] == event_id
    assert first.envelope_id != again.envelope_id


async def test_withheld_acks_cause_redelivery(fake: FakeSlack) -> None:
    # The two lost acks are retried after 0.2 s; the third delivery, whose ack counts, waits
    # the default 3 s for it, so a slow ack on a busy machine cannot cause a fourth delivery.
    fake.set_ack_timeouts(0.2, 0.2)
    fake.withhold_acks(on=True)
    # Acking by hand: each ack is sent either before or after withholding ends, never while
    # the switch happens (the third delivery may well arrive before the second ack is seen).
    async with socket_client_acking_by_hand(fake) as (received, ack):
        fake.push_message("hello")
        first = await _next(received)
        await ack(first)
        retry = await _next(received)
        await ack(retry)
        await fake.await_until(lambda: len(fake.acks()) == 2)  # both lost
        fake.withhold_acks(on=False)
        last = await _next(received)
        await ack(last)
        await fake.await_until(lambda: len(fake.acks()) == 3)

    assert [r.retry_attempt for r in (first, retry, last)] == [0, 1, 2]
    assert retry.payload == first.payload
    assert received.empty()  # the third ack counted: no further retry


async def test_disconnect_reconnects_without_losing_events(fake: FakeSlack) -> None:
    async with socket_client(fake) as received:
        await fake.await_until(lambda: fake.connections() == 1)
        fake.disconnect()
        fake.push_message("while reconnecting")
        got = await _next(received)
        assert fake.connections() == 2

    assert got.payload["event"]["text"] == "while reconnecting"
    assert len(fake.calls("apps.connections.open")) == 2


@pytest.mark.parametrize("fault", ["drop_socket", "stall_socket"])
async def test_lost_socket_reconnects_and_delivers(fake: FakeSlack, fault: str) -> None:
    async with socket_client(fake, ping_interval=0.1) as received:
        await fake.await_until(lambda: fake.connections() == 1)
        getattr(fake, fault)()
        fake.push_message("after the fault")
        got = await _next(received)

    assert got.payload["event"]["text"] == "after the fault"
    assert fake.connections() == 2


async def test_button_click_and_response_url(fake: FakeSlack, client: AsyncWebClient) -> None:
    fake.add_channel("D0001")
    label = {"type": "plain_text", "text": "A"}
    button = {"type": "button", "action_id": "choice", "value": "a", "text": label}
    posted = await client.chat_postMessage(
        channel="D0001", text="pick", blocks=[{"type": "actions", "elements": [button]}]
    )
    async with socket_client(fake) as received:
        fake.click_button(channel="D0001", message_ts=posted["ts"], action_id="choice", value="a")
        click = await _next(received)

    payload = click.payload
    assert (click.type, payload["type"]) == ("interactive", "block_actions")
    assert (payload["actions"][0]["value"], payload["actions"][0]["text"]["text"]) == ("a", "A")
    async with aiohttp.ClientSession() as http:
        answer = {"replace_original": True, "text": "You chose A"}
        async with http.post(payload["response_url"], json=answer) as response:
            assert response.status == 200
    assert fake.channel_messages("D0001")[0]["text"] == "You chose A"


# ---------------------------------------------------------------------- HTTP mode


async def test_http_delivery_is_signed_and_retried_on_errors(fake: FakeSlack) -> None:
    requests: asyncio.Queue[tuple[dict[str, str], bytes]] = asyncio.Queue()

    statuses = iter([500, 200])

    async def capture(request: web.Request) -> web.Response:
        await requests.put((dict(request.headers), await request.read()))
        return web.Response(status=next(statuses))

    app = web.Application()
    app.router.add_post("/events", capture)
    # Slack's 3 s for each POST to be answered (the 500 is retried once they have passed): on
    # a busy machine a shorter timeout can run out before a 200 is read, and that delivery
    # would then count as timed out and be sent a third time.
    fake.ack_timeout_s = 3.0
    async with serve_app(app) as origin:
        fake.set_http_target(f"{origin}/events")
        fake.push_message("hello")
        first, body = await asyncio.wait_for(requests.get(), 10)
        retry, retry_body = await asyncio.wait_for(requests.get(), 10)
        await fake.await_until(lambda: len(fake.deliveries()) == 2)

    verifier = SignatureVerifier(fake.signing_secret)
    assert verifier.is_valid_request(body, first)
    assert verifier.is_valid_request(retry_body, retry)
    assert json.loads(body)["event"]["text"] == "hello"
    assert "X-Slack-Retry-Num" not in first
    assert (retry["X-Slack-Retry-Num"], retry["X-Slack-Retry-Reason"]) == ("1", "http_error")
    assert retry_body == body
    assert [d.status for d in fake.deliveries()] == [500, 200]
    assert len(fake.acks()) == 1


async def test_bolt_http_mode_verifies_signatures(fake: FakeSlack) -> None:
    app = AsyncApp(
        client=AsyncWebClient(token=fake.bot_token, base_url=fake.api_base_url),
        signing_secret=fake.signing_secret,
    )
    seen: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    @app.event("message")
    async def on_message(event: dict[str, Any]) -> None:
        await seen.put(event)

    @app.action("choice")
    async def on_click(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        await seen.put(body)

    async with serve_app(app.web_app(path="/slack/events")) as origin:
        target = f"{origin}/slack/events"
        fake.set_http_target(target)
        ts = fake.push_message("over http")
        event = await asyncio.wait_for(seen.get(), 3)
        fake.click_button(channel="D0001", message_ts=ts, action_id="choice", value="v")
        click = await asyncio.wait_for(seen.get(), 3)
        challenge = await asyncio.to_thread(fake.verify_url, target, challenge="c1")
        body = json.dumps({"type": "event_callback", "event": {"type": "message"}}).encode()
        forged = await asyncio.to_thread(fake.post_signed, body, bad_signature=True)
        stale = await asyncio.to_thread(fake.post_signed, body, timestamp=1)
        await fake.await_until(lambda: len(fake.acks()) == 2)

    assert event["text"] == "over http"
    assert click["actions"][0]["value"] == "v"
    assert challenge == {"challenge": "c1"}
    assert (forged, stale) == (401, 401)
    assert [d.status for d in fake.deliveries()] == [200, 200]
