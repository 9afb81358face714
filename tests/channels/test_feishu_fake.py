"""The fake Feishu speaks Feishu's wire protocol to the real lark_oapi clients."""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
from collections.abc import AsyncIterator, Iterator
from io import BytesIO
from typing import Any

import aiohttp
import lark_oapi as lark  # type: ignore[import-untyped]
import pytest
from aiohttp import web
from lark_oapi.api.cardkit.v1 import (  # type: ignore[import-untyped]
    Card,
    ContentCardElementRequest,
    ContentCardElementRequestBody,
    CreateCardRequest,
    CreateCardRequestBody,
    SettingsCardRequest,
    SettingsCardRequestBody,
    UpdateCardRequest,
    UpdateCardRequestBody,
)
from lark_oapi.api.im.v1 import (  # type: ignore[import-untyped]
    CreateFileRequest,
    CreateFileRequestBody,
    CreateImageRequest,
    CreateImageRequestBody,
    CreateMessageReactionRequest,
    CreateMessageReactionRequestBody,
    CreateMessageRequest,
    CreateMessageRequestBody,
    DeleteMessageReactionRequest,
    Emoji,
    GetMessageResourceRequest,
    PatchMessageRequest,
    PatchMessageRequestBody,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
)
from lark_oapi.core.exception import ObtainAccessTokenException  # type: ignore[import-untyped]
from lark_oapi.core.token.manager import TokenManager  # type: ignore[import-untyped]
from lark_oapi.core.utils import AESCipher  # type: ignore[import-untyped]
from lark_oapi.event.callback.model.p2_card_action_trigger import (  # type: ignore[import-untyped]
    P2CardActionTriggerResponse,
)
from lark_oapi.ws.client import _new_ping_frame  # type: ignore[import-untyped]
from lark_oapi.ws.exception import ClientException  # type: ignore[import-untyped]

from tests.fakes.common.server import serve_app
from tests.fakes.feishu import TINY_PNG, frames
from tests.fakes.feishu.sdk_thread import LarkWsThread
from tests.fakes.feishu.webhook import encrypt
from tests.fakes.feishu_api import FakeFeishu

CARD = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "hi"}]}}
STREAM = {
    "schema": "2.0",
    "config": {"streaming_mode": True},
    "body": {"elements": [{"tag": "markdown", "content": "", "element_id": "md"}]},
}


@pytest.fixture(autouse=True)
def _no_thread_left() -> Iterator[None]:
    yield
    left = [t.name for t in threading.enumerate() if t.name in ("lark-ws", "fake-feishu")]
    assert left == []


@pytest.fixture
def fake() -> Iterator[FakeFeishu]:
    with FakeFeishu() as server:
        server.add_chat("oc_chat1", chat_type="group")
        yield server


@pytest.fixture
def api(fake: FakeFeishu) -> Any:
    return (
        lark.Client.builder()
        .app_id(fake.app_id)
        .app_secret(fake.app_secret)
        .domain(fake.origin)
        .build()
    )


# ---------------------------------------------------------------------- long connection


class Events:
    """The ws client's handler: records messages (and raises on ``boom``), answers clicks."""

    def __init__(self) -> None:
        self.got: queue.Queue[tuple[str, float]] = queue.Queue()

    def on_message(self, data: Any) -> None:
        text = json.loads(data.event.message.content).get("text", "")
        if text == "boom":
            raise RuntimeError("handler failed")
        self.got.put((data.event.message.message_id, time.monotonic()))

    def on_click(self, data: Any) -> Any:
        self.got.put((data.event.action.value["id"], time.monotonic()))
        return P2CardActionTriggerResponse({"toast": {"type": "info", "content": "ok"}})

    def next(self) -> tuple[str, float]:
        return self.got.get(timeout=5)


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def ws(fake: FakeFeishu, events: Events) -> Iterator[LarkWsThread]:
    handler = (
        lark.EventDispatcherHandler.builder("", "")
        .register_p2_im_message_receive_v1(events.on_message)
        .register_p2_card_action_trigger(events.on_click)
        .build()
    )
    thread = LarkWsThread(fake.app_id, fake.app_secret, domain=fake.origin, handler=handler)
    thread.start()
    fake.wait_connected()
    yield thread
    thread.stop()


def test_an_event_is_acked_with_200_after_the_handler_returned(
    fake: FakeFeishu, ws: LarkWsThread, events: Events
) -> None:
    message_id = fake.push_message("hello", mentions=[fake.bot_mention()])

    got, handled_at = events.next()
    ack = fake.wait_ack(fake.event_ids(message_id)[0])

    assert got == message_id
    assert (ack.code, ack.data) == (200, None)
    assert ack.at >= handled_at
    assert ack.biz_rt_ms is not None
    assert fake.unacked() == []
    fake.wait_until(lambda: fake.pings() >= 1)


def test_a_raising_handler_is_acked_with_500(fake: FakeFeishu, ws: LarkWsThread) -> None:
    event_id = fake.push_event(fake.message_payload("boom"))

    assert fake.wait_ack(event_id).code == 500


def test_a_card_click_is_delivered_as_an_event_and_its_answer_comes_back_in_the_ack(
    fake: FakeFeishu, ws: LarkWsThread, events: Events
) -> None:
    event_id = fake.push_card_action(message_id="om_1", chat_id="oc_chat1", value={"id": "b1"})

    assert events.next()[0] == "b1"
    assert fake.wait_ack(event_id).data == {"toast": {"type": "info", "content": "ok"}}


def test_split_frames_redelivery_and_reconnect_after_a_dropped_socket(
    fake: FakeFeishu, ws: LarkWsThread, events: Events
) -> None:
    message_id = fake.push_message("in three parts", parts=3)
    assert events.next()[0] == message_id
    first = fake.event_ids(message_id)[0]
    fake.wait_ack(first)

    again = fake.redeliver(first)
    assert again != first
    assert events.next()[0] == message_id

    fake.drop_socket()
    fake.wait_connected(count=2)
    later = fake.push_message("after reconnect")
    assert events.next()[0] == later
    assert fake.wait_ack(fake.event_ids(later)[0]).connection == 2


def test_refused_credentials_make_the_sdk_give_up(fake: FakeFeishu) -> None:
    fake.refuse_credentials = True
    handler = lark.EventDispatcherHandler.builder("", "").build()
    thread = LarkWsThread(fake.app_id, "wrong", domain=fake.origin, handler=handler)
    thread.start()
    thread.join()
    thread.stop()

    assert isinstance(thread.error, ClientException)
    assert fake.connections() == 0


async def test_ping_is_answered_with_a_pong_carrying_the_client_config(fake: FakeFeishu) -> None:
    fake.client_config = {**fake.client_config, "PingInterval": 9}
    credentials = {"AppID": fake.app_id, "AppSecret": fake.app_secret}
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{fake.origin}/callback/ws/endpoint", json=credentials) as r:
            url = (await r.json())["data"]["URL"]
        async with session.ws_connect(url) as sock:
            await sock.send_bytes(bytes(_new_ping_frame(7).SerializeToString()))
            pong = frames.parse(await sock.receive_bytes(timeout=5))

    assert (pong.method, pong.headers["type"]) == (frames.CONTROL, "pong")
    assert json.loads(pong.payload)["PingInterval"] == 9
    assert fake.pings() == 1


# ---------------------------------------------------------------------- REST


def _build(builder: Any, **fields: Any) -> Any:
    """``builder.a(x).b(y).build()`` for the SDK's request builders."""
    for name, value in fields.items():
        builder = getattr(builder, name)(value)
    return builder.build()


def _send(chat_id: str, msg_type: str, content: Any, uuid: str | None = None) -> Any:
    raw = content if isinstance(content, str) else json.dumps(content)
    extra = {"uuid": uuid} if uuid else {}
    body = _build(
        CreateMessageRequestBody.builder(),
        receive_id=chat_id,
        msg_type=msg_type,
        content=raw,
        **extra,
    )
    return _build(CreateMessageRequest.builder(), receive_id_type="chat_id", request_body=body)


def _patch(message_id: str, card: dict[str, Any]) -> Any:
    body = _build(PatchMessageRequestBody.builder(), content=json.dumps(card))
    return _build(PatchMessageRequest.builder(), message_id=message_id, request_body=body)


async def test_token_and_messages_through_the_async_client(fake: FakeFeishu, api: Any) -> None:
    sent = await api.im.v1.message.acreate(_send("oc_chat1", "text", {"text": "hi"}))
    twice = [
        await api.im.v1.message.acreate(_send("oc_chat1", "text", {"text": "x"}, uuid="u1"))
        for _ in range(2)
    ]
    stranger = await api.im.v1.message.acreate(_send("oc_nowhere", "text", {"text": "hi"}))

    assert sent.success()
    assert sent.data.message_id.startswith("om_")
    assert twice[0].data.message_id == twice[1].data.message_id
    assert stranger.code == 230002
    assert [m.content["text"] for m in fake.sent_messages("oc_chat1")] == ["hi", "x"]
    call = fake.calls("im.message.create")[0]
    assert fake.tokens_issued() == [call.token]
    assert call.query == {"receive_id_type": "chat_id"}


async def test_a_repeated_uuid_posts_nothing_and_a_long_one_is_refused(
    fake: FakeFeishu, api: Any
) -> None:
    fake.message_payload("question", chat_id="oc_chat1", message_id="om_q")

    def reply(text: str, uuid: str) -> Any:
        body = _build(
            ReplyMessageRequestBody.builder(), msg_type="text",
            content=json.dumps({"text": text}), uuid=uuid,
        )  # fmt: skip
        return _build(ReplyMessageRequest.builder(), message_id="om_q", request_body=body)

    refused = await api.im.v1.message.areply(reply("lost", "u" * 51))
    first = await api.im.v1.message.areply(reply("first", "u" * 50))
    again = await api.im.v1.message.areply(reply("whatever the repeat says", "u" * 50))
    created = await api.im.v1.message.acreate(_send("oc_chat1", "text", {"text": "x"}, "u" * 50))

    assert refused.code == 99992402
    assert first.data.message_id == again.data.message_id == created.data.message_id
    assert [m.content["text"] for m in fake.sent_messages("oc_chat1")] == ["first"]


async def test_reply_in_thread_and_card_patch(fake: FakeFeishu, api: Any) -> None:
    fake.message_payload("question", chat_id="oc_chat1", message_id="om_q")
    body = _build(
        ReplyMessageRequestBody.builder(),
        msg_type="interactive",
        content=json.dumps(CARD),
        reply_in_thread=True,
    )
    reply = await api.im.v1.message.areply(
        _build(ReplyMessageRequest.builder(), message_id="om_q", request_body=body)
    )
    done = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "done"}]}}
    patched = await api.im.v1.message.apatch(_patch(reply.data.message_id, done))
    text = await api.im.v1.message.acreate(_send("oc_chat1", "text", {"text": "t"}))
    not_a_card = await api.im.v1.message.apatch(_patch(text.data.message_id, done))

    assert (patched.code, not_a_card.code) == (0, 230054)
    shown = fake.message(reply.data.message_id)
    assert shown is not None
    assert (shown.parent_id, shown.root_id, shown.reply_in_thread) == ("om_q", "om_q", True)
    assert shown.thread_id.startswith("omt_")
    assert (shown.updated, shown.content, len(shown.versions)) == (True, done, 2)


async def test_cardkit_streaming_sequence(fake: FakeFeishu, api: Any) -> None:
    body = _build(CreateCardRequestBody.builder(), type="card_json", data=json.dumps(STREAM))
    created = await api.cardkit.v1.card.acreate(
        _build(CreateCardRequest.builder(), request_body=body)
    )
    card_id = created.data.card_id
    content = {"type": "card", "data": {"card_id": card_id}}
    shown = await api.im.v1.message.acreate(_send("oc_chat1", "interactive", content))

    async def put(element: str, text: str, sequence: int) -> int:
        body = _build(ContentCardElementRequestBody.builder(), content=text, sequence=sequence)
        request = _build(
            ContentCardElementRequest.builder(),
            card_id=card_id,
            element_id=element,
            request_body=body,
        )
        return int((await api.cardkit.v1.card_element.acontent(request)).code)

    async def stop_streaming(sequence: int) -> int:
        blob = json.dumps({"config": {"streaming_mode": False}})
        body = _build(SettingsCardRequestBody.builder(), settings=blob, sequence=sequence)
        request = _build(SettingsCardRequest.builder(), card_id=card_id, request_body=body)
        return int((await api.cardkit.v1.card.asettings(request)).code)

    assert [await put("md", "He", 1), await put("md", "Hello", 2)] == [0, 0]
    assert [await put("md", "stale", 2), await put("nope", "x", 3)] == [300317, 300313]
    assert await stop_streaming(3) == 0
    assert await put("md", "late", 4) == 300309
    card = fake.card(card_id)
    assert (card.elements, card.streaming_mode, card.sequence) == ({"md": "Hello"}, False, 3)
    assert card.message_ids == (shown.data.message_id,)

    final = _build(Card.builder(), type="card_json", data=json.dumps(CARD))
    body = _build(UpdateCardRequestBody.builder(), card=final, sequence=5, uuid="once")
    request = _build(UpdateCardRequest.builder(), card_id=card_id, request_body=body)
    assert [(await api.cardkit.v1.card.aupdate(request)).code for _ in range(2)] == [0, 0]
    card = fake.card(card_id)
    assert card.data == CARD
    assert [op for op, _ in card.operations] == ["content:md", "content:md", "settings", "update"]


async def test_content_is_checked_like_feishu_does(fake: FakeFeishu, api: Any) -> None:
    big = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "x" * 31_000}]}}
    line = [[{"tag": "text", "text": "x"}]]
    cases = [
        ("interactive", big, 230025),
        ("interactive", {"header": {}}, 230099),
        ("interactive", {"type": "card", "data": {"card_id": "7000"}}, 230099),
        ("image", {"image_key": "img_unknown"}, 230001),
        ("post", {"post": {"zh_cn": {"content": line}}}, 230001),
        ("post", {"zh_cn": {"title": "t", "content": line}}, 0),
        ("text", "not json", 230001),
    ]
    codes = [(await api.im.v1.message.acreate(_send("oc_chat1", t, c))).code for t, c, _ in cases]

    assert codes == [code for _, _, code in cases]


async def test_uploads_and_resource_downloads(fake: FakeFeishu, api: Any) -> None:
    def image(data: bytes) -> Any:
        body = _build(CreateImageRequestBody.builder(), image_type="message", image=BytesIO(data))
        return _build(CreateImageRequest.builder(), request_body=body)

    uploaded = await api.im.v1.image.acreate(image(TINY_PNG))
    rejected = await api.im.v1.image.acreate(image(b"not an image"))
    fake.set_limits(image_bytes=10)
    too_big = await api.im.v1.image.acreate(image(TINY_PNG))
    doc = _build(
        CreateFileRequestBody.builder(), file_type="pdf", file_name="a.pdf", file=BytesIO(b"%PDF")
    )
    filed = api.im.v1.file.create(_build(CreateFileRequest.builder(), request_body=doc))
    key = uploaded.data.image_key
    sent = await api.im.v1.message.acreate(_send("oc_chat1", "image", {"image_key": key}))
    fake.message_payload(
        message_type="file", content=fake.file_content("fk", "r.txt"), message_id="om_f"
    )
    fake.add_resource("om_f", "fk", b"report", kind="file", file_name="r.txt")

    got = api.im.v1.message_resource.get(_resource("om_f", "fk", "file"))
    missing = api.im.v1.message_resource.get(_resource("om_f", "nope", "file"))
    mine = await api.im.v1.message_resource.aget(_resource(sent.data.message_id, key, "image"))

    assert (rejected.code, too_big.code) == (234011, 234006)
    assert fake.uploads()[filed.data.file_key].data == b"%PDF"
    assert (got.file.read(), got.file_name, missing.code) == (b"report", "r.txt", 234003)
    assert mine.file.read() == TINY_PNG


def _resource(message_id: str, key: str, kind: str) -> Any:
    builder = GetMessageResourceRequest.builder()
    return _build(builder, message_id=message_id, file_key=key, type=kind)


async def test_reactions_and_bot_info(fake: FakeFeishu, api: Any) -> None:
    fake.message_payload("react to me", message_id="om_r")
    emoji = _build(Emoji.builder(), emoji_type="THUMBSUP")
    body = _build(CreateMessageReactionRequestBody.builder(), reaction_type=emoji)
    added = await api.im.v1.message_reaction.acreate(
        _build(CreateMessageReactionRequest.builder(), message_id="om_r", request_body=body)
    )
    assert fake.reactions("om_r")[0]["emoji_type"] == "THUMBSUP"
    removed = await api.im.v1.message_reaction.adelete(
        _build(
            DeleteMessageReactionRequest.builder(),
            message_id="om_r",
            reaction_id=added.data.reaction_id,
        )
    )
    info = await api.arequest(
        _build(
            lark.BaseRequest.builder(),
            http_method=lark.HttpMethod.GET,
            uri="/open-apis/bot/v3/info",
            token_types={lark.AccessTokenType.TENANT},
        )
    )

    assert removed.success()
    assert fake.reactions() == []
    bot = json.loads(info.raw.content)["bot"]
    assert (bot["open_id"], bot["app_name"], bot["activate_status"]) == (
        "ou_bot",
        "Switchboard Bot",
        2,
    )


async def test_faults_answer_the_real_codes(fake: FakeFeishu, api: Any) -> None:
    fake.rate_limit("im.message.create", reset_s=3)
    fake.fail_server_error("POST /open-apis/im/v1/messages")
    fake.expire_token_next("im.message.*")
    fake.fail_invalid_card("im.message.create")
    fake.fail_bot_not_in_chat("im.message.create")
    fake.fail_next("/open-apis/im/v1/messages", code=230020, msg="chat rate limit")
    answers = [
        await api.im.v1.message.acreate(_send("oc_chat1", "text", {"text": "x"})) for _ in range(7)
    ]

    assert [(a.code, a.raw.status_code) for a in answers] == [
        (99991400, 429),
        (2200, 500),
        (99991663, 400),
        (230099, 400),
        (230002, 400),
        (230020, 400),
        (0, 200),
    ]
    assert answers[0].raw.headers["x-ogw-ratelimit-reset"] == "3"

    fake.revoke_token()
    stale = await api.im.v1.message.acreate(_send("oc_chat1", "text", {"text": "x"}))
    TokenManager.cache.set(f"self_tenant_token:{fake.app_id}", "", 0)  # what an adapter must do
    fresh = await api.im.v1.message.acreate(_send("oc_chat1", "text", {"text": "x"}))
    assert (stale.code, fresh.code, len(fake.tokens_issued())) == (99991663, 0, 2)


async def test_wrong_credentials_and_missing_token(fake: FakeFeishu) -> None:
    wrong = lark.Client.builder().app_id(fake.app_id).app_secret("nope").domain(fake.origin)
    with pytest.raises(ObtainAccessTokenException):
        await wrong.build().im.v1.message.acreate(_send("oc_chat1", "text", {"text": "x"}))
    url = f"{fake.origin}/open-apis/im/v1/messages"
    async with aiohttp.ClientSession() as session, session.post(url, json={}) as answer:
        body = await answer.json()

    assert body["code"] == 99991661
    assert [c.code for c in fake.calls()] == [10014, 99991661]


# ---------------------------------------------------------------------- HTTP events


@pytest.fixture
async def webhook(fake: FakeFeishu, events: Events) -> AsyncIterator[str]:
    handler = (
        lark.EventDispatcherHandler.builder(fake.encrypt_key, fake.verification_token)
        .register_p2_im_message_receive_v1(events.on_message)
        .build()
    )

    async def receive(request: web.Request) -> web.Response:
        raw = lark.RawRequest()
        raw.uri, raw.body, raw.headers = request.path, await request.read(), dict(request.headers)
        answer = handler.do(raw)
        return web.Response(status=answer.status_code, body=answer.content)

    app = web.Application()
    app.router.add_post("/feishu/events", receive)
    async with serve_app(app) as origin:
        yield f"{origin}/feishu/events"


async def test_webhook_events_pass_the_sdks_checks(
    fake: FakeFeishu, webhook: str, events: Events
) -> None:
    status, answer = await asyncio.to_thread(fake.url_verification, webhook, challenge="c1")
    sealed = await fake.apost_event(
        webhook, fake.message_payload("a", message_id="om_a"), encrypt=True
    )
    plain = await fake.apost_event(webhook, fake.message_payload("b", message_id="om_b"))
    forged = await asyncio.to_thread(
        fake.post_event, webhook, fake.message_payload("c"), bad_signature=True
    )

    assert (status, answer) == (200, {"challenge": "c1"})
    assert (sealed[0], plain[0], forged[0]) == (200, 200, 500)
    assert [events.next()[0], events.next()[0]] == ["om_a", "om_b"]


def test_encryption_round_trips_through_the_sdks_cipher() -> None:
    sealed = encrypt("key", b'{"hello": "world"}')

    assert AESCipher("key").decrypt_str(sealed) == '{"hello": "world"}'
