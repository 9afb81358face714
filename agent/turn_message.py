"""The user message a turn becomes, for either backend (design §6 "Turns", §20).

The text, then bracketed context lines the model reads (attachments saved in the workspace, notes
from the pipeline); in listen mode the group's recent chatter comes first, under a header that
says which message is addressed to the bot.
"""

from __future__ import annotations

from pathlib import Path

from agent.offline_model import ADDRESSED_HEADER
from bot.ports import Turn
from bot.workspace import ThreadWorkspace


def turn_message(text: str, turn: Turn, workspace: ThreadWorkspace) -> str:
    """The user message the model sees: the text, then bracketed context lines; in listen
    mode the group's recent chatter first (``Turn.chat_context``)."""
    body = _message_body(text, turn, workspace)
    if not turn.chat_context:
        return body
    return f"{turn.chat_context}\n\n{ADDRESSED_HEADER}\n{body}"


def _message_body(text: str, turn: Turn, workspace: ThreadWorkspace) -> str:
    lines: list[str] = []
    if turn.uploads:
        lines.append("[The user attached files, saved in this conversation's workspace:]")
        for upload in turn.uploads:
            where = _workspace_path(upload.path, workspace)
            lines.append(f"- {where} (name: {upload.name}, {upload.mime}, {upload.size} bytes)")
    lines.extend(f"[Note: {note}]" for note in turn.notes)
    if not lines:
        return text
    return f"{text}\n\n" + "\n".join(lines) if text else "\n".join(lines)


def _workspace_path(path: Path, workspace: ThreadWorkspace) -> str:
    try:
        return path.resolve().relative_to(workspace.root).as_posix()
    except ValueError:
        return f"uploads/{path.name}"
