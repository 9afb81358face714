"""The fake DingTalk speaks DingTalk's wire protocol to the real dingtalk_stream SDK.

Where the SDK works offline it drives the fake unchanged (stream, acks, session replies, token,
AI cards, download URLs); elsewhere the wire is driven directly (``tests.fakes.dingtalk.raw``).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import httpx
import pytest
from dingtalk_stream import AICardReplier, ChatbotHandler, ChatbotMessage, Credential
from dingtalk_stream import DingTalkStreamClient as StreamClient

from tests.fakes.dingtalk import codes, raw
from tests.fakes.dingtalk.sdk import ScriptedBot, StreamTask, pointed_at
from tests.fakes.dingtalk_api import TINY_PNG, FakeDingTalk

TOPIC = ChatbotMessage.TOPIC
TEMPLATE = "tpl.schema"
OPEN = "/v1.0/gateway/connections/open"
BATCH_SEND = "/v1.0/robot/oToMessages/batchSend"
TOKEN = "x-acs-dingtalk-access-token"  # noqa: S105 - a header name


@pytest.fixture(autouse=True)
def _no_thread_left() -> Iterator[None]:
    yield
    assert [t.name for t in threading.enumerate() if t.name == "fake-dingtalk"] == []


@pytest.fixture
def fake() -> Iterator[FakeDingTalk]:
    with FakeDingTalk() as server:
        yield server


@pytest.fixture
def client(fake: FakeDingTalk) -> Iterator[Any]:
    """The SDK's client, its module globals pointed at the fake for the test."""
    with pointed_at(fake.origin):
        yield StreamClient(Credential(fake.client_id, fake.client_secret))


@pytest.fixture
def handler(client: Any) -> Any:
    """A plain ChatbotHandler bound to the client, for the SDK's reply/download helpers."""
    plain = ChatbotHandler()
    plain.dingtalk_client = client
    return plain


@pytest.fixture
def http(fake: FakeDingTalk) -> Iterator[httpx.Client]:
    with raw.openapi_client(fake) as session:
        yield session


@pytest.fixture
def bot() -> ScriptedBot:
    return ScriptedBot()


@pytest.fixture
async def stream(fake: FakeDingTalk, client: Any, bot: ScriptedBot) -> AsyncIterator[StreamTask]:
    client.register_callback_handler(TOPIC, bot)
    async with StreamTask(client) as task:
        await fake.await_connected()
        yield task


# ---------------------------------------------------------------------- stream, real SDK


async def test_the_sdk_opens_a_stream_and_acks_what_its_handler_processed(
    fake: FakeDingTalk, stream: StreamTask, bot: ScriptedBot
) -> None:
    message_id = fake.push_message("ping me")

    got = await bot.next()
    ack = await fake.await_ack(message_id)
    reply = await fake.await_call("/robot/sendBySession")

    assert (got.text.content, got.sender_staff_id) == ("ping me", "staff_alice")
    assert (ack.code, ack.message, ack.data, ack.connection) == (200, "", {"response": "OK"}, 1)
    assert [(d.message_id, d.kind, d.topic, d.attempt) for d in fake.deliveries] == [
        (message_id, "CALLBACK", TOPIC, 1)
    ]
    opened = fake.open_requests[0]
    assert (opened["clientId"], opened["clientSecret"]) == (fake.client_id, fake.client_secret)
    assert opened["subscriptions"] == [{"type": "CALLBACK", "topic": TOPIC}]
    assert opened["ua"] == "dingtalk-sdk-python/v0.24.3-union"
    # the loopback guard refused get_host_ip()'s UDP connect to 8.8.8.8; the SDK swallowed it
    assert opened["localIp"] == ""
    assert reply.answer == {"errcode": 0, "errmsg": "ok"}
    sent = fake.sent_messages("staff_alice")
    assert [(s.via, s.msgtype, s.text, s.at_user_ids) for s in sent] == [
        ("session", "text", "pong", ("staff_alice",))
    ]
    assert (fake.protocol_errors, fake.unacked()) == ([], [])


async def test_a_ping_is_acked_with_its_data_echoed(fake: FakeDingTalk, stream: StreamTask) -> None:
    message_id = fake.send_ping()

    ack = await fake.await_ack(message_id)

    delivery = fake.deliveries[-1]
    assert (delivery.kind, delivery.topic, delivery.message_id) == ("SYSTEM", "ping", message_id)
    assert (ack.code, sorted(ack.data)) == (200, ["opaque"])
    assert fake.protocol_errors == []


async def test_disconnect_makes_the_sdk_open_a_new_connection(
    fake: FakeDingTalk, stream: StreamTask, bot: ScriptedBot
) -> None:
    farewell = fake.send_disconnect("gateway restarting")

    await fake.await_ack(farewell)
    await fake.await_connected(count=2)
    later = fake.push_message("after the reconnect")
    await bot.next()

    assert (await fake.await_ack(later)).connection == 2
    assert len(fake.open_requests) == 2
    await fake.await_until(lambda: fake.live_connections == 1)
    assert [c.status for c in fake.calls("/connect")] == [101, 101]
    assert fake.protocol_errors == []


async def test_opt_in_redelivery_resends_what_was_not_acked_200(
    fake: FakeDingTalk, stream: StreamTask, bot: ScriptedBot
) -> None:
    fake.redeliver_unacked(after_s=0.2)
    refused = fake.push_message("fail", msg_id="msg_fail")
    lost = fake.push_message("boom", msg_id="msg_boom")

    await fake.await_until(lambda: sum(a.code == 200 for a in fake.acks) == 2)

    by_message = {
        mid: [(d.attempt, d.connection) for d in fake.deliveries if d.message_id == mid]
        for mid in (refused, lost)
    }
    assert by_message == {refused: [(1, 1), (2, 1)], lost: [(1, 1), (2, 1)]}
    assert [a.code for a in fake.acks if a.message_id == refused] == [500, 200]
    assert [a.code for a in fake.acks if a.message_id == lost] == [200]
    assert bot.times == Counter({"msg_fail": 2, "msg_boom": 2})  # the same msgId both times
    assert fake.protocol_errors == []


async def test_without_redelivery_an_unacked_callback_waits_for_redeliver(
    fake: FakeDingTalk, stream: StreamTask, bot: ScriptedBot
) -> None:
    message_id = fake.push_message("boom")
    await bot.next()  # it raised: no ack

    assert fake.unacked() == [message_id]
    fake.redeliver(message_id)
    await bot.next()

    assert (await fake.await_ack(message_id)).code == 200
    assert [d.attempt for d in fake.deliveries] == [1, 2]
    assert fake.unacked() == []


# ---------------------------------------------------------------------- stream, raw wire


async def test_frames_wait_for_a_socket_subscribed_to_their_topic(fake: FakeDingTalk) -> None:
    card_click = fake.push_callback({"value": 1}, topic="/v1.0/card/instances/callback")
    message = fake.push_message("queued while offline")
    assert fake.pending() == [card_click, message]

    async with aiohttp.ClientSession() as session:
        url = await raw.open_url(session, fake, (*raw.CHATBOT, {"type": "EVENT", "topic": "*"}))
        async with session.ws_connect(url) as ws:
            callback = await raw.next_frame(ws)
            await ws.send_str(raw.ack(callback))
            event_id = fake.push_event("chat_update_title", {"title": "new"})
            event = await raw.next_frame(ws)
            await ws.send_str(raw.ack(event, data={"title": "new"}))
            await fake.await_ack(event_id)

    assert (callback["specVersion"], callback["type"]) == ("1.0", "CALLBACK")
    headers = callback["headers"]
    assert sorted(headers) == ["appId", "connectionId", "contentType", "messageId", "time", "topic"]
    assert (headers["topic"], headers["contentType"]) == (TOPIC, "application/json")
    assert json.loads(callback["data"])["text"] == {"content": "queued while offline"}
    assert (event["type"], event["headers"]["eventType"]) == ("EVENT", "chat_update_title")
    assert json.loads(event["data"]) == {"title": "new"}
    assert fake.pending() == [card_click]
    assert fake.protocol_errors == []


async def test_tickets_open_one_socket_and_credentials_are_checked(fake: FakeDingTalk) -> None:
    wrong = {"clientId": fake.client_id, "clientSecret": "nope", "subscriptions": []}
    statuses = []
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{fake.origin}{OPEN}", json=wrong) as answer:
            refused = (answer.status, (await answer.json())["code"])
        url = await raw.open_url(session, fake)
        async with session.ws_connect(url):
            pass
        for again in (url, url.replace("ticket=", "ticket=x")):
            with pytest.raises(aiohttp.WSServerHandshakeError) as handshake:
                await session.ws_connect(again)
            statuses.append(handshake.value.status)
        fake.refuse_credentials = True
        right = {**wrong, "clientSecret": fake.client_secret}
        async with session.post(f"{fake.origin}{OPEN}", json=right) as answer:
            refused_anyway = answer.status

    assert refused == (401, "InvalidAuthentication")
    assert statuses == [403, 401]  # a used ticket, an unknown one
    assert refused_anyway == 401
    assert fake.connections == 1


async def test_acks_are_checked_strictly(fake: FakeDingTalk) -> None:
    message_id = fake.push_message("hello")
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(await raw.open_url(session, fake)) as ws,
    ):
        frame = await raw.next_frame(ws)
        good = json.loads(raw.ack(frame))
        for text in (
            "not json",
            json.dumps({**good, "code": "200"}),
            json.dumps({**good, "headers": {"messageId": "nobody-sent-this"}}),
            json.dumps({**good, "data": {"response": "OK"}}),
        ):
            await ws.send_str(text)
        await ws.send_bytes(b"\x00")
        await ws.send_str(raw.ack(frame))
        await ws.send_str(raw.ack(frame))  # a second ack for one delivery
        await fake.await_until(lambda: len(fake.protocol_errors) == 6)
        ping_id = await asyncio.to_thread(fake.send_ping)
        await ws.send_str(raw.ack(await raw.next_frame(ws), data={"opaque": "not the one sent"}))
        await fake.await_until(lambda: len(fake.protocol_errors) == 7)

    assert [a.message_id for a in fake.acks] == [message_id, ping_id]
    expected = ["not JSON", "integer code", "unknown messageId 'nobody-sent-this'"]
    expected += ["JSON string", "binary", "second ack", "must echo"]
    found = [next((p for p in expected if p in e), e) for e in fake.protocol_errors]
    assert found == expected


async def test_a_dropped_socket_hands_its_unacked_callbacks_to_the_next_one(
    fake: FakeDingTalk,
) -> None:
    fake.redeliver_unacked(after_s=30.0)  # only the close can trigger it within the test
    message_id = fake.push_message("hello")
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(await raw.open_url(session, fake)) as ws:
            first = await raw.next_frame(ws)
            await asyncio.to_thread(fake.drop_socket)
            closed = await ws.receive(timeout=5)
        await fake.await_until(lambda: fake.live_connections == 0)
        async with session.ws_connect(await raw.open_url(session, fake)) as ws:
            second = await raw.next_frame(ws)
            await ws.send_str(raw.ack(second))
            await fake.await_ack(message_id)

    assert closed.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR)
    assert first["headers"]["messageId"] == second["headers"]["messageId"] == message_id
    assert first["data"] == second["data"]
    assert [(d.attempt, d.connection) for d in fake.deliveries] == [(1, 1), (2, 2)]


# ---------------------------------------------------------------------- tokens and sends


def _text(to: str = "staff_alice", content: str = "hi") -> dict[str, Any]:
    return {"userIds": [to], **_msg("sampleText", content=content)}


def _msg(key: str, **params: str) -> dict[str, str]:
    return {"msgKey": key, "msgParam": json.dumps(params)}


def test_tokens_401_and_revocation(fake: FakeDingTalk, client: Any) -> None:
    fake.add_user("staff_alice")
    body = {"robotCode": fake.client_id, **_text()}
    with httpx.Client(base_url=fake.origin) as session:
        wrong = session.post("/v1.0/oauth2/accessToken", json={"appKey": "x", "appSecret": "y"})
        token = client.get_access_token()
        anonymous = session.post(BATCH_SEND, json=body)
        works = session.post(BATCH_SEND, json=body, headers={TOKEN: token})
        fake.revoke_tokens()
        revoked = session.post(BATCH_SEND, json=body, headers={TOKEN: token})
        client.reset_access_token()  # what an adapter does on a 401, before its one retry
        fresh = session.post(BATCH_SEND, json=body, headers={TOKEN: client.get_access_token()})
        legacy = session.get("/gettoken", params={"appkey": fake.client_id, "appsecret": "nope"})

    assert (wrong.status_code, wrong.json()["code"]) == (400, "invalidClientIdOrSecret")
    assert [r.status_code for r in (anonymous, works, revoked, fresh)] == [401, 200, 401, 200]
    assert revoked.json()["code"] == "InvalidAuthentication"
    assert revoked.json()["message"] == "不合法的access_token"
    assert (legacy.status_code, legacy.json()["errcode"]) == (200, 40089)
    assert len(fake.tokens_issued) == 2
    assert fake.calls(BATCH_SEND)[1].token == fake.tokens_issued[0]


def test_one_to_one_sends_are_validated(fake: FakeDingTalk, http: httpx.Client) -> None:
    fake.add_user("staff_alice")
    media = _upload(http, "file", b"%PDF", "a.pdf")
    robot = {"robotCode": fake.client_id, "userIds": ["staff_alice", "ghost"]}
    good = [
        _msg("sampleText", content="hi"),
        _msg("sampleMarkdown", title="T", text="**b**"),
        _msg("sampleFile", mediaId=media, fileName="a.pdf", fileType="pdf"),
        _msg("sampleImageMsg", photoURL="https://example.invalid/p.png"),
    ]
    answers = [http.post(BATCH_SEND, json={**robot, **g}).json() for g in good]
    param = "InvalidParameter.MsgParam"
    bad: list[tuple[dict[str, Any], str]] = [
        ({"msgKey": "sampleText", "msgParam": {"content": "x"}}, param),
        ({"msgKey": "sampleText", "msgParam": "{oops"}, param),
        (_msg("sampleMarkdown", title="no text"), param),
        (_msg("sampleFile", mediaId="@nope", fileName="a", fileType="pdf"), param),
        (_msg("sampleText", content="x" * 15001), "InvalidParameter.MsgParam.TooLong"),
        (_msg("sampleVideo", url="x"), "InvalidParameter.MsgKey"),
        ({**_msg("sampleText", content="x"), "robotCode": "other"}, "InvalidParameter.RobotCode"),
    ]
    refused = [http.post(BATCH_SEND, json={**robot, **b}) for b, _ in bad]

    assert [a["invalidStaffIdList"] for a in answers] == [["ghost"]] * 4
    assert all(a["processQueryKey"] and a["flowControlledStaffIdList"] == [] for a in answers)
    sent = fake.sent_messages()
    assert {(s.via, s.conversation) for s in sent} == {("otom", "staff_alice")}
    assert [(s.msgtype, s.text, s.title, s.media_id, s.file_name) for s in sent] == [
        ("text", "hi", "", "", ""),
        ("markdown", "**b**", "T", "", ""),
        ("file", "", "", media, "a.pdf"),
        ("image", "", "", "https://example.invalid/p.png", ""),
    ]
    assert [(r.status_code, r.json()["code"]) for r in refused] == [(400, c) for _, c in bad]


def test_group_sends_need_the_robot_in_the_group(fake: FakeDingTalk, http: httpx.Client) -> None:
    fake.add_group("cidG1==", members=("staff_alice",), title="Ops")
    body = {"robotCode": fake.client_id, **_msg("sampleText", content="hello group")}

    def send(cid: str) -> httpx.Response:
        return http.post("/v1.0/robot/groupMessages/send", json={**body, "openConversationId": cid})

    first, stranger = send("cidG1=="), send("cidNowhere==")
    fake.remove_from_group("cidG1==")
    removed = send("cidG1==")
    fake.add_group("cidG1==")
    back = send("cidG1==")

    assert [r.status_code for r in (first, stranger, removed, back)] == [200, 400, 400, 200]
    assert stranger.json()["code"] == removed.json()["code"] == codes.ROBOT_NOT_IN_GROUP
    assert "processQueryKey" in first.json()
    sent = fake.sent_messages("cidG1==")
    assert [(s.via, s.text) for s in sent] == [("group", "hello group")] * 2


def test_session_webhook_replies_and_their_expiry(fake: FakeDingTalk, handler: Any) -> None:
    group = fake.message_payload("hi", conversation_type="2", conversation_id="cidG2==")
    replied = handler.reply_markdown("Title", "**answer**", ChatbotMessage.from_dict(group))
    stale = ChatbotMessage.from_dict(fake.message_payload("old", session_ttl_s=-1))
    fresh = ChatbotMessage.from_dict(fake.message_payload("new"))
    too_long = handler.reply_markdown("T", "x" * 20001, fresh)
    expired_by_time = handler.reply_text("late", stale)
    fake.expire_sessions()  # the ones handed out and those still to come
    later = ChatbotMessage.from_dict(fake.message_payload("newer"))
    expired_by_fake = [handler.reply_text("late", m) for m in (fresh, later)]
    unknown = httpx.post(f"{fake.origin}/robot/sendBySession", params={"session": "s0"}, json={})

    assert replied == {"errcode": 0, "errmsg": "ok"}
    assert too_long["errcode"] == 460101
    expired = {"errcode": 300001, "errmsg": "session webhook expired"}
    assert [expired_by_time, *expired_by_fake] == [expired] * 3
    assert (unknown.status_code, unknown.json()) == (200, expired)  # an errcode in an HTTP 200
    [sent] = fake.sent_messages()
    assert (sent.via, sent.conversation, sent.msgtype) == ("session", "cidG2==", "markdown")
    assert (sent.title, sent.text, sent.at_user_ids) == ("Title", "**answer**", ("staff_alice",))


# ---------------------------------------------------------------------- AI cards


async def test_ai_card_lifecycle_through_the_sdk(fake: FakeDingTalk, client: Any) -> None:
    fake.add_card_template(TEMPLATE)
    replier = AICardReplier(client, ChatbotMessage.from_dict(fake.message_payload("question")))

    async def put(text: str, *, append: bool = True, finished: bool = False) -> None:
        await replier.async_streaming(
            out, "msgContent", text, append=append, finished=finished, failed=False
        )

    out = await replier.async_start(TEMPLATE, {"msgContent": ""})
    await put("Hel")
    await put("lo")
    await put("Hello!", append=False, finished=True)
    await replier.async_finish(out, {"msgContent": "Hello!"})
    await put("too late")

    card = fake.cards[out]
    assert (card.template_id, card.space, card.target_id) == (TEMPLATE, "IM_ROBOT", "staff_alice")
    assert card.content == {"msgContent": "Hello!"}
    assert card.params == {"msgContent": "Hello!", "flowStatus": "3"}
    assert (card.delivered, card.finalized, card.error) == (True, True, False)
    assert [u.op for u in card.updates] == ["streaming"] * 3 + ["update"]
    late = fake.calls("/v1.0/card/streaming")[-1]
    assert (late.status, late.answer["code"]) == (400, codes.CARD_FINISHED)


def test_card_rules_for_groups_and_misuse(fake: FakeDingTalk, http: httpx.Client) -> None:
    fake.add_card_template(TEMPLATE)
    fake.add_group("cidG3==")
    space: dict[str, Any] = {"imGroupOpenSpaceModel": {"supportForward": True}}

    def create(out: str, template: str = TEMPLATE, **extra: Any) -> httpx.Response:
        data = {"cardParamMap": {"msgContent": ""}}
        body = {"cardTemplateId": template, "outTrackId": out, "cardData": data}
        return http.post("/v1.0/card/instances", json={**body, "callbackType": "STREAM", **extra})

    def deliver(out: str, cid: str = "cidG3==") -> httpx.Response:
        model = {"imGroupOpenDeliverModel": {"robotCode": fake.client_id}}
        body = {"outTrackId": out, "userIdType": 1, "openSpaceId": f"dtv1.card//IM_GROUP.{cid}"}
        return http.post("/v1.0/card/instances/deliver", json={**body, **model})

    def stream(out: str, text: str) -> httpx.Response:
        body = {"outTrackId": out, "guid": "g", "key": "msgContent", "content": text}
        return http.put("/v1.0/card/streaming", json={**body, "isFull": True})

    created = create("c1", **space)
    early = stream("c1", "not yet")
    delivered = deliver("c1")
    streamed = stream("c1", "hi")
    refusals = [
        (create("c2", template="unknown.schema"), codes.CARD_TEMPLATE),
        (create("c1", **space), codes.OUT_TRACK_ID_USED),
        (create("c3", cardData={"cardParamMap": {"n": 1}}), codes.CARD_PARAM),
        (create("c4", callbackType="HTTP"), codes.CARD_PARAM),
        (create("c5"), ""),
        (deliver("c5"), codes.CARD_PARAM),  # created without imGroupOpenSpaceModel
        (deliver("c1", cid="cidNowhere=="), codes.ROBOT_NOT_IN_GROUP),
        (deliver("nope"), codes.CARD_NOT_FOUND),
    ]

    assert created.json() == {"success": True, "result": "c1"}
    assert (early.status_code, early.json()["code"]) == (400, codes.CARD_NOT_DELIVERED)
    assert delivered.json()["result"][0]["spaceType"] == "IM_GROUP"
    assert streamed.json() == {"success": True, "result": True}
    got = [(r.status_code, r.json().get("code", "")) for r, _ in refusals]
    assert got == [(400 if code else 200, code) for _, code in refusals]
    card = fake.cards["c1"]
    assert (card.space, card.target_id) == ("IM_GROUP", "cidG3==")
    assert card.content == {"msgContent": "hi"}


# ---------------------------------------------------------------------- files


def _upload(http: httpx.Client, kind: str, data: bytes, name: str, token: str = "") -> Any:
    """``/media/upload``: the OpenAPI token works here too (one token store)."""
    params = {"access_token": token or http.headers[TOKEN], "type": kind}
    answer = http.post("/media/upload", params=params, files={"media": (name, data)})
    assert answer.status_code == 200  # the oapi reports errors in the body
    body = answer.json()
    return body["media_id"] if body["errcode"] == 0 else body["errcode"]


def test_uploads_are_checked_like_the_oapi(fake: FakeDingTalk, http: httpx.Client) -> None:
    image = _upload(http, "image", TINY_PNG, "p.png")
    refused = [
        _upload(http, "image", b"plain text", "t.png"),
        _upload(http, "sticker", b"x", "x"),
        _upload(http, "file", b"", "empty"),
        _upload(http, "file", b"x", "x", token="nope"),  # noqa: S106 - a wrong token
    ]
    fake.set_limits(file_bytes=3)
    too_big = _upload(http, "file", b"four", "f")

    assert [*refused, too_big] == [40005, 40004, 40006, 40014, 40006]
    upload = fake.uploads[image]
    assert (upload.kind, upload.file_name, upload.data) == ("image", "p.png", TINY_PNG)
    assert image.startswith("@lA")


def test_download_codes_become_urls_serving_the_bytes(fake: FakeDingTalk, handler: Any) -> None:
    fake.add_download("dc_pic", TINY_PNG, file_name="cat.png")
    payload = fake.message_payload(msgtype="picture", content=fake.picture_content("dc_pic"))
    [code] = ChatbotMessage.from_dict(payload).get_image_list()

    url = handler.get_image_download_url(code)
    missing = handler.get_image_download_url("dc_unknown")
    got = httpx.get(url)

    assert url.startswith(f"{fake.origin}/files/")
    assert (got.content, got.headers["content-type"]) == (TINY_PNG, "image/png")
    assert got.headers["content-disposition"] == 'attachment; filename="cat.png"'
    assert missing == ""  # the SDK logs the 400 and returns ""
    refused = fake.calls("/v1.0/robot/messageFiles/download")[-1]
    assert (refused.status, refused.answer["code"]) == (400, codes.DOWNLOAD_CODE)


# ---------------------------------------------------------------------- faults and paths


def test_faults_are_used_up_in_order_before_the_token_check(
    fake: FakeDingTalk, http: httpx.Client
) -> None:
    fake.add_user("staff_alice")
    fake.fail_next("/v1.0/robot/*", http_status=400, body={"code": "custom", "message": "m"})
    fake.rate_limit(BATCH_SEND, retry_after_s=0.5)
    fake.rate_limit("POST /v1.0/robot/*", style="qps")
    fake.fail_server_error("/v1.0/robot/*")
    fake.rate_limit("/robot/sendBySession", style="body")
    body = {"robotCode": fake.client_id, **_text(content="x")}

    answers = [http.post(BATCH_SEND, json=body, headers={TOKEN: "stale"}) for _ in range(4)]
    after = http.post(BATCH_SEND, json=body)
    webhook = fake.message_payload("hi")["sessionWebhook"]
    reply = {"msgtype": "text", "text": {"content": "x"}}
    throttled, then = httpx.post(webhook, json=reply), httpx.post(webhook, json=reply)

    assert [(a.status_code, a.json()["code"]) for a in answers] == [
        (400, "custom"),
        (429, "Throttling.Api"),
        (403, "Forbidden.AccessDenied.QpsLimitForApi"),
        (500, "InternalError"),
    ]
    assert [a.headers.get("Retry-After") for a in answers] == [None, "0.5", None, None]
    assert after.status_code == 200
    assert (throttled.status_code, throttled.json()["errcode"]) == (200, 130101)
    assert then.json() == {"errcode": 0, "errmsg": "ok"}


def test_unknown_paths_answer_404_and_are_recorded(fake: FakeDingTalk) -> None:
    api = httpx.post(f"{fake.origin}/v1.0/robot/nope", json={})
    other = httpx.get(f"{fake.origin}/elsewhere")

    assert (api.status_code, api.json()["code"]) == (404, "InvalidAction.NotFound")
    assert other.status_code == 404
    assert [c.path for c in fake.calls() if c.status == 404] == ["/v1.0/robot/nope", "/elsewhere"]


# ---------------------------------------------------------------------- builders


def test_every_builder_parses_with_the_sdk(fake: FakeDingTalk) -> None:
    def parse(text: str | None = None, **fields: Any) -> Any:
        return ChatbotMessage.from_dict(fake.message_payload(text, **fields))

    now_ms = time.time() * 1000
    one, again = parse("hello", msg_id="m1"), parse("hi again")
    group = parse(
        "hello all",
        conversation_type="2",
        conversation_id="cidG4==",
        conversation_title="Ops",
        sender_staff_id="staff_bob",
        at_bot=True,
        at_users=("staff_carol",),
    )
    rich = parse(
        msgtype="richText", content=fake.rich_text_content("look", fake.rich_picture("dc_r"))
    )
    picture = parse(msgtype="picture", content=fake.picture_content("dc_p"))
    file = parse(msgtype="file", content=fake.file_content("dc_f", "r.pdf"))

    assert (one.message_type, one.text.content, one.message_id) == ("text", "hello", "m1")
    assert (one.conversation_type, one.conversation_id) == ("1", again.conversation_id)
    assert (one.sender_staff_id, one.sender_nick) == ("staff_alice", "Alice")
    assert one.sender_id == again.sender_id
    assert (one.robot_code, one.chatbot_user_id) == (fake.client_id, fake.chatbot_user_id)
    assert (one.sender_corp_id, one.chatbot_corp_id, one.is_admin) == ("dingcorp1",) * 2 + (False,)
    assert (one.is_in_at_list, one.at_users, one.conversation_title) == (False, [], None)
    assert one.session_webhook.startswith(f"{fake.origin}/robot/sendBySession?session=")
    assert one.session_webhook != again.session_webhook
    assert abs(one.session_webhook_expired_time - (now_ms + 3_600_000)) < 60_000
    assert one.create_at >= now_ms - 60_000

    assert (group.conversation_type, group.conversation_id) == ("2", "cidG4==")
    assert (group.conversation_title, group.text.content) == ("Ops", " hello all")
    robot, carol = group.at_users
    assert group.is_in_at_list is True
    assert (robot.dingtalk_id, robot.staff_id) == (fake.chatbot_user_id, None)
    assert carol.staff_id == "staff_carol"

    assert (rich.get_text_list(), rich.get_image_list()) == (["look"], ["dc_r"])
    assert picture.get_image_list() == ["dc_p"]
    assert file.message_type == "file"
    assert file.extensions["content"] == {"downloadCode": "dc_f", "fileName": "r.pdf"}
