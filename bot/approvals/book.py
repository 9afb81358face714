"""Approvals kept, shown and decided (design §24).

A paused run is recorded before its messages are posted, so a press that races the send finds
it, and it survives restarts and failovers. Each approval is decided once (a compare-and-set
in the store, whichever replica the press lands on); the run is resumed once, by whoever
decides its last pending approval (``claim_run``) or, for decisions made from the console or
the command line and for expiry, by the daemon's sweep. Every decision edits the request's
message to say who decided what and when.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.approvals.config import ApprovalSettings
from bot.approvals.decisions import STATES, edited_args, resumption_of, verb
from bot.approvals.metrics import ApprovalMetrics
from bot.approvals.permits import Person, may_decide
from bot.approvals.render import (
    buttons,
    decided_text,
    edit_template,
    request_text,
    when,
)
from bot.config.settings import Settings
from bot.delivery.progress import OutboxSend
from bot.delivery.replies import ReplyContext
from bot.delivery.writer import Record
from bot.messages import Destination, OutboundKind, OutboundText, TextEdit, utc_now
from bot.pipeline.lanes import Resumption
from bot.ports import ChannelCapabilities, Store
from bot.ports.agent import ApprovalRequest, Decision
from bot.ports.approvals import (
    Approval,
    ApprovalRun,
    ApprovalState,
    Decided,
    approvals_of,
)
from bot.records import OutboxItem

logger = logging.getLogger(__name__)

CapabilitiesOf = Callable[[str], ChannelCapabilities | None]
Holds = Callable[[ApprovalRun], Awaitable[bool]]
"""Whether this process answers the run's chat now (the fence, on a shared store)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What became of a decision: the text for the person who made it, and the resumption
    to run if it was the run's last."""

    text: str
    decided: bool
    resumption: Resumption | None = None
    run: ApprovalRun | None = None


class ApprovalBook:
    def __init__(  # noqa: PLR0913 - what deciding touches
        self,
        settings: Callable[[], Settings],
        store: Store,
        record: Record,
        caps_of: CapabilitiesOf,
        metrics: ApprovalMetrics,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._settings = settings
        self._store = approvals_of(store)
        self._audit = store.audit
        self._record = record
        self._caps_of = caps_of
        self._metrics = metrics
        self._clock = clock
        self._started = clock()
        """Runs claimed before this process started and never finished were cut off by a
        crash (or a replica that is gone): the sweep resumes them again."""

    @property
    def available(self) -> bool:
        return self._store is not None

    @property
    def metrics(self) -> ApprovalMetrics:
        """The daemon's approval metrics (an operator surface in the daemon counts into them)."""
        return self._metrics

    def _config(self) -> ApprovalSettings:
        return self._settings().agent.approvals

    async def ask(
        self,
        request: ApprovalRequest,
        ctx: ReplyContext,
        asker_id: str,
        caps: ChannelCapabilities,
        send: OutboxSend,
    ) -> ApprovalRun:
        """Record the paused run, then post one message per action."""
        if self._store is None or ctx.thread_id is None:
            raise RuntimeError("approvals need a store that keeps them and a thread")
        now, config = self._clock(), self._config()
        run = ApprovalRun(
            id=uuid.uuid4().hex[:12],
            key=ctx.key,
            chat_type=ctx.destination.chat_type,
            thread_id=ctx.thread_id,
            correlation_id=ctx.correlation_id,
            created_at=now,
        )
        approvals = [
            Approval(
                id=uuid.uuid4().hex[:10],
                run_id=run.id,
                position=index,
                key=ctx.key,
                chat_type=run.chat_type,
                thread_id=run.thread_id,
                asker_id=asker_id,
                tool=action.name,
                args=action.args,
                description=action.description,
                allowed=action.allowed,
                deciders=config.deciders_of(action.name),
                created_at=now,
                expires_at=now + timedelta(seconds=config.ttl_s),
            )
            for index, action in enumerate(request.actions)
        ]
        await self._store.add(run, approvals)
        self._metrics.asked.inc(len(approvals))
        for approval in approvals:
            await self._post(approval, len(approvals), ctx.tagged("approval"), caps, send)
        logger.info("approval asked run=%s key=%s", run.id, ctx.key.describe())
        return run

    async def _post(
        self,
        approval: Approval,
        count: int,
        ctx: ReplyContext,
        caps: ChannelCapabilities,
        send: OutboxSend,
    ) -> None:
        delivery = OutboundText(
            destination=ctx.destination,
            text=request_text(approval, count, self._config()),
            kind=OutboundKind.FINAL,
            reply_to=ctx.reply_to if approval.position == 0 else None,
            buttons=buttons(approval, caps),
        )
        ref = await send(ctx.item(approval.id, delivery))
        if ref is not None and ref.message_ids and self._store is not None:
            await self._store.set_message(approval.id, ref.last)

    async def get(self, approval_id: str) -> Approval | None:
        return None if self._store is None else await self._store.get(approval_id)

    async def decide(self, approval_id: str, decision: Decision, person: Person) -> Verdict:
        """Decide one approval for ``person``; a refusal or a late press changes nothing and
        says why."""
        approval = await self.get(approval_id)
        if approval is None or self._store is None:
            return Verdict(text=f"There is no approval request {approval_id!r}.", decided=False)
        refusal = self._refusal(approval, decision, person)
        if refusal is not None:
            self._metrics.refused.inc()
            await self._audit.record(person.ref, "approval.refused", f"{approval.id}: {refusal}")
            return Verdict(text=refusal, decided=False)
        args = edited_args(approval, decision) if decision.type == "edit" else None
        if isinstance(args, ValueError):
            return Verdict(text=f"Not decided: {args}", decided=False)
        decided = Decided(
            state=STATES[decision.type],
            by=person.ref,
            by_name=person.name or person.ref,
            at=self._clock(),
            args=args,
            reason=decision.message if decision.type == "reject" else None,
        )
        if not await self._store.decide(approval.id, decided):
            return Verdict(text=await self._late(approval.id), decided=False)
        self._metrics.decided(decided.state, decided.at - approval.created_at)
        detail = f"{approval.id} {approval.tool} in {approval.key.describe()}"
        await self._audit.record(person.ref, f"approval.{decided.state.value}", detail)
        logger.info("approval decided id=%s outcome=%s", approval.id, decided.state.value)
        await self._show_decided(approval.id)
        text = f"{verb(decided.state)} {approval.tool} (ID {approval.id})."
        if person.operator:  # no lane here to resume in: the sweep of the chat's holder does
            return Verdict(text=text, decided=True)
        resumption, run = await self._claim(approval.run_id)
        return Verdict(text=text, decided=True, resumption=resumption, run=run)

    def _refusal(self, approval: Approval, decision: Decision, person: Person) -> str | None:
        if not may_decide(approval, person):
            return "You are not allowed to decide on this request."
        if approval.state is not ApprovalState.PENDING:
            return None  # said by ``_late``, once the store agrees
        if decision.type not in approval.allowed:
            allowed = ", ".join(approval.allowed)
            return f"This request cannot be decided with {decision.type!r} (allowed: {allowed})."
        return None

    async def _late(self, approval_id: str) -> str:
        now = await self.get(approval_id)
        if now is None:
            return "That request no longer exists."
        if now.state is ApprovalState.PENDING:  # past its expiry; the sweep will say so
            return "That request has expired."
        who = f" by {now.decided_by_name or now.decided_by}" if now.decided_by else ""
        return f"That request was already {now.state.value}{who} at {when(now.decided_at)}."

    async def recovered(self, approval_id: str, person: Person) -> Verdict | None:
        """A press journaled before a crash, replayed by recovery: if it was this press that
        decided the run's last request, the run was claimed but may not have gone on, so it is
        resumed again (a run that went on has nothing pending, and resuming it does nothing)."""
        approval = await self.get(approval_id)
        if self._store is None or approval is None or approval.decided_by != person.ref:
            return None
        return await self._again(approval.run_id)

    async def _again(self, run_id: str) -> Verdict | None:
        """Reclaim a claimed run whose resumed turn never ended, for one caller only."""
        assert self._store is not None  # noqa: S101 - callers checked
        found = await self._store.run(run_id)
        if found is None:
            return None
        run, approvals = found
        if run.resumed_at is None or run.finished_at is not None or not approvals:
            return None
        if not await self._store.reclaim(run.id, run.resumed_at, self._clock()):
            return None
        resumption = resumption_of(run, approvals)
        logger.info("approval run resumes again after a crash run=%s", run.id)
        return Verdict(text="", decided=True, resumption=resumption, run=run)

    async def finished(self, run_id: str) -> None:
        """The resumed run's turn ended: a crash after this does not resume it again."""
        if self._store is not None:
            await self._store.finish_run(run_id, self._clock())

    async def _claim(self, run_id: str) -> tuple[Resumption | None, ApprovalRun | None]:
        """The run's resumption if this caller is the one to resume it."""
        assert self._store is not None  # noqa: S101 - callers checked
        if not await self._store.claim_run(run_id, self._clock()):
            return None, None
        found = await self._store.run(run_id)
        if found is None:
            return None, None
        run, approvals = found
        for approval in approvals:
            await self._show_decided(approval.id, approval)
        if all(a.state is ApprovalState.CANCELLED for a in approvals):
            return None, run  # its thread moved on: nothing to resume
        resumption = resumption_of(run, approvals)
        logger.info("approval run resumes run=%s key=%s", run.id, run.key.describe())
        return resumption, run

    async def _show_decided(self, approval_id: str, approval: Approval | None = None) -> None:
        """Edit the request's message to its outcome (keyed: shown once however often)."""
        approval = approval or await self.get(approval_id)
        if approval is None or approval.state is ApprovalState.PENDING:
            return
        caps = self._caps_of(approval.key.channel)
        if caps is None:
            return
        destination = Destination.of(approval.key, approval.chat_type)
        text = decided_text(approval, self._config())
        shown: TextEdit | OutboundText
        if caps.edits and approval.message_id is not None:
            shown = TextEdit(
                destination=destination,
                message_id=approval.message_id,
                text=text,
                kind=OutboundKind.NOTICE,
            )
        else:  # a platform that cannot edit (DingTalk) says the outcome below the request
            shown = OutboundText(
                destination=destination,
                text=text,
                kind=OutboundKind.NOTICE,
                reply_to=approval.message_id,
            )
        await self._record([_item(approval, "decided", shown)])

    def edit_template(self, approval: Approval) -> str:
        return edit_template(approval, self._config())

    async def moved_on(self, thread_id: str) -> None:
        """A new message started a turn on the thread: its paused run cannot resume. Looked
        up only where runs can pause for approvals (tools configured, or a remote graph that
        brings its own middleware)."""
        agent = self._settings().agent
        if self._store is None or not (agent.approvals.tools or agent.backend == "remote"):
            return
        for approval in await self._store.cancel_thread(thread_id):
            self._metrics.decided(ApprovalState.CANCELLED, None)
            await self._show_decided(approval.id)

    async def sweep(self, holds: Holds) -> list[tuple[ApprovalRun, Resumption]]:
        """Expire what is overdue, claim the runs decided elsewhere (console, command line,
        expiry) and reclaim those a crash cut off, for the chats this process holds; returns
        what to resume."""
        if self._store is None:
            return []
        for approval in await self._store.expire_due(self._clock()):
            self._metrics.decided(ApprovalState.EXPIRED, None)
            await self._audit.record("system", "approval.expired", approval.id)
            await self._show_decided(approval.id)
            await self._tell_expired(approval)
        resumed: list[tuple[ApprovalRun, Resumption]] = []
        for run in await self._store.unfinished_runs(claimed_before=self._started):
            if await holds(run) and (again := await self._again(run.id)) is not None:
                assert again.resumption is not None  # noqa: S101 - _again sets it
                resumed.append((run, again.resumption))
        for run in await self._store.settled_runs():
            if not await holds(run):
                continue
            resumption, claimed = await self._claim(run.id)
            if resumption is not None and claimed is not None:
                resumed.append((claimed, resumption))
        return resumed

    async def _tell_expired(self, approval: Approval) -> None:
        notice = OutboundText(
            destination=Destination.of(approval.key, approval.chat_type),
            text=f"⌛ Nobody decided on running `{approval.tool}` in time (ID `{approval.id}`): "
            "it was not run, and the agent was told.",
            kind=OutboundKind.NOTICE,
            reply_to=approval.message_id,
        )
        await self._record([_item(approval, "expired", notice)])


def _item(approval: Approval, tag: str, delivery: OutboundText | TextEdit) -> OutboxItem:
    return OutboxItem(
        idempotency_key=f"approval/{approval.id}/{tag}",
        delivery=delivery,
        key=approval.key,
        thread_id=approval.thread_id,
        correlation_id=f"approval-{approval.run_id}",
    )
