"""What a turn borrows from the features' rooms (the agent's tools, the points where a run
pauses for approvals or ends with usage) and how its input is made (design §5, §6)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.delivery.progress import OutboxSend
from bot.delivery.replies import ReplyContext
from bot.messages import ConversationKey, Sender
from bot.pipeline.clarifications import Clarifications
from bot.pipeline.group_context import render_context
from bot.pipeline.lanes import Quiet, TurnRequest
from bot.pipeline.sessions import Sessions
from bot.pipeline.uploads import save_uploads
from bot.ports import Channel, ChannelCapabilities, Turn
from bot.ports.agent import ApprovalRequest, ModelUsage
from bot.ports.mutes import TurnHandoff
from bot.ports.schedules import TurnScheduler
from bot.workspace import ThreadWorkspace


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnTools:
    """What the agent's tools reach, made per turn."""

    scheduler_for: Callable[[TurnRequest], TurnScheduler | None] = lambda _request: None
    """The schedules of the request's conversation (design §19)."""
    handoff_for: Callable[[TurnRequest, Quiet], TurnHandoff | None] = lambda _request, _quiet: None
    """The handoff of the request's conversation (design §22); it ends the turn through the
    turn's own lane (``CancelToken.quiet``)."""


AskApproval = Callable[
    [ApprovalRequest, ReplyContext, str, ChannelCapabilities, OutboxSend], Awaitable[object]
]
"""Record a paused run's approvals and post them (``ApprovalBook.ask``, design §24)."""


async def _nothing(*_args: object) -> None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnUsage:
    """What one model call of a turn used, for the usage meter (design §25): reported as the
    agent reports it, before the run goes on, so a turn cut short (a crash, a timeout, a
    stop) still counts every call the provider served."""

    key: ConversationKey
    user_id: str
    thread_id: str
    correlation_id: str
    call: ModelUsage
    first: bool
    """The run's first call: its row counts the turn."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnHooks:
    """What the features' rooms do at points of a turn."""

    ask_approval: AskApproval | None = None
    """None: no store keeps approvals; a run that pauses for one fails visibly."""
    moved_on: Callable[[str], Awaitable[None]] = _nothing
    """A user's message starts a turn on the thread: a run paused there cannot resume."""
    used: Callable[[TurnUsage], Awaitable[None]] = _nothing
    """Each model call's usage, as the agent reports it (however the turn then ends)."""
    resumed_ended: Callable[[str], Awaitable[None]] = _nothing
    """A resumed run's turn ended here (answered or failed; not cut off by a stop or a lost
    chat): its run is finished (``ApprovalBook.finished``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnParts:
    """What a turn uses beyond the ground and delivery: the conversations' parts and what
    the features' rooms lend it."""

    sessions: Sessions
    clarifications: Clarifications
    tools: TurnTools = field(default_factory=TurnTools)
    hooks: TurnHooks = field(default_factory=TurnHooks)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnInput:
    tools: TurnTools
    max_upload_bytes: int


async def build_turn(
    request: TurnRequest,
    channel: Channel,
    workspace: ThreadWorkspace,
    quiet: Quiet,
    parts: TurnInput,
) -> Turn:
    """The agent's input: the decisions or the answer that resume a paused run, or the
    request's messages with their uploads saved into the thread's workspace."""
    if request.resumed is not None:
        sender = request.items[-1].message.sender if request.items else system_sender()
        return Turn(
            text="",
            sender=sender,
            resume_decisions=request.resumed.decisions,
            scheduler=parts.tools.scheduler_for(request),
            handoff=parts.tools.handoff_for(request, quiet),
        )
    if request.answered is not None:
        sender = request.items[-1].message.sender if request.items else system_sender()
        return Turn(
            text=request.answer or "",
            sender=sender,
            resume_answer=request.answer or "",
            scheduler=parts.tools.scheduler_for(request),
            handoff=parts.tools.handoff_for(request, quiet),
        )
    messages = [item.message for item in request.items]
    limit = parts.max_upload_bytes
    uploads, notes = await save_uploads(channel, messages, workspace, limit)
    text = "\n\n".join(m.text for m in messages if m.text.strip())
    return Turn(
        text=text,
        sender=messages[-1].sender,
        uploads=uploads,
        notes=notes,
        scheduler=parts.tools.scheduler_for(request),
        handoff=parts.tools.handoff_for(request, quiet),
        chat_context=render_context(request.context),
    )


def asker_of(request: TurnRequest) -> str:
    """Whose turn this is: the user a paused run asked, else the last message's sender."""
    if request.resumed is not None:
        return request.resumed.asker_id
    if request.answered is not None:
        return request.answered.asked_user_id
    return request.items[-1].message.sender.id if request.items else ""


def correlation_for(request: TurnRequest, thread_id: str) -> str:
    """What a turn with no message of its own is keyed by: a resumed run by its run (each
    resumption answers once), anything else by its thread."""
    if request.resumed is not None:
        return f"approval-{request.resumed.run_id}"
    return thread_id


def system_sender() -> Sender:
    return Sender(id="", display_name="")


def placeholder_tag(request: TurnRequest) -> str:
    """A re-run after a crash keeps its turn's correlation id but gets a placeholder of its
    own: the interrupted turn's placeholder is recovery's to finish ("the answer follows
    below"), and on some platforms a finished one cannot be edited again (design §11)."""
    if any(item.recovered for item in request.items):
        return "placeholder/resumed"
    return "placeholder"
