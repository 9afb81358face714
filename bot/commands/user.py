"""User commands: /help /new /stop /status /whoami."""

from __future__ import annotations

from bot.commands.markdown import code
from bot.commands.registry import Command, CommandCall, CommandRegistry


async def _help(call: CommandCall, registry: CommandRegistry) -> str:
    lines = [f"`{usage}` — {summary}" for usage, summary in registry.listing(call.role)]
    return "**Commands**\n" + "\n".join(lines) + "\n\nAnything else is a message for the agent."


async def _new(call: CommandCall) -> str:
    """A fresh thread; work still pending for the old one was stopped, and said so."""
    was_running, cleared = call.stopped
    conversation = await call.env.sessions.new_thread(call.key)
    reply = f"Started a new conversation (thread {code(conversation.thread_id)})."
    if was_running or cleared:
        reply += " " + _stopped_summary(was_running, cleared)
    return reply


def _stopped_summary(was_running: bool, cleared: int) -> str:  # noqa: FBT001
    parts = ["Stopped the running reply."] if was_running else []
    if cleared:
        parts.append(f"Dropped {cleared} queued message{'s' if cleared != 1 else ''}.")
    return " ".join(parts)


async def _stop(call: CommandCall) -> str:
    was_running, cleared = await call.env.stop_conversation(call.key)
    if not was_running and not cleared:
        return "Nothing is running here."
    return _stopped_summary(was_running, cleared)


async def _status(call: CommandCall) -> str:
    env = call.env
    conversation = await env.store.conversations.active(call.key)
    lane = env.lanes.status(call.key)
    pending = await env.store.clarifications.pending_for_key(call.key)
    thread = code(conversation.thread_id) if conversation else "none yet"
    state = "running" if lane.running else "idle"
    lines = [
        f"Conversation: {code(call.key.describe())}",
        f"Thread: {thread}",
        f"State: {state}, {lane.queued} queued",
        f"Agent: {env.agent_description}",
    ]
    if pending:
        lines.append(f"Waiting for an answer to: {pending[0].question}")
    if env.hub.is_paused(call.message.channel):
        lines.append("This channel is paused by an admin.")
    return "\n".join(lines)


async def _whoami(call: CommandCall) -> str:
    message = call.message
    return (
        f"Channel: {code(message.channel)}\nUser id: {code(message.sender.id)}\n"
        f"Role: {call.role}\nAdmin id form: {code(message.user_ref)}"
    )


def register_user_commands(registry: CommandRegistry) -> None:
    async def help_handler(call: CommandCall) -> str:
        return await _help(call, registry)

    async def start(call: CommandCall) -> str:
        greeting = "Hi! Send me a message and I'll pass it to the agent.\n\n"
        return greeting + await _help(call, registry)

    for name, usage, summary, handler in (
        ("help", "/help", "list the commands you can use", help_handler),
        ("start", "/start", "say hello and list the commands (sent by Telegram clients)", start),
        ("stop", "/stop", "stop the running reply and drop queued messages", _stop),
        ("status", "/status", "show this conversation's thread and state", _status),
        ("whoami", "/whoami", "show your channel, user id and role", _whoami),
    ):
        registry.add(Command(name=name, usage=usage, summary=summary, handler=handler))
    registry.add(
        Command(
            name="new",
            usage="/new",
            summary="start a fresh conversation (the old one is kept)",
            handler=_new,
            slow=True,
            stops_conversation=True,
        )
    )
