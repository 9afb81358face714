"""A loopback fake DingTalk for channel tests; see ``fake.FakeDingTalk``.

Driven unchanged by the real dingtalk_stream SDK pointed at ``fake.origin`` (env
``DINGTALK_OPENAPI_ENDPOINT`` before import, or ``sdk.pointed_at(origin)`` in a test)::

    with FakeDingTalk() as fake, sdk.pointed_at(fake.origin):
        client = DingTalkStreamClient(Credential(fake.client_id, fake.client_secret))
        client.register_callback_handler(ChatbotMessage.TOPIC, handler)
        async with sdk.StreamTask(client):
            await fake.await_connected()
            message_id = fake.push_message("hello")
            ack = await fake.await_ack(message_id)

Public API of ``FakeDingTalk`` (accessors are thread-safe snapshots; properties have no
parentheses):

identity   client_id (``dingfake<12 hex>``, unique; = robot_code), client_secret, origin,
           corp_id, chatbot_user_id
config     refuse_credentials (get/set), set_limits(image_bytes=, file_bytes=),
           add_user(staff_id, nick=None), add_group(open_conversation_id, members=(), title=""),
           remove_from_group(open_conversation_id), add_download(download_code, data,
           file_name=, content_type=), add_card_template(template_id)
builders   message_payload(text=None, conversation_type="1", conversation_id=None,
           sender_staff_id="staff_alice", sender_nick="Alice", msgtype="text", content=None,
           at_bot=False, at_users=(), msg_id=None, session_ttl_s=3600.0,
           conversation_title="", is_admin=False) -> callback data dict;
           picture_content(code), file_content(code, name), rich_text_content(*items),
           rich_picture(code)
stream     push_callback(data, topic=, message_id=None) -> messageId; push_message(text,
           **message_payload kwargs) -> messageId; push_event(topic, data) -> messageId;
           redeliver(message_id); redeliver_unacked(after_s=1.0, times=3); send_ping() ->
           messageId; send_disconnect(reason=) -> messageId; drop_socket()
observe    open_requests, connections, live_connections, wait_connected(count=1, timeout=5)
           / await_connected, deliveries -> [Delivery], acks -> [Ack], unacked(), pending(),
           protocol_errors, wait_ack(message_id, timeout=5) / await_ack -> Ack;
           calls(path=None) -> [Call], wait_call(path, predicate=None, timeout=5) /
           await_call; tokens_issued; sent_messages(conversation=None) -> [Sent];
           cards -> {outTrackId: CardView}; uploads -> {media_id: Upload};
           wait_until(condition, timeout=5) / await_until
faults     fail_next(pattern, http_status=400, body=, times=1, headers=None);
           rate_limit(pattern, times=1, style="http"|"body"|"qps", retry_after_s=None);
           fail_server_error(pattern, http_status=500, times=1); revoke_tokens() (every token
           so far); expire_sessions() (every webhook, handed out or still to come)

Error codes: see ``codes``. For tests of the fake itself: ``sdk`` (``pointed_at``,
``StreamTask``, ``ScriptedBot``) runs the real SDK against it, ``raw`` drives the bare wire.
"""

from tests.fakes.common.wire import TINY_PNG
from tests.fakes.dingtalk.fake import FakeDingTalk
from tests.fakes.dingtalk.records import (
    Ack,
    Call,
    CardUpdate,
    CardView,
    Delivery,
    Sent,
    Upload,
)

__all__ = [
    "TINY_PNG",
    "Ack",
    "Call",
    "CardUpdate",
    "CardView",
    "Delivery",
    "FakeDingTalk",
    "Sent",
    "Upload",
]
