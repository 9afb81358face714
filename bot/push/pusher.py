"""Messages nobody in the chat asked for: the push API and ``switchboard send`` (design §19).

A push is recorded before it is acknowledged, under a delivery id that is its correlation id
(``push_types.delivery_id_for``), so no table of its own is needed:

- **text** is planned by the same ``ReplyWriter`` as an agent's answer (split in the
  platform's unit, rendered by the adapter) into outbox rows keyed ``<id>/push/<n>``;
- **a file** becomes one ``OutboundFile`` row naming its bytes, read once when the push is
  recorded and kept under ``<workspace_dir>/pushes/<id>/`` (content sent along as it came, a
  ``path`` only from under ``http.push_api.file_roots``, never ``/proc`` or ``/sys``, opened
  without following links), so later attempts send what was checked;
- **run_agent** journals a prompt (``MessageOrigin.OPERATOR``, message id = the delivery id)
  and puts it on the bus as intake does, so the router, lanes and turns run it in the named
  conversation's thread and its answer goes through the outbox under the same id.

The outbox and the journal are unique on those keys, so a repeated request (a retry, another
replica behind a balancer) adds nothing. On a store several replicas share, rows are only
recorded and the replicas woken: the chat's holder sends them (per-chat order, fencing). The
CLI only records, too; on SQLite a CLI prompt carries ``AWAITING_PICKUP`` for the daemon's
``pushes`` loop (``pick_up``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import mimetypes
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from bot.config.settings import Settings
from bot.delivery.files import NOT_PUBLISHED, FileRefused, FileTooLarge, read_published
from bot.delivery.replies import ReplyContext
from bot.delivery.writer import Record, ReplyWriter
from bot.messages import (
    ConversationKey,
    Delivery,
    Destination,
    InboundMessage,
    MessageOrigin,
    OutboundFile,
    Sender,
)
from bot.pipeline.bus import InboundBus
from bot.pipeline.journal import Journal
from bot.pipeline.sessions import ChatAddress
from bot.ports import Admission, ChannelCapabilities, Store
from bot.ports.chats import chats_of
from bot.ports.push import (
    AWAITING_PICKUP,
    PUSH_TAG,
    DeliveryState,
    PushFile,
    PushKind,
    PushProblem,
    PushReceipt,
    PushRefused,
    PushRequest,
    PushText,
    RunAgent,
    delivery_id_for,
    kind_of,
)
from bot.push.pickup import LATEST_PUSH, pick_up
from bot.push.spool import keep_pushed_file
from bot.push.status import delivery_report
from bot.records import OutboxItem

logger = logging.getLogger(__name__)

NO_ROOTS = (
    "no file roots are published (http.push_api.file_roots): send the file's bytes instead"
    " (content_base64, or a multipart/form-data upload)"
)
NOT_PUBLISHED_PATH = f"file.path {NOT_PUBLISHED}"

"""A setting the CLI moves after recording a push into a store no replica is woken on."""
OPERATOR_NAME = "operator"

PublishPushed = Callable[[InboundMessage, str], Awaitable[Admission]]
KeyFor = Callable[[ChatAddress], ConversationKey]


@dataclass(frozen=True, slots=True, kw_only=True)
class PushIntake:
    """A daemon's way in for prompts: ``Intake.pushed``, and the bus ``pick_up`` feeds."""

    publish: PublishPushed
    bus: InboundBus


@dataclass(frozen=True, slots=True, kw_only=True)
class PushDeps:
    """``record``: ``Outbox.submit`` where this process sends at once (a daemon alone on its
    store), else ``None``: rows are only recorded. ``intake``: a daemon's, else ``None`` (the
    CLI journals only)."""

    settings: Callable[[], Settings]
    store: Store
    caps_of: Callable[[str], ChannelCapabilities | None]
    """The capabilities of an enabled channel; ``None``: no such channel here."""
    key_for: KeyFor
    record: Record | None = None
    intake: PushIntake | None = None
    repoll: Callable[[], None] | None = None
    """``Outbox.repoll``: look at the store for rows another process recorded."""
    channel_note: Callable[[str], str | None] = lambda _name: None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Resolved:
    """A push's target with everything looked up."""

    address: ChatAddress
    caps: ChannelCapabilities
    delivery_id: str


class Pusher:
    def __init__(self, deps: PushDeps) -> None:
        self._deps = deps
        self._store = deps.store

    async def push(self, request: PushRequest) -> PushReceipt:
        """Record the push; raises ``PushRefused`` for what cannot be sent at all."""
        target = await self._resolve(request)
        kind = kind_of(request.body)
        repeated = await self._recorded(target, request)
        status = DeliveryState.QUEUED
        if not repeated:
            await self._audit(request, target, kind)
        else:
            report = await delivery_report(self._store, target.delivery_id)
            status = DeliveryState.QUEUED if report is None else report.status
        logger.info(
            "push %s delivery=%s channel=%s chat=%s repeated=%s",
            kind,
            target.delivery_id,
            target.address.channel,
            target.address.chat_id,
            repeated,
        )
        note = self._deps.channel_note(target.address.channel)
        return PushReceipt(
            delivery_id=target.delivery_id, kind=kind, status=status, repeated=repeated, note=note
        )

    async def _recorded(self, target: _Resolved, request: PushRequest) -> bool:
        """Record the push; ``True`` when it was recorded before (a repeat)."""
        body = request.body
        if isinstance(body, RunAgent):
            return await self._run_agent(target, body)
        if isinstance(body, PushText):
            return await self._record(target, await self._text_items(target, body))
        return await self._record(target, await self._file_items(target, body))

    # ------------------------------------------------------------------ target

    async def _resolve(self, request: PushRequest) -> _Resolved:
        wanted = request.target
        caps = self._deps.caps_of(wanted.channel)
        if caps is None:
            raise PushRefused(
                PushProblem.NOT_FOUND, "channel", f"channel {wanted.channel!r} is not enabled"
            )
        account, chat_type = wanted.account_id, wanted.chat_type
        if account is None or chat_type is None:
            directory = chats_of(self._store)
            known = None
            if directory is not None:
                known = await directory.find(wanted.channel, wanted.chat_id, account)
            if known is None and chat_type is None:
                raise PushRefused(
                    PushProblem.NOT_FOUND,
                    "chat",
                    f"chat {wanted.chat_id!r} on {wanted.channel} is unknown (nothing was"
                    ' received from it lately): name its chat_type, "dm" or "group"'
                    " (`--chat-type` with switchboard send)",
                )
            if known is not None:
                account = known.account_id if account is None else account
                chat_type = known.chat_type if chat_type is None else chat_type
        assert chat_type is not None  # noqa: S101 - refused above otherwise
        address = ChatAddress(
            channel=wanted.channel,
            account_id=account or "",
            chat_id=wanted.chat_id,
            chat_type=chat_type,
            topic_id=wanted.topic_id,
            user_id=wanted.user_id,
        )
        # From the request as given, not the account looked up: a repeat must be the same
        # delivery even when the first was taken before the chat's account was known.
        delivery_id = delivery_id_for(
            wanted.channel, wanted.account_id or "", request.idempotency_key
        )
        return _Resolved(address=address, caps=caps, delivery_id=delivery_id)

    # ------------------------------------------------------------------ text and files

    async def _writer(self, target: _Resolved, collected: list[OutboxItem]) -> ReplyWriter:
        """A writer into the named conversation that only collects what it plans."""
        key = self._deps.key_for(target.address)
        conversation = await self._store.conversations.active(key)
        address = target.address
        ctx = ReplyContext(
            key=key,
            thread_id=None if conversation is None else conversation.thread_id,
            destination=Destination(
                channel=address.channel,
                account_id=address.account_id,
                chat_id=address.chat_id,
                chat_type=address.chat_type,
                topic_id=address.topic_id,
            ),
            reply_to=None,
            correlation_id=target.delivery_id,
            turn_tag=PUSH_TAG,
        )

        async def collect(
            items: Sequence[OutboxItem], *, finishes: Sequence[int] = ()
        ) -> list[int]:
            del finishes
            collected.extend(items)
            return []

        return ReplyWriter(ctx, target.caps, collect)

    async def _text_items(self, target: _Resolved, push: PushText) -> list[OutboxItem]:
        items: list[OutboxItem] = []
        await (await self._writer(target, items)).text(push.text)
        return items

    async def _file_items(self, target: _Resolved, push: PushFile) -> list[OutboxItem]:
        """One row naming the push's bytes as kept in the spool: read once here (a path from
        a published root, or content sent along), so what is sent is what was checked."""
        caps = target.caps
        if push.path is None:
            content = push.content or b""
        else:
            content = await self._published(push, caps)
        if len(content) > caps.max_file_bytes:
            raise PushRefused(
                PushProblem.INVALID,
                "file",
                f"{push.name} is {len(content)} bytes; {target.address.channel} takes at most"
                f" {caps.max_file_bytes}",
            )
        root = self._deps.settings().workspace_root
        path = await asyncio.to_thread(
            keep_pushed_file, root, target.delivery_id, push.name, content
        )
        size = len(content)
        items: list[OutboxItem] = []
        writer = await self._writer(target, items)
        mime = mimetypes.guess_type(push.name)[0] or ""
        upload = OutboundFile(
            destination=writer.ctx.destination,
            path=str(path),
            name=push.name,
            size=size,
            is_image=mime.startswith("image/") and size <= caps.max_image_bytes,
            caption=push.caption,
        )
        return [writer.ctx.item(0, upload)]

    async def _published(self, push: PushFile, caps: ChannelCapabilities) -> bytes:
        """The bytes of ``push.path``, from under ``http.push_api.file_roots`` only."""
        roots = self._deps.settings().http.push_api.file_roots
        if not roots:
            raise PushRefused(PushProblem.INVALID, "file.path", NO_ROOTS)
        limit = caps.max_file_bytes
        try:
            return await asyncio.to_thread(read_published, str(push.path), roots, limit)
        except FileTooLarge:
            message = f"{push.name} is larger than {limit} bytes, the most this channel takes"
            raise PushRefused(PushProblem.INVALID, "file", message) from None
        except FileRefused:
            raise PushRefused(PushProblem.INVALID, "file.path", NOT_PUBLISHED_PATH) from None

    async def _record(self, target: _Resolved, items: list[OutboxItem]) -> bool:
        """Record the rows unless the delivery exists; ``True`` when it did (a repeat)."""
        existing = await self._store.outbox.for_correlation(target.delivery_id)
        if existing:
            recorded = sorted(existing, key=lambda row: row.id)
            _same_or_conflict(
                [_without_account(row.item.delivery) for row in recorded],
                [_without_account(item.delivery) for item in items],
            )
            return True
        if self._deps.record is not None:
            await self._deps.record(items)
        else:
            await self._store.outbox.enqueue_rows(items)
            await self._wake(target.delivery_id)
        return False

    async def _wake(self, delivery_id: str) -> None:
        """On a shared store, the chat's holder (or the sweep of an orphaned chat) sends; a
        daemon alone on its store notices ``LATEST_PUSH`` change (``pick_up``)."""
        if self._store.leases.shared:
            await self._store.leases.wake(["*"])  # the holder's outbox polls (``ChatOwnership``)
            if self._deps.repoll is not None:
                self._deps.repoll()  # the holder may be this replica: no need to wait for it
        else:
            await self._store.settings.set(LATEST_PUSH, delivery_id)

    # ------------------------------------------------------------------ run_agent

    async def _run_agent(self, target: _Resolved, run: RunAgent) -> bool:
        address = target.address
        message = InboundMessage(
            channel=address.channel,
            account_id=address.account_id,
            chat_id=address.chat_id,
            chat_type=address.chat_type,
            message_id=target.delivery_id,
            sender=Sender(id=address.user_id or "", display_name=OPERATOR_NAME),
            text=run.prompt,
            thread_root_id=address.topic_id,
            mentions_bot=True,
            origin=MessageOrigin.OPERATOR,
        )
        for entry in await self._store.inbound.find(address.channel, target.delivery_id):
            if entry.correlation_id == target.delivery_id:
                _same_or_conflict([entry.message.text], [run.prompt])
                return True
        if self._deps.intake is None:
            return await self._journal_only(message, target.delivery_id)
        admission = await self._deps.intake.publish(message, target.delivery_id)
        if admission is Admission.DUPLICATE:
            return True
        if admission is not Admission.ACCEPTED:
            raise PushRefused(
                PushProblem.UNAVAILABLE,
                "run_agent",
                f"the daemon cannot take a prompt now ({admission}); try again",
            )
        return False

    async def _journal_only(self, message: InboundMessage, delivery_id: str) -> bool:
        (entry_id,) = await self._store.inbound.record_many([(message, delivery_id)])
        if entry_id is None:
            return True
        if not self._store.leases.shared:
            await Journal(self._store.inbound).accepted(entry_id, AWAITING_PICKUP)
        await self._wake(delivery_id)
        return False

    async def pick_up(self, ready: asyncio.Event) -> None:
        """The kernel loop ``pushes`` of a daemon alone on its store (``bot.push.pickup``)."""
        if self._deps.intake is not None:
            await pick_up(self._store, self._deps.intake.bus, self._deps.repoll, ready)

    # ------------------------------------------------------------------ bookkeeping

    async def _audit(self, request: PushRequest, target: _Resolved, kind: PushKind) -> None:
        """Who pushed what where (never the text)."""
        address = target.address
        where = f"{address.channel} chat={address.chat_id}"
        if address.topic_id is not None:
            where += f" topic={address.topic_id}"
        await self._store.audit.record(
            request.actor, f"push {kind}", f"{target.delivery_id} {where}"
        )


def _same_or_conflict(before: Sequence[object], now: Sequence[object]) -> None:
    if list(before) != list(now):
        raise PushRefused(
            PushProblem.CONFLICT,
            "Idempotency-Key",
            "this Idempotency-Key was used for a different request",
        )


def _without_account(delivery: Delivery) -> Delivery:
    """A delivery as a repeat compares it: without its destination's account, which the
    first of two repeats may have lacked (nothing had been received from the chat yet)."""
    bare = dataclasses.replace(delivery.destination, account_id="")
    return dataclasses.replace(delivery, destination=bare)
