"""FakeChannel: a real, in-process implementation of the Channel port for core tests.

It records every platform operation, hands out message ids, can be told to fail the next
operations with typed send errors, and lets a test wait for what it expects to be sent. With
``idempotent_sends`` in its capabilities it dedupes sends by ``dedupe_key`` as such a platform
does: a repeat answers the first message and posts nothing.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from typing_extensions import override

from bot.errors import DownloadError, SendError
from bot.messages import (
    Attachment,
    ChatType,
    Delivery,
    Destination,
    InboundMessage,
    MessageRemoval,
    OutboundFile,
    OutboundKind,
    OutboundText,
    Reaction,
    ReactionMark,
    Sender,
    SentRef,
    TextEdit,
)
from bot.ports import Admission, BotIdentity, ChannelCapabilities, Publish
from channels.base import AuthFailed, BaseChannel

DEFAULT_CAPS = ChannelCapabilities(
    text_limit=4000, edits=True, buttons=True, threads=True, typing=True,
    reactions=frozenset(Reaction),
    progress_interval_dm_s=0.0, progress_interval_group_s=0.0,
)  # fmt: skip
PLAIN_CAPS = ChannelCapabilities(text_limit=4000)


@dataclass(frozen=True, slots=True)
class Sent:
    """One platform operation the fake received, with the id it answered."""

    delivery: Delivery
    message_id: str | None
    repeat: bool = False
    """A send under a ``dedupe_key`` the platform had taken: answered with that message, and
    nothing posted."""

    @property
    def is_progress(self) -> bool:
        delivery = self.delivery
        return (
            isinstance(delivery, OutboundText | TextEdit) and delivery.kind is OutboundKind.PROGRESS
        )

    @property
    def text(self) -> str:
        if isinstance(self.delivery, OutboundText | TextEdit):
            return self.delivery.text
        if isinstance(self.delivery, OutboundFile):
            return f"[file {self.delivery.name}]"
        if isinstance(self.delivery, MessageRemoval):
            return f"[removal of {self.delivery.message_id}]"
        return f"[reaction {self.delivery.reaction}]"


@dataclass
class FakeChannel(BaseChannel):
    fake_name: str = "fake"
    caps: ChannelCapabilities = DEFAULT_CAPS
    usernames: frozenset[str] = frozenset({"fakebot"})
    sent: list[Sent] = field(default_factory=list)
    typing_count: int = 0
    fail_next: deque[SendError] = field(default_factory=deque)
    start_failures: deque[Exception] = field(default_factory=deque)
    start_hangs: int = 0
    """How many starts never finish (a hung SDK), before starts work again."""
    close_hangs: bool = False
    files: dict[str, bytes] = field(default_factory=dict)
    answer_gate: asyncio.Event | None = None
    """While set to an unset event, a text sent is taken (recorded, given its id) but answered
    only once it is set: the platform has the message, the bot has not heard back yet."""
    taken: dict[str, str] = field(default_factory=dict)
    """The message each ``dedupe_key`` posted (with ``idempotent_sends``); a test seeds it with
    what a crashed process got the platform to post."""

    def __post_init__(self) -> None:
        super().__init__()
        self.name = self.fake_name
        self.capabilities = self.caps
        self._identity = BotIdentity(user_id="BOT", usernames=self.usernames)
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self.started = asyncio.Event()
        self.closed = False

    async def start(self, publish: Publish) -> None:
        if self.start_failures:
            raise self.start_failures.popleft()
        if self.start_hangs:
            self.start_hangs -= 1
            await asyncio.Event().wait()
        self._publish = publish
        self._intake_open = True
        self.started.set()

    async def aclose(self) -> None:
        if self.close_hangs:
            await asyncio.Event().wait()
        self.closed = True

    # ------------------------------------------------------------------ inbound

    async def inject(self, message: InboundMessage) -> Admission:
        if self._publish is None or not self._intake_open:
            return Admission.CLOSED
        return await self._publish(message)

    # ------------------------------------------------------------------ outbound

    async def _record(self, delivery: Delivery, *, new_id: bool) -> str | None:
        if self.fail_next:
            raise self.fail_next.popleft()
        key = _dedupe_key(delivery) if self.capabilities.idempotent_sends else ""
        taken = self.taken.get(key) if key else None
        message_id = taken or (f"b{next(self._ids)}" if new_id else None)
        if key and message_id is not None:
            self.taken[key] = message_id
        async with self._changed:
            self.sent.append(Sent(delivery, message_id, repeat=taken is not None))
            self._changed.notify_all()
        return message_id

    async def send_text(self, message: OutboundText) -> SentRef:
        message_id = await self._record(message, new_id=True)
        assert message_id is not None
        if self.answer_gate is not None:
            await self.answer_gate.wait()
        return SentRef(message_ids=(message_id,))

    @override
    async def delete_message(self, removal: MessageRemoval) -> None:
        if not self.capabilities.deletes:
            await super().delete_message(removal)
            return
        await self._record(removal, new_id=False)

    @override
    async def edit_text(self, edit: TextEdit) -> None:
        await self._record(edit, new_id=False)

    async def send_file(self, file: OutboundFile) -> SentRef:
        message_id = await self._record(file, new_id=True)
        assert message_id is not None
        return SentRef(message_ids=(message_id,))

    @override
    async def react(self, mark: ReactionMark) -> None:
        await self._record(mark, new_id=False)

    @override
    async def show_typing(self, destination: Destination) -> None:
        self.typing_count += 1

    async def download(self, attachment: Attachment, *, max_bytes: int) -> bytes:
        data = self.files.get(attachment.ref)
        if data is None:
            raise DownloadError(f"no such file {attachment.ref}")
        if len(data) > max_bytes:
            raise DownloadError(f"{attachment.name} is larger than {max_bytes} bytes")
        return data

    # ------------------------------------------------------------------ assertions

    def texts(self, *, kinds: tuple[type, ...] = (OutboundText, TextEdit)) -> list[str]:
        """What was posted or edited, in order (repeats posted nothing)."""
        return [s.text for s in self.sent if isinstance(s.delivery, kinds) and not s.repeat]

    async def wait_for(self, predicate: Callable[[Sent], bool], within: float = 5.0) -> Sent:
        """The first recorded operation matching ``predicate``, waiting for it if needed."""
        async with asyncio.timeout(within), self._changed:
            while True:
                for sent in self.sent:
                    if predicate(sent):
                        return sent
                await self._changed.wait()

    async def wait_text(self, fragment: str, within: float = 5.0) -> Sent:
        """The first text posted or edited (not a progress update, not a repeat) containing
        ``fragment``."""
        return await self.wait_for(
            lambda s: fragment in s.text and not s.is_progress and not s.repeat, within
        )


def _dedupe_key(delivery: Delivery) -> str:
    return delivery.dedupe_key if isinstance(delivery, OutboundText | OutboundFile) else ""


AUTH_FAILED = AuthFailed("token rejected")


def dm(
    text: str,
    *,
    message_id: str,
    user: str = "alice",
    channel: str = "fake",
    chat_id: str | None = None,
    **extra: object,
) -> InboundMessage:
    """A direct message from ``user``."""
    return InboundMessage(
        channel=channel,
        chat_id=chat_id or f"dm-{user}",
        chat_type=ChatType.DM,
        message_id=message_id,
        sender=Sender(id=user, display_name=user.title()),
        text=text,
        **extra,  # type: ignore[arg-type]
    )


def group(
    text: str,
    *,
    message_id: str,
    user: str = "alice",
    chat_id: str = "g1",
    channel: str = "fake",
    **extra: object,
) -> InboundMessage:
    """A group message; pass ``mentions_bot=True``, ``thread_root_id=…`` as needed."""
    return InboundMessage(
        channel=channel,
        chat_id=chat_id,
        chat_type=ChatType.GROUP,
        message_id=message_id,
        sender=Sender(id=user, display_name=user.title()),
        text=text,
        **extra,  # type: ignore[arg-type]
    )


def queued_reaction_on(message_id: str) -> Callable[[Sent], bool]:
    """Matches the "queued" reaction on the user's message ``message_id`` (design §5)."""

    def matches(sent: Sent) -> bool:
        mark = sent.delivery
        return (
            isinstance(mark, ReactionMark)
            and mark.reaction is Reaction.QUEUED
            and mark.message_id == message_id
        )

    return matches
