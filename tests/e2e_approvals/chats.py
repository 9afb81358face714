"""A group chat on each platform, as the approval acceptance tests drive it: the real adapter in
the real daemon against the platform's fake, with the embedded agent on the fake model.

``GroupChat`` is what the tests see: two members (``alice`` asks, ``bob`` may not decide),
the bot's messages as the group shows them, approval requests read from them, and a press of a
request's button (typed ``/approve ID`` where the platform has no buttons: DingTalk). Each
platform says where a refusal shown to one member alone went (Telegram: the press's callback
answer; Slack: ``chat.postEphemeral``; Feishu: an ephemeral card); DingTalk has no private
replies in a group.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

from typing_extensions import override

from agent.embedded import EmbeddedBackend
from bot.kernel import Kernel
from channels.feishu.render import VALUE_KEY
from tests.channels import dingtalk_support, feishu_support, slack_support, telegram_support
from tests.e2e_approvals.support import APPROVAL_NEEDED, WAIT_S, Request, gated_agent, request_id
from tests.fakes.common.waiting import eventually
from tests.fakes.dingtalk_api import FakeDingTalk
from tests.fakes.feishu_api import FakeFeishu
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import FakeTelegram


class GroupChat(ABC):
    """One group with the bot in it, on a running daemon."""

    name: ClassVar[str]
    alice: ClassVar[str]
    bob: ClassVar[str]
    has_buttons: ClassVar[bool] = True
    private_replies: ClassVar[bool] = True

    def __init__(self, kernel: Kernel, workspace_root: Path) -> None:
        self.kernel = kernel
        self.workspace_root = workspace_root

    @abstractmethod
    def texts(self) -> list[str]:
        """The bot's messages in the group as they read now."""

    @abstractmethod
    async def say(self, text: str, user: str) -> None:
        """``user`` says ``text`` to the bot (mentioning it)."""

    def _buttons(self, message_id: str) -> dict[str, Any]:
        """Decision -> what a press of its button on ``message_id`` sends."""
        raise AssertionError(f"{self.name} shows no buttons")

    @abstractmethod
    def _messages(self) -> list[tuple[str, str]]:
        """``(message id, text)`` of the bot's messages in the group."""

    async def _press(self, request: Request, decision: str, user: str) -> None:
        """``user`` presses the request's ``decision`` button."""
        raise AssertionError(f"{self.name} shows no buttons")

    @abstractmethod
    def private_to(self, user: str) -> list[str]:
        """What the bot showed ``user`` alone in the group."""

    async def press(self, request: Request, decision: str, user: str) -> None:
        """A press of the request's button, or the typed command where there are none."""
        if self.has_buttons:
            await self._press(request, decision, user)
        else:
            await self.say(f"/{decision} {request.id}", user)

    async def shows(self, needle: str, within: float = WAIT_S) -> None:
        await eventually(lambda: any(needle in text for text in self.texts()), within)

    def requests(self) -> list[Request]:
        found = []
        for message_id, text in self._messages():
            approval_id = request_id(text)
            if APPROVAL_NEEDED in text and approval_id is not None:
                buttons = self._buttons(message_id) if self.has_buttons else {}
                found.append(Request(id=approval_id, text=text, message_id=message_id,
                                     buttons=buttons))  # fmt: skip
        return found

    async def request(self, needle: str) -> Request:
        """The approval request whose text shows ``needle``, once it is shown."""

        def matching() -> list[Request]:
            return [r for r in self.requests() if needle in r.text]

        await eventually(lambda: bool(matching()), WAIT_S)
        (request,) = matching()
        return request

    async def told_privately(self, user: str, needle: str) -> str:
        """The private message to ``user`` that shows ``needle``, once it is shown."""

        def found() -> list[str]:
            return [text for text in self.private_to(user) if needle in text]

        await eventually(lambda: bool(found()), WAIT_S)
        return found()[0]


def _by_decision(buttons: list[Any], payload_of: Callable[[Any], str]) -> dict[str, Any]:
    """Buttons by the decision their payload (``a/<id>/<decision>``) ends in."""
    return {payload_of(button).rsplit("/", 1)[-1]: button for button in buttons}


# --------------------------------------------------------------------------- Telegram


class TelegramGroup(GroupChat):
    name = "telegram"
    alice, bob = "7", "8"
    CHAT = -100777

    def __init__(self, kernel: Kernel, workspace_root: Path, fake: FakeTelegram) -> None:
        super().__init__(kernel, workspace_root)
        self.fake = fake
        self._queries: dict[str, list[str]] = {}

    @override
    def texts(self) -> list[str]:
        return telegram_support.texts(self.fake, self.CHAT)

    @override
    def _messages(self) -> list[tuple[str, str]]:
        return [(str(m["message_id"]), str(m.get("text") or ""))
                for m in self.fake.chat_messages(self.CHAT)]  # fmt: skip

    @override
    async def say(self, text: str, user: str) -> None:
        said = text if text.startswith("/") else f"@fake_bot {text}"
        entities = None if text.startswith("/") else telegram_support.mention(said)
        self.fake.push_message(
            said, chat_id=self.CHAT, chat_type="supergroup", user_id=int(user),
            first_name=_NAMES[user], username=_NAMES[user].lower(), entities=entities,
        )  # fmt: skip

    @override
    def _buttons(self, message_id: str) -> dict[str, Any]:
        (message,) = [m for m in self.fake.chat_messages(self.CHAT)
                      if str(m["message_id"]) == message_id]  # fmt: skip
        rows = (message.get("reply_markup") or {}).get("inline_keyboard") or []
        return _by_decision([b["callback_data"] for row in rows for b in row], str)

    @override
    async def _press(self, request: Request, decision: str, user: str) -> None:
        update = self.fake.push_callback_query(
            data=request.buttons[decision], chat_id=self.CHAT,
            message_id=int(request.message_id), user_id=int(user), first_name=_NAMES[user],
        )  # fmt: skip
        self._queries.setdefault(user, []).append(str(update["callback_query"]["id"]))

    @override
    def private_to(self, user: str) -> list[str]:
        answers = self.fake.callback_answers()
        return [answers[q].text or "" for q in self._queries.get(user, []) if q in answers]


# --------------------------------------------------------------------------- Slack


class SlackGroup(GroupChat):
    name = "slack"
    alice, bob = "UALICE01", "UBOB0001"
    CHAT = "C0APPR01"

    def __init__(self, kernel: Kernel, workspace_root: Path, fake: FakeSlack) -> None:
        super().__init__(kernel, workspace_root)
        self.fake = fake

    @override
    def texts(self) -> list[str]:
        return [text for _, text in self._messages()]

    @override
    def _messages(self) -> list[tuple[str, str]]:
        return [(str(m["ts"]), slack_support.markdown_of(m) or str(m.get("text") or ""))
                for m in self.fake.channel_messages(self.CHAT)]  # fmt: skip

    @override
    async def say(self, text: str, user: str) -> None:
        self.fake.push_message(
            slack_support.mention(text), channel=self.CHAT, channel_type="channel", user=user
        )

    @override
    def _buttons(self, message_id: str) -> dict[str, Any]:
        message = self.fake.message(self.CHAT, message_id) or {}
        elements = [e for b in message.get("blocks") or () if b.get("type") == "actions"
                    for e in b.get("elements") or ()]  # fmt: skip
        return _by_decision(elements, lambda e: str(e["value"]))

    @override
    async def _press(self, request: Request, decision: str, user: str) -> None:
        button = request.buttons[decision]
        self.fake.click_button(
            channel=self.CHAT, message_ts=request.message_id, action_id=button["action_id"],
            value=button["value"], user=user,
        )  # fmt: skip

    @override
    def private_to(self, user: str) -> list[str]:
        return [e.text for e in self.fake.ephemeral_messages(self.CHAT) if e.user == user]


# --------------------------------------------------------------------------- Feishu


class FeishuGroup(GroupChat):
    name = "feishu"
    alice, bob = "ou_alice", "ou_bob"
    CHAT = feishu_support.GROUP

    def __init__(self, kernel: Kernel, workspace_root: Path, run: feishu_support.FeishuRun) -> None:
        super().__init__(kernel, workspace_root)
        self.run = run
        self.fake = run.fake

    @override
    def texts(self) -> list[str]:
        return feishu_support.texts(self.fake, self.CHAT)

    @override
    def _messages(self) -> list[tuple[str, str]]:
        return [(m.message_id, feishu_support.shown_text(self.fake, m))
                for m in self.fake.sent_messages(self.CHAT)]  # fmt: skip

    @override
    async def say(self, text: str, user: str) -> None:
        fields = feishu_support.at_bot(self.fake, text)
        await self.run.send(sender_open_id=user, **fields)

    @override
    def _buttons(self, message_id: str) -> dict[str, Any]:
        message = self.fake.message(message_id)
        elements = [] if message is None else message.content["body"]["elements"]
        values = [e["behaviors"][0]["value"] for e in elements if e.get("tag") == "button"]
        return _by_decision(values, lambda v: str(v[VALUE_KEY]))

    @override
    async def _press(self, request: Request, decision: str, user: str) -> None:
        value = request.buttons[decision]
        await self.run.press(
            message_id=request.message_id, chat_id=self.CHAT, value=value, open_id=user
        )

    @override
    def private_to(self, user: str) -> list[str]:
        return [str(e.card) for e in self.fake.ephemerals(self.CHAT) if e.open_id == user]


# --------------------------------------------------------------------------- DingTalk


class DingTalkGroup(GroupChat):
    """No buttons (typed commands) and no private replies in a group."""

    name = "dingtalk"
    alice, bob = "staff_alice", "staff_bob"
    has_buttons = False
    private_replies = False
    CHAT = dingtalk_support.GROUP

    def __init__(self, kernel: Kernel, workspace_root: Path, fake: FakeDingTalk) -> None:
        super().__init__(kernel, workspace_root)
        self.fake = fake

    @override
    def texts(self) -> list[str]:
        return dingtalk_support.texts(self.fake, self.CHAT)

    @override
    def _messages(self) -> list[tuple[str, str]]:
        return [(str(index), m.text) for index, m in enumerate(self.fake.sent_messages(self.CHAT))]

    @override
    async def say(self, text: str, user: str) -> None:
        self.fake.push_message(
            text, conversation_type="2", conversation_id=self.CHAT, sender_staff_id=user,
            sender_nick=_NAMES[user], at_bot=True,
        )  # fmt: skip

    @override
    def private_to(self, user: str) -> list[str]:
        return []


_NAMES = {
    **dict.fromkeys(("7", "UALICE01", "ou_alice", "staff_alice"), "Alice"),
    **dict.fromkeys(("8", "UBOB0001", "ou_bob", "staff_bob"), "Bob"),
}


# --------------------------------------------------------------------------- daemons


def _access(channel: str) -> dict[str, Any]:
    """Open DMs and mentioned groups; an admin who is neither of the members."""
    return {"dm_policy": "open", "admins": [f"{channel}:root"]}


@asynccontextmanager
async def telegram_group(tmp_path: Path, model: FakeOpenAIServer) -> AsyncIterator[GroupChat]:
    with FakeTelegram() as fake:
        settings = telegram_support.telegram_settings(
            tmp_path, fake, access=_access("telegram"), agent=gated_agent(model)
        )
        agent = EmbeddedBackend(settings, max_retries=0)
        async with telegram_support.telegram_daemon(settings, agent) as run:
            yield TelegramGroup(run.kernel, settings.workspace_root, fake)


@asynccontextmanager
async def slack_group(tmp_path: Path, model: FakeOpenAIServer) -> AsyncIterator[GroupChat]:
    with FakeSlack() as fake:
        fake.add_channel(SlackGroup.CHAT, channel_type="channel")
        for user in (SlackGroup.alice, SlackGroup.bob):
            fake.add_user(user, name=_NAMES[user].lower(), real_name=_NAMES[user])
        settings = slack_support.slack_settings(
            tmp_path, fake, access=_access("slack"), agent=gated_agent(model)
        )
        agent = EmbeddedBackend(settings, max_retries=0)
        async with slack_support.slack_daemon(settings, fake, agent) as run:
            yield SlackGroup(run.kernel, settings.workspace_root, fake)


@asynccontextmanager
async def feishu_group(tmp_path: Path, model: FakeOpenAIServer) -> AsyncIterator[GroupChat]:
    with FakeFeishu() as fake:
        fake.add_chat(FeishuGroup.CHAT)
        settings = feishu_support.feishu_settings(
            tmp_path, fake, access=_access("feishu"), agent=gated_agent(model)
        )
        agent = EmbeddedBackend(settings, max_retries=0)
        async with feishu_support.feishu_daemon(settings, fake, agent) as run:
            yield FeishuGroup(run.kernel, settings.workspace_root, run)


@asynccontextmanager
async def dingtalk_group(tmp_path: Path, model: FakeOpenAIServer) -> AsyncIterator[GroupChat]:
    with FakeDingTalk() as fake:
        settings = dingtalk_support.dingtalk_settings(
            tmp_path, fake, access=_access("dingtalk"), agent=gated_agent(model)
        )
        agent = EmbeddedBackend(settings, max_retries=0)
        async with dingtalk_support.dingtalk_daemon(settings, fake, agent) as run:
            yield DingTalkGroup(run.kernel, settings.workspace_root, fake)


GroupOpener = Callable[[Path, FakeOpenAIServer], AbstractAsyncContextManager[GroupChat]]
GROUPS: dict[str, GroupOpener] = {
    "telegram": telegram_group,
    "slack": slack_group,
    "feishu": feishu_group,
    "dingtalk": dingtalk_group,
}
