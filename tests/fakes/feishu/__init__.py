"""A loopback fake Feishu/Lark open platform for channel tests; see ``fake.FakeFeishu``.

Driven unchanged by the real lark_oapi clients pointed at ``fake.origin``::

    with FakeFeishu() as fake:
        api = lark.Client.builder().app_id(fake.app_id).app_secret(fake.app_secret)
              .domain(fake.origin).build()
        ws = lark.ws.Client(fake.app_id, fake.app_secret, event_handler=h, domain=fake.origin)
        # run ws on its own thread: sdk_thread.LarkWsThread shows the recipe

Public API of ``FakeFeishu`` (every accessor is thread-safe and returns a snapshot):

identity   app_id (``cli_fake_<8 hex>``, unique), app_secret, origin, bot_open_id ("ou_bot"),
           bot_name ("Switchboard Bot"), tenant_key, verification_token, encrypt_key
config     client_config (get/set; discovery and pongs hand it out), refuse_credentials
           (get/set; 10014 from token endpoints and discovery), set_limits(image_bytes=,
           file_bytes=), add_chat(chat_id, chat_type=, user=), remove_chat(chat_id),
           add_resource(message_id, key, data, kind=, file_name=, content_type=)
builders   message_payload(text, chat_id=, chat_type=, sender_open_id=, sender_type=,
           message_type=, content=, root_id=, parent_id=, thread_id=, mentions=,
           message_id=, event_id=) -> event dict (also registers message and chat);
           card_action_payload(message_id=, chat_id=, value=, open_id=, action_tag=,
           event_id=); mention(key, open_id, name), bot_mention(key="@_user_1"),
           post_content(paragraphs, title=""), image_content(key), file_content(key, name)
long conn  push_message(...same as message_payload..., parts=1) -> message_id;
           push_card_action(...) -> event_id; push_event(payload, parts=1) -> event_id;
           redeliver(event_id, new_event_id=True) -> event_id; event_ids(message_id);
           drop_socket(); close_socket(code=1000); connections() (opened so far),
           live_connections(); wait_connected(count=1, timeout=5) / await_connected;
           pings(); deliveries(); pending(); acks(); unacked(); wait_ack(event_id,
           timeout=5) / await_ack -> Ack(code 200|500, data = decoded callback answer);
           redeliver_unacked(after_s=1.0, times=3) (off by default: resend, under a new
           event_id, each later delivery not acked 200 within after_s, up to times per
           message); redelivery_checks() -> [Redelivery] (outcome acked|redelivered|
           exhausted); redeliveries(origin=None) (the resends)
webhook    post_event(url, payload, encrypt=False, bad_signature=False) -> (status, body)
           / apost_event; url_verification(url, encrypt=None, challenge=None) /
           aurl_verification
observe    calls(name_or_path=None) -> [Call]; wait_call(name, predicate, timeout) /
           await_call(name, predicate=None, within=5.0); tokens_issued();
           sent_messages(chat_id=None) -> [Message]; ephemerals(chat_id=None) ->
           [Ephemeral] (cards one member sees); message(message_id); cards() /
           card(card_id) -> CardView; uploads() -> {key: Upload}; reactions(message_id=None);
           wait_until(condition, timeout) / await_until
faults     fail_next(pattern, code=, msg=, http_status=400, headers=None, times=1);
           rate_limit(pattern, reset_s=1); fail_server_error(pattern); expire_token_next(
           pattern, code=99991663); fail_invalid_card(pattern); fail_bot_not_in_chat(
           pattern); revoke_token(); expire_streaming(card_id); withhold_answer(pattern,
           when=None, times=1) (the call is carried out, its answer never sent)

Call names: auth.tenant_access_token, auth.app_access_token, ws.endpoint, bot.info,
im.message.{create,reply,patch,delete,get}, im.message_reaction.{create,delete},
im.image.create, im.file.create, im.message_resource.get, cardkit.card.{create,update,
settings}, cardkit.card_element.content, ephemeral.send, unknown. Error codes: see ``codes``.
"""

from tests.fakes.common.wire import TINY_PNG
from tests.fakes.feishu.fake import FakeFeishu
from tests.fakes.feishu.records import (
    Ack,
    ApiError,
    Call,
    CardView,
    Delivery,
    Ephemeral,
    Message,
    Redelivery,
    Upload,
)

__all__ = [
    "TINY_PNG",
    "Ack",
    "ApiError",
    "Call",
    "CardView",
    "Delivery",
    "Ephemeral",
    "FakeFeishu",
    "Message",
    "Redelivery",
    "Upload",
]
