"""``PlatformChannel``: the lifecycle template, the settings check and the outbound façade."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import SecretStr
from typing_extensions import override

from bot.errors import AuthFailed, ChannelError, ConfigError, TransientSendError
from bot.messages import (
    ChatType,
    Destination,
    InboundMessage,
    OutboundFile,
    OutboundKind,
    OutboundText,
    Reaction,
    ReactionMark,
    SentRef,
    TextEdit,
)
from bot.ports import Admission, ChannelCapabilities, Publish
from channels.base import PlatformChannel

HERE = Destination(channel="sketch", chat_id="c1", chat_type=ChatType.DM)
TEXT = OutboundText(destination=HERE, text="hi", kind=OutboundKind.FINAL)


class Calls:
    """The platform calls an outbound made, by name."""

    def __init__(self, *, refuse: bool = False) -> None:
        self.made: list[str] = []
        self._refuse = refuse

    async def send_text(self, message: OutboundText) -> SentRef:
        self.made.append(f"send_text:{message.text}")
        if self._refuse:
            raise AuthFailed("token revoked")
        return SentRef(message_ids=("m1",))

    async def send_file(self, file: OutboundFile) -> SentRef:
        self.made.append(f"send_file:{file.name}")
        return SentRef(message_ids=("f1",))

    async def edit_text(self, edit: TextEdit) -> None:
        self.made.append(f"edit_text:{edit.message_id}")

    async def react(self, mark: ReactionMark) -> None:
        self.made.append(f"react:{mark.reaction}")

    async def show_typing(self, destination: Destination) -> None:
        self.made.append(f"show_typing:{destination.chat_id}")


class Health:
    def __init__(self) -> None:
        self.refused: list[str] = []

    def connected(self) -> None:
        """Not recorded."""

    def disconnected(self, reason: str) -> None:
        """Not recorded."""

    def auth_failed(self, reason: str) -> None:
        self.refused.append(reason)

    def activity(self) -> None:
        """Not recorded."""

    def failed(self, reason: str) -> None:
        """Not recorded."""


class Intake:
    async def __call__(self, message: InboundMessage) -> Admission:
        return Admission.ACCEPTED

    async def many(self, messages: Sequence[InboundMessage]) -> list[Admission]:
        return [Admission.ACCEPTED for _ in messages]


class Sketch(PlatformChannel[Calls]):
    """An adapter whose connect opens two resources and can fail after the first."""

    name = "sketch"
    capabilities = ChannelCapabilities(text_limit=100, reactions=frozenset({Reaction.DONE}))
    not_running = "the Sketch channel is not running"

    def __init__(self, *, fail_after_first: bool = False, outbound: Calls | None = None) -> None:
        super().__init__(Health())
        self.steps: list[str] = []
        self._fail = fail_after_first
        self._calls = outbound or Calls()

    @override
    async def _connect(self, publish: Publish) -> None:
        self.steps.append("open first")
        self._out = self._calls
        self._open_intake()
        if self._fail:
            raise ChannelError("the second resource is unreachable")
        self.steps.append("open second")

    @override
    async def _disconnect(self) -> None:
        self.steps.append("close")
        self._out = None


async def test_a_start_that_fails_part_way_is_torn_down_and_re_raised() -> None:
    channel = Sketch(fail_after_first=True)
    with pytest.raises(ChannelError, match="unreachable"):
        await channel.start(Intake())
    assert channel.steps == ["open first", "close"]
    assert not await channel._intake_ready(0.01)
    with pytest.raises(TransientSendError, match="the Sketch channel is not running"):
        await channel.send_text(TEXT)


async def test_sends_before_start_are_transient_and_forwarded_once_running() -> None:
    channel = Sketch()
    with pytest.raises(TransientSendError, match="the Sketch channel is not running"):
        await channel.send_text(TEXT)
    await channel.start(Intake())
    assert await channel.send_text(TEXT) == SentRef(message_ids=("m1",))
    edit = TextEdit(destination=HERE, message_id="m1", text="ho", kind=OutboundKind.FINAL)
    await channel.edit_text(edit)
    await channel.react(ReactionMark(destination=HERE, message_id="m1", reaction=Reaction.DONE))
    await channel.aclose()
    assert channel.steps == ["open first", "open second", "close"]
    assert channel._calls.made == ["send_text:hi", "edit_text:m1", f"react:{Reaction.DONE}"]


async def test_operations_the_platform_lacks_are_ignored_even_before_start() -> None:
    channel = Sketch()
    await channel.show_typing(HERE)  # capabilities.typing is off
    no_reactions = Sketch()
    no_reactions.capabilities = ChannelCapabilities(text_limit=100)
    await no_reactions.react(ReactionMark(destination=HERE, message_id="m", reaction=Reaction.DONE))


async def test_a_refused_credential_on_a_send_is_reported_and_raised() -> None:
    channel = Sketch(outbound=Calls(refuse=True))
    await channel.start(Intake())
    with pytest.raises(AuthFailed):
        await channel.send_text(TEXT)
    assert isinstance(channel._health, Health)
    assert channel._health.refused == ["token revoked"]
    await channel.aclose()


@pytest.mark.parametrize("value", [None, "", SecretStr("")])
def test_a_missing_setting_is_named(value: str | SecretStr | None) -> None:
    with pytest.raises(ConfigError, match=r"^channels\.x\.token: required when the channel is"):
        PlatformChannel._required(value, "channels.x.token")


def test_a_present_setting_is_returned_in_clear() -> None:
    assert PlatformChannel._required(SecretStr("s3cret"), "channels.x.token") == "s3cret"
    assert PlatformChannel._required("id", "channels.x.app_id") == "id"
