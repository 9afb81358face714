"""One agent turn: thread → uploads → agent events → progress → final delivery (design §5 to §8).

Every way a turn can end produces a visible result: the answer, a question, or a final
message saying what went wrong with a short reference id — never silence and never a
placeholder left "thinking". A turn cancelled by shutdown stays journaled so the next start
resumes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from bot.config.settings import Settings
from bot.delivery.assembly import Delivery
from bot.delivery.progress import ProgressStream
from bot.delivery.replies import ReplyContext
from bot.delivery.writer import ReplyWriter
from bot.errors import AgentError, ChatLost
from bot.hub import ChannelHub
from bot.messages import Reaction, utc_now
from bot.pipeline import revised_turns as revised
from bot.pipeline.endings import EndingTurn, end_turn
from bot.pipeline.journal import Journal
from bot.pipeline.lanes import CancelReason, CancelToken, TurnRequest
from bot.pipeline.turn_hooks import (
    TurnInput,
    TurnParts,
    TurnUsage,
    asker_of,
    build_turn,
    correlation_for,
    placeholder_tag,
)
from bot.pipeline.turn_marks import TurnMark
from bot.pipeline.workspaces import ThreadWorkspaces
from bot.ports import (
    AgentBackend,
    Channel,
    ClarificationRequest,
    FinalAnswer,
    Store,
    TextDelta,
    Turn,
)
from bot.ports.agent import ApprovalRequest, ModelUsage
from bot.records import InboundStatus
from bot.workspace import ThreadWorkspace

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnDeps:
    settings: Callable[[], Settings]
    store: Store
    agent: AgentBackend
    hub: ChannelHub
    delivery: Delivery
    parts: TurnParts


@dataclass(frozen=True, slots=True, kw_only=True)
class _Scope:
    """Everything one running turn works with."""

    request: TurnRequest
    channel: Channel
    replies: ReplyWriter
    stream: ProgressStream
    workspace: ThreadWorkspace
    thread_id: str


class TurnRunner:
    def __init__(self, deps: TurnDeps) -> None:
        self._settings = deps.settings
        self._store = deps.store
        self._agent = deps.agent
        self._hub = deps.hub
        self._sessions = deps.parts.sessions
        self._outbox = deps.delivery.outbox
        self._limiter = deps.delivery.limiter
        self._clarifications = deps.parts.clarifications
        self._counters = deps.delivery.counters
        self._fence = deps.delivery.fence
        self._tools = deps.parts.tools
        self._hooks = deps.parts.hooks
        self._workspaces = ThreadWorkspaces(lambda: self._settings().workspace_root)

    async def __call__(self, request: TurnRequest, token: CancelToken) -> None:
        channel = self._hub.get(request.key.channel)
        if channel is None:
            await self._mark(request, InboundStatus.FAILED, "channel not running")
            return
        started = time.monotonic()
        try:
            conversation = await self._thread_for(request)
        except AgentError as exc:
            await self._no_thread(request, channel, exc)
            return
        except Exception:
            logger.exception("creating a thread crashed key=%s", request.key.describe())
            await self._no_thread(request, channel, AgentError("an internal error"))
            return
        replies = self._replies(
            channel, request, conversation, correlation_for(request, conversation)
        )
        ctx = replies.ctx
        await self._mark_turn(request, ctx.correlation_id, agent_started=False, thread=conversation)
        outcome = "ok"
        self._counters.runs_active.inc()
        try:
            outcome = await self._run(request, channel, replies, token)
            if request.resumed is not None and outcome != "lost":
                await self._hooks.resumed_ended(request.resumed.run_id)
        finally:
            self._counters.runs_active.dec()
            self._counters.run_seconds.labels(outcome=outcome).observe(time.monotonic() - started)
            logger.info(
                "turn key=%s thread=%s correlation=%s outcome=%s duration=%.3fs",
                request.key.describe(),
                conversation,
                ctx.correlation_id,
                outcome,
                time.monotonic() - started,
            )

    async def _no_thread(self, request: TurnRequest, channel: Channel, exc: AgentError) -> None:
        """No thread could be had (the agent server is down): say so like any failed turn,
        with a reference id, and mark the messages failed."""
        reference = request.items[-1].correlation_id if request.items else "no-thread"
        logger.warning("no thread correlation=%s: %s", reference, exc.detail or exc)
        replies = self._replies(channel, request, None, reference)
        await replies.text(failure_text(exc.reason, reference))
        await self._mark(request, InboundStatus.FAILED, f"no thread: {exc.reason}")
        self._counters.run_seconds.labels(outcome="agent_error").observe(0.0)

    def _replies(
        self, channel: Channel, request: TurnRequest, thread_id: str | None, correlation: str
    ) -> ReplyWriter:
        """Replies to the request's last message (``correlation``: the key without one)."""
        ctx = ReplyContext.answering(
            request.key,
            request.items[-1] if request.items else None,
            destination=request.destination,
            thread_id=thread_id,
            correlation_id=correlation,
            tag=revised.RESTART_TAG if request.restarted else "final",
        )
        return ReplyWriter(ctx, channel.capabilities, self._outbox.submit)

    async def _thread_for(self, request: TurnRequest) -> str:
        if request.answered is not None:
            return request.answered.thread_id
        if request.resumed is not None:
            return request.resumed.thread_id
        return (await self._sessions.ensure_thread(request.key)).thread_id

    async def _run(
        self, request: TurnRequest, channel: Channel, replies: ReplyWriter, token: CancelToken
    ) -> str:
        ctx = replies.ctx
        assert ctx.thread_id is not None  # noqa: S101 - set by __call__
        workspace = await self._workspaces.get(ctx.thread_id)
        parts = TurnInput(
            tools=self._tools, max_upload_bytes=self._settings().agent.max_upload_bytes
        )
        turn = await build_turn(request, channel, workspace, token.quiet, parts)
        stream = ProgressStream(
            channel,
            self._outbox,
            self._limiter,
            ctx.tagged(placeholder_tag(request)),
            counters=self._counters,
            fence=self._fence,
        )
        scope = _Scope(
            request=request,
            channel=channel,
            replies=replies,
            stream=stream,
            workspace=workspace,
            thread_id=ctx.thread_id,
        )
        await self._react(replies, Reaction.WORKING)
        try:
            if request.restarted:  # inside: a withdrawal may cancel it right away
                await revised.adopt_placeholder(stream, self._store, ctx.correlation_id)
            return await self._events(scope, turn)
        except asyncio.CancelledError:
            await self._cancelled(scope, token)
            raise
        except ChatLost as exc:
            # Another replica holds the chat now and answers it: nothing more goes out here.
            logger.info("turn dropped correlation=%s: %s", ctx.correlation_id, exc)
            await self._end_lost(scope)
            return "lost"
        except AgentError as exc:
            logger.warning("agent failed correlation=%s: %s", ctx.correlation_id, exc.detail or exc)
            await self._fail(scope, exc.reason)
            return "agent_error"
        except Exception:
            logger.exception("turn crashed correlation=%s", ctx.correlation_id)
            await self._fail(scope, "something went wrong on our side")
            return "error"

    async def _events(self, scope: _Scope, turn: Turn) -> str:
        timeout_s = self._settings().agent.run_timeout_s
        final: FinalAnswer | None = None
        reported = 0
        try:
            async with asyncio.timeout(timeout_s):
                await self._agent.ready()  # a crash while it loads does not count (design §11)
                await self._mark_turn(scope.request, scope.replies.ctx.correlation_id)
                if scope.request.resumed is None:  # a message or an answer moves it on
                    await self._hooks.moved_on(scope.thread_id)
                scope.stream.start()  # progress shows once the agent run begins
                async with contextlib.aclosing(self._agent.run(scope.thread_id, turn)) as events:
                    async for event in events:
                        if isinstance(event, TextDelta):
                            scope.stream.add_text(event.text)
                        elif isinstance(event, ModelUsage):  # recorded before the run goes on
                            await asyncio.shield(self._used(scope, event, first=not reported))
                            reported += 1
                        elif isinstance(event, ClarificationRequest):
                            await self._ask(scope, event)
                            return "asked"
                        elif isinstance(event, ApprovalRequest):
                            await self._ask_approval(scope, event)
                            return "approval"
                        elif isinstance(event, FinalAnswer):
                            final = event
        except TimeoutError:
            await self._agent.cancel(scope.thread_id)
            reason = f"the agent did not finish within {timeout_s:g} seconds and was stopped"
            await self._fail(scope, reason)
            return "timeout"
        final = final or FinalAnswer(text=scope.stream.text)
        if scope.request.resumed is not None and not final.text.strip() and not final.files:
            await self._settled_quietly(scope)  # the paused run had already gone on
            return "ok"
        await self._deliver(scope, final)
        return "ok"

    async def _used(self, scope: _Scope, call: ModelUsage, *, first: bool) -> None:
        request = scope.request
        usage = TurnUsage(
            key=request.key,
            user_id=asker_of(request),
            thread_id=scope.thread_id,
            correlation_id=scope.replies.ctx.correlation_id,
            call=call,
            first=first,
        )
        try:
            await self._hooks.used(usage)
        except Exception:
            logger.exception("recording usage failed correlation=%s", usage.correlation_id)

    async def _ask(self, scope: _Scope, event: ClarificationRequest) -> None:
        ctx, caps = scope.replies.ctx, scope.channel.capabilities
        placeholder = await scope.stream.close()
        if scope.stream.text.strip():
            await scope.replies.text(scope.stream.text, placeholder_id=placeholder)
        request = scope.request
        await self._clarifications.ask(event, ctx, asker_of(request), caps, self._outbox.send_now)
        await self._mark(request, InboundStatus.HANDLED, "asked")

    async def _ask_approval(self, scope: _Scope, event: ApprovalRequest) -> None:
        """The run paused before tool calls that need a person's decision (design §24)."""
        if self._hooks.ask_approval is None:
            raise AgentError(
                "this tool call needs an approval, and approvals are not available here",
                detail="approval requested without an approvals store",
            )
        placeholder = await scope.stream.close()
        if scope.stream.text.strip():
            await scope.replies.text(scope.stream.text, placeholder_id=placeholder)
        request = scope.request
        ctx, caps = scope.replies.ctx, scope.channel.capabilities
        await self._hooks.ask_approval(event, ctx, asker_of(request), caps, self._outbox.send_now)
        await self._mark(request, InboundStatus.HANDLED, "awaiting approval")

    async def _settled_quietly(self, scope: _Scope) -> None:
        await scope.stream.close()
        await self._mark(scope.request, InboundStatus.HANDLED, "nothing to resume")

    async def _deliver(self, scope: _Scope, final: FinalAnswer) -> None:
        placeholder = await scope.stream.close()
        answered = [item.entry_id for item in scope.request.items]
        label = scope.request.label
        text = f"{label}\n\n{final.text}" if label else final.text
        await scope.replies.answer(
            text, final.files, scope.workspace, placeholder_id=placeholder, finishes=answered
        )
        self._observe_first_reply(scope.request)
        await self._react(scope.replies, Reaction.DONE)

    async def _fail(self, scope: _Scope, reason: str) -> None:
        placeholder = await scope.stream.close()
        text = failure_text(reason, scope.replies.ctx.correlation_id)
        await scope.replies.text(text, placeholder_id=placeholder)
        await self._react(scope.replies, Reaction.FAILED)
        await self._mark(scope.request, InboundStatus.FAILED, reason)

    async def _cancelled(self, scope: _Scope, token: CancelToken) -> None:
        """Finish a cancelled turn visibly; shielded so the cancellation cannot cut it short."""
        await asyncio.shield(end_turn(self._ending(scope), token))

    async def _end_lost(self, scope: _Scope) -> None:
        await end_turn(self._ending(scope), CancelToken(CancelReason.LOST))

    def _ending(self, scope: _Scope) -> EndingTurn:
        return EndingTurn(
            stream=scope.stream,
            replies=scope.replies,
            store=self._store,
            record=self._outbox.submit,
            handled=functools.partial(self._mark, scope.request, InboundStatus.HANDLED),
        )

    async def _react(self, replies: ReplyWriter, reaction: Reaction) -> None:
        if self._hub.get(replies.ctx.key.channel) is not None:  # not stopped meanwhile
            await replies.tagged(f"react-{reaction}").react(reaction)

    def _observe_first_reply(self, request: TurnRequest) -> None:
        if request.items:
            waited = (utc_now() - request.items[0].message.received_at).total_seconds()
            self._counters.first_reply_seconds.observe(max(0.0, waited))

    async def _mark_turn(
        self,
        request: TurnRequest,
        correlation_id: str,
        *,
        agent_started: bool = True,
        thread: str | None = None,
    ) -> None:
        """Say in the journal which turn answers the request's messages and whether its agent
        run began (``TurnMark``). Each message keeps its own count of crashes: a fresh one
        merged with a recovered one has none. Issued together, the updates go to the store as
        one statement (SQLite batches them into one ``executemany``)."""
        journal = Journal(self._store.inbound)
        marks = [
            journal.running(
                item.entry_id,
                key=request.key,
                thread_id=thread,
                reason=TurnMark(
                    turn=correlation_id,
                    agent_started=agent_started,
                    interrupted=item.interrupted,
                ).encode(),
            )
            for item in request.items
        ]
        if len(marks) == 1:
            await marks[0]  # the usual turn, one message: no task to make for it
        else:
            await asyncio.gather(*marks)

    async def _mark(
        self,
        request: TurnRequest,
        status: InboundStatus,
        reason: str | None,
        *,
        thread_id: str | None = None,
    ) -> None:
        for item in request.items:
            await Journal(self._store.inbound).finish(
                item.entry_id, status, reason, key=request.key, thread_id=thread_id
            )


def failure_text(reason: str, reference: str) -> str:
    """The final message of a failed turn: what happened, and an id to quote to the operator.

    Reasons come from backends as sentences ("The model could not be reached.") or as
    fragments; either reads right after the colon.
    """
    fragment = reason.strip().rstrip(".")
    if fragment[:1].isupper() and not fragment[1:2].isupper():
        fragment = fragment[0].lower() + fragment[1:]
    return f"⚠️ Sorry, I could not finish this reply: {fragment}. (ref `{reference}`)"
