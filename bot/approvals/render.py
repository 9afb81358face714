"""How an approval looks in chat (design §24): the tool, its arguments readably (secret-looking
names masked, long values folded), the id every button and typed command carries, and after a
decision who decided what and when.

The text is Markdown, like every message the kernel sends; adapters render it and its buttons
natively (Telegram inline keyboard, Slack Block Kit, Feishu card, DingTalk card or numbered
text). A platform without buttons shows the typed commands instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bot.approvals.config import ApprovalSettings
from bot.commands.markdown import code
from bot.delivery.questions import cut_to
from bot.messages import Button
from bot.ports import ChannelCapabilities, TextUnit
from bot.ports.approvals import Approval, ApprovalState

BUTTON_PREFIX = "a"
MASK = "•••"
LABELS = {"approve": "✅ Approve", "edit": "✏️ Edit", "reject": "❌ Reject"}
MAX_ARGS_SHOWN = 20
DESCRIPTION_CHARS = 500
OUTCOMES = {
    ApprovalState.APPROVED: "✅ Approved",
    ApprovalState.EDITED: "✏️ Approved with changes",
    ApprovalState.REJECTED: "❌ Rejected",
    ApprovalState.EXPIRED: "⌛ Expired (nobody decided in time; the agent was told)",
    ApprovalState.CANCELLED: "⏹ Cancelled (the conversation moved on)",
}


def button_payload(approval_id: str, decision: str) -> str:
    """Short enough for Telegram's 64-byte callback data."""
    return f"{BUTTON_PREFIX}/{approval_id}/{decision}"


def parse_button_payload(payload: str) -> tuple[str, str] | None:
    """``(approval id, decision)`` of an approval button; ``None`` for any other button."""
    parts = payload.split("/")
    if len(parts) != 3 or parts[0] != BUTTON_PREFIX or parts[2] not in LABELS:
        return None
    return parts[1], parts[2]


def loads_args(text: str) -> dict[str, Any]:
    """A JSON object's members (an approval's arguments); anything else is no arguments."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def masked(name: str, settings: ApprovalSettings) -> bool:
    lowered = name.lower()
    return any(word.lower() in lowered for word in settings.mask)


def shown_args(args: Mapping[str, Any], settings: ApprovalSettings) -> dict[str, Any]:
    """The arguments as chat shows them: secret-looking names masked (also inside nested
    objects), long values folded."""
    return {name: _shown(name, value, settings) for name, value in args.items()}


def _shown(name: str, value: Any, settings: ApprovalSettings) -> Any:
    if masked(name, settings):
        return MASK
    if isinstance(value, dict):
        return shown_args(value, settings)
    if isinstance(value, str) and len(value) > settings.fold_chars:
        return f"{value[: settings.fold_chars]}… ({len(value)} characters)"
    return value


def request_text(approval: Approval, count: int, settings: ApprovalSettings) -> str:
    """The request message: tool, description, arguments, and how to decide by typing."""
    head = f"🔐 *Approval needed* to run {code(approval.tool)}"
    if count > 1:
        head += f" ({approval.position + 1} of {count})"
    lines = [head]
    description = approval.description.strip()
    if description and not description.startswith("Tool execution requires approval"):
        lines.append(cut_to(description, DESCRIPTION_CHARS, TextUnit.CHARS))
    lines.append(_args_block(loads_args(approval.args), settings))
    lines.append(_typed_hint(approval))
    return "\n\n".join(line for line in lines if line)


def _args_block(args: Mapping[str, Any], settings: ApprovalSettings) -> str:
    if not args:
        return "_No arguments._"
    shown = shown_args(args, settings)
    rows = []
    for name, value in list(shown.items())[:MAX_ARGS_SHOWN]:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        rows.append(f"• *{_plain(name)}*: {code(_one_line(text))}")
    if len(shown) > MAX_ARGS_SHOWN:
        rows.append(f"• … and {len(shown) - MAX_ARGS_SHOWN} more")
    return "\n".join(rows)


def _typed_hint(approval: Approval) -> str:
    commands = {
        "approve": f"/approve {approval.id}",
        "reject": f"/reject {approval.id} [reason]",
        "edit": f"/edit {approval.id} {{json}}",
    }
    typed = [code(commands[decision]) for decision in approval.allowed if decision in commands]
    return f"ID {code(approval.id)} · or type " + " · ".join(typed)


def buttons(approval: Approval, caps: ChannelCapabilities) -> tuple[Button, ...]:
    if not caps.buttons:
        return ()
    return tuple(
        Button(label=LABELS[decision], payload=button_payload(approval.id, decision))
        for decision in approval.allowed
        if decision in LABELS
    )


def decided_text(approval: Approval, settings: ApprovalSettings) -> str:
    """The request message once decided: what ran (or not), who decided and when."""
    outcome = OUTCOMES.get(approval.state, approval.state.value)
    lines = [f"{outcome} · {code(approval.tool)} · ID {code(approval.id)}"]
    if approval.decided_by_name or approval.decided_by:
        who = _plain(approval.decided_by_name or approval.decided_by or "")
        lines.append(f"by {who} at {when(approval.decided_at)}")
    if approval.state is ApprovalState.EDITED and approval.decided_args:
        lines.append(_args_block(loads_args(approval.decided_args), settings))
    else:
        lines.append(_args_block(loads_args(approval.args), settings))
    if approval.reason:
        lines.append(
            f"Reason: {_plain(cut_to(approval.reason, DESCRIPTION_CHARS, TextUnit.CHARS))}"
        )
    return "\n\n".join(lines)


def edit_template(approval: Approval, settings: ApprovalSettings) -> str:
    """What the Edit button answers: the typed command with the current arguments filled in
    (masked values stay masked: ``•••`` keeps the original)."""
    current = shown_args(loads_args(approval.args), settings)
    for name in [n for n, v in current.items() if isinstance(v, str) and v.endswith("characters)")]:
        current[name] = loads_args(approval.args)[name]  # an edit needs the whole value
    dumped = json.dumps(current, ensure_ascii=False)
    return (
        f"✏️ To run {code(approval.tool)} with other arguments, send:\n\n"
        f"{code(f'/edit {approval.id} {dumped}')}\n\n"
        f"A value left as {MASK} keeps the original."
    )


def when(moment: datetime | None) -> str:
    return "?" if moment is None else f"{moment:%Y-%m-%d %H:%M} UTC"


def _one_line(text: str) -> str:
    return text.replace("\r", "").replace("\n", " ⏎ ")


def _plain(text: str) -> str:
    """Untrusted text inside our Markdown: no formatting characters of its own."""
    return "".join(f"\\{c}" if c in "*_`[]~" else c for c in text)
