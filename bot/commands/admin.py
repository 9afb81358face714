"""Admin commands (design §9). The registry refuses non-admins and audits every call; the
actions themselves are the CLI's and the console's (``bot.operator.actions``), loaded by the
first admin command that changes a user (a daemon whose admins never do keeps them out)."""

from __future__ import annotations

from bot.commands.markdown import code
from bot.commands.registry import Command, CommandCall, CommandRegistry
from bot.hub import ALL_CHANNELS
from bot.messages import utc_now
from bot.records import OutboxState, UserStatus
from bot.registry import IMPORT_PATHS, EdgeKind

KNOWN_CHANNELS = frozenset(IMPORT_PATHS[EdgeKind.CHANNEL])


def _user_arg(call: CommandCall) -> tuple[str, str] | None:
    """``<user>`` is a user id on this channel, or ``<channel>:<user id>``."""
    if len(call.args) != 1:
        return None
    channel, sep, user = call.args[0].partition(":")
    if sep and user and (channel in KNOWN_CHANNELS or channel in call.env.hub.names()):
        return channel, user
    return call.message.channel, call.args[0]


async def _admin(call: CommandCall) -> str:
    if call.args[:1] != ("status",):
        return "Usage: `/admin status` (`/help` lists the rest)"
    env = call.env
    lines = ["**Channels**"]
    for name in env.hub.names():
        state = env.hub.state(name)
        reason = env.hub.reason(name)
        paused = " (paused)" if env.hub.is_paused(name) else ""
        lines.append(f"- {name}: {state}{paused}{f' — {reason}' if reason else ''}")
    counts = await env.store.outbox.counts()
    lines += [
        f"Inbound queue: {env.bus.depth}/{env.bus.capacity}",
        f"Active runs: {env.lanes.active_runs}, queued in conversations: {env.lanes.queued}",
        f"Outbox: {counts[OutboxState.PENDING]} pending, {counts[OutboxState.DEAD]} dead",
        f"Conversations: {await env.store.conversations.count()}",
        f"Agent: {env.agent_description}",
    ]
    return "\n".join(lines)


async def _set_user(call: CommandCall, status: UserStatus) -> str:
    verb = "allow" if status is UserStatus.APPROVED else "deny"
    usage = f"Usage: `/{verb} <user id>` or `/{verb} <channel>:<user id>`"
    target = _user_arg(call)
    if target is None:
        return usage
    channel, user = target
    from bot.operator.actions import OperationRefused, set_user_status  # noqa: PLC0415 - see above
    from bot.operator.labels import status_change  # noqa: PLC0415

    try:
        await set_user_status(call.env.store, channel, user, status, call.actor, audit=False)
    except OperationRefused:
        return usage
    return f"{code(f'{channel}:{user}')} {status_change(status)}."


async def _allow(call: CommandCall) -> str:
    return await _set_user(call, UserStatus.APPROVED)


async def _deny(call: CommandCall) -> str:
    return await _set_user(call, UserStatus.DENIED)


async def _pairing(call: CommandCall) -> str:
    requests = await call.env.store.access.pending_pairings(utc_now())
    if not requests:
        return "No pending access requests."
    lines = ["**Pending access requests**"]
    for request in requests:
        who = request.display_name or request.user_id
        lines.append(
            f"- {code(request.code)} {who} ({code(f'{request.channel}:{request.user_id}')}), "
            f"expires {request.expires_at:%H:%M} UTC"
        )
    lines.append("Approve with `/approve <code>`.")
    return "\n".join(lines)


async def approve_pairing(call: CommandCall) -> str:
    """``/approve <code>``: an access request (design §10). The approvals room's ``/approve``
    takes a tool call's id first and hands anything else from an admin here (design §24)."""
    if len(call.args) != 1:
        return "Usage: `/approve <code>`"
    from bot.operator.actions import OperationRefused, approve_pairing  # noqa: PLC0415

    try:
        request = await approve_pairing(call.env.store, call.args[0], call.actor, audit=False)
    except OperationRefused:
        return f"No pending request with code {code(call.args[0])} (it may have expired)."
    who = request.display_name or request.user_id
    return f"Approved {who} ({code(f'{request.channel}:{request.user_id}')})."


async def _pause_switch(call: CommandCall, *, paused: bool) -> str:
    target = call.args[0] if call.args else ALL_CHANNELS
    if target != ALL_CHANNELS and target not in call.env.hub.names():
        return f"Unknown channel {code(target)}; running: {', '.join(call.env.hub.names())}."
    await call.env.hub.set_paused(target, paused=paused)
    scope = "all channels" if target == ALL_CHANNELS else target
    if paused:
        return f"Paused {scope}: new messages get no agent turn until `/resume`."
    return f"Resumed {scope}."


async def _pause(call: CommandCall) -> str:
    return await _pause_switch(call, paused=True)


async def _resume(call: CommandCall) -> str:
    return await _pause_switch(call, paused=False)


async def _reload(call: CommandCall) -> str:
    return await call.env.reload(call.actor)


def register_admin_commands(registry: CommandRegistry) -> None:
    for name, usage, summary, handler in (
        ("admin", "/admin status", "channels, queues, runs and outbox", _admin),
        ("allow", "/allow <user>", "let a user talk to the bot", _allow),
        ("deny", "/deny <user>", "block a user", _deny),
        ("pairing", "/pairing", "list pending access requests", _pairing),
        ("approve", "/approve <code>", "approve an access request", approve_pairing),
        ("pause", "/pause [channel]", "stop taking new turns (all channels by default)", _pause),
        ("resume", "/resume [channel]", "take new turns again", _resume),
        ("reload", "/reload", "re-read the configuration file", _reload),
    ):
        slow = name == "reload"  # re-reads the file and restarts channels
        if registry.get(name) is not None:
            continue  # a feature's command that serves this one too (``/approve``)
        registry.add(
            Command(name=name, usage=usage, summary=summary, handler=handler, admin=True, slow=slow)
        )
