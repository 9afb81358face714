"""Adapters read edit and recall events into revisions (design §21), from the payloads the
strict fakes emit (the platforms' documented field names). Feishu's is in
``test_feishu_recalls``: importing its adapter here would leave lark-oapi's global event loop
to an async test."""

from __future__ import annotations

from telegram import Update

from bot.messages import Revision, RevisionKind
from channels.slack.inbound import BotSelf as SlackSelf
from channels.slack.inbound import InboundRules
from channels.slack.inbound import Translator as SlackTranslator
from channels.slack.markup import UserNames
from channels.telegram.inbound import BotMe, to_inbound
from tests.fakes.slack.payloads import changed_event, deleted_event
from tests.fakes.slack.world import Identity as SlackIds
from tests.fakes.slack.world import Message as SlackMessage

TOKEN = "xoxb-unit"  # noqa: S105 - a fake workspace's
SLACK_IDS = SlackIds(
    team_id="T1", bot_user_id="UBOT", bot_id="B1", app_id="A1", bot_token=TOKEN, app_token=TOKEN
)


async def _no_name(_user: str) -> str | None:
    return None


def _slack() -> SlackTranslator:
    me = SlackSelf(team_id="T1", user_id="UBOT", bot_id="B1", name="bot")
    return SlackTranslator(me, UserNames(_no_name), InboundRules())


def test_telegram_edited_message_is_an_edit_with_an_id_per_update() -> None:
    message = {
        "message_id": 7, "date": 1700000000, "edit_date": 1700000005, "text": "fixed",
        "chat": {"id": 42, "type": "private", "first_name": "A"},
        "from": {"id": 42, "is_bot": False, "first_name": "A"},
    }  # fmt: skip
    me = BotMe(channel="telegram", user_id=999, username="bot")
    found = to_inbound(Update.de_json({"update_id": 31, "edited_message": message}, None), me)
    assert found is not None
    assert (found.text, found.message_id) == ("fixed", "7/edited/31")
    assert found.revision == Revision(kind=RevisionKind.EDITED, message_id="7")


async def test_slack_message_changed_is_an_edit_unless_the_text_stayed() -> None:
    before = SlackMessage(channel="C1", ts="1.1", user="UHUMAN", text="typo").as_api(SLACK_IDS)
    after = SlackMessage(channel="C1", ts="1.1", user="UHUMAN", text="<@UBOT> fixed")
    after.edited_ts = "2.2"
    event = changed_event(SLACK_IDS, before, after, "channel", "2.3")
    assert (event["subtype"], event["hidden"], event["message"]["edited"]["ts"]) == (
        "message_changed", True, "2.2",
    )  # fmt: skip
    found = await _slack().revision(event)
    assert found is not None
    assert (found.text, found.message_id, found.mentions_bot) == ("fixed", "1.1/edited/2.2", True)
    assert found.revision == Revision(kind=RevisionKind.EDITED, message_id="1.1")
    same = SlackMessage(channel="C1", ts="1.1", user="UHUMAN", text="typo")
    unfurled = changed_event(SLACK_IDS, before, same, "channel", "2.4")  # a link preview added
    assert await _slack().revision(unfurled) is None


async def test_slack_edits_and_deletions_of_the_bots_own_messages_are_ignored() -> None:
    own = SlackMessage(channel="C1", ts="1.1", user="UBOT", text="answer", by_bot=True)
    before = own.as_api(SLACK_IDS)
    own.text = "answer, edited"
    assert await _slack().revision(changed_event(SLACK_IDS, before, own, "channel", "2.2")) is None
    assert await _slack().revision(deleted_event(before, "C1", "channel", "2.3")) is None


async def test_slack_message_deleted_is_a_withdrawal() -> None:
    before = SlackMessage(channel="D1", ts="1.1", user="UHUMAN", text="oops").as_api(SLACK_IDS)
    event = deleted_event(before, "D1", "im", "3.3")
    assert (event["deleted_ts"], event["previous_message"]["text"]) == ("1.1", "oops")
    found = await _slack().revision(event)
    assert found is not None
    assert (found.message_id, found.sender.id) == ("1.1/deleted", "UHUMAN")
    assert found.revision == Revision(kind=RevisionKind.RECALLED, message_id="1.1")
