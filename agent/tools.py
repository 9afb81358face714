"""The agent's built-in tools (design §6): clarifications and files in the thread's workspace.

One compiled graph serves every thread, so the tools are built once per ``state_dir`` and find
their thread through the LangGraph ``RunnableConfig`` (``configurable.thread_id``) at call time.
File tools are confined to ``state_dir/threads/<thread_id>/{uploads,outputs}``: a path is
placed in the workspace from its text (``ThreadWorkspace.locate``: ``..`` cannot climb out,
absolute paths must be inside) and opened with ``bot.delivery.files.open_beneath``, which follows no
link, opens without blocking and takes regular files only (a FIFO planted in ``outputs/`` is
an error, not a hang). A refused path comes back as an ``Error: …`` string the model can read,
naming no host path, never as an exception, so one bad path does not end the run (nor, in
``present_files``, the other paths of the call). ``write_file`` writes at most
``WRITE_LIMIT_BYTES``.

``present_files`` returns its accepted paths (relative to the workspace root, e.g.
``outputs/report.md``) as the ``ToolMessage`` artifact. The backend collects those artifacts
from the tool messages of a turn; nothing else marks a file for delivery.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import interrupt

from agent.handoff_tool import build_handoff_tools
from agent.schedule_tools import build_schedule_tools
from bot.delivery.files import FileRefused, read_head, refusal, size_beneath, write_beneath
from bot.workspace import PathEscape, ThreadWorkspace, shown

CLARIFY_TOOL = "ask_clarification"
WRITE_TOOL = "write_file"
READ_TOOL = "read_file"
LIST_TOOL = "list_files"
PRESENT_TOOL = "present_files"

READ_LIMIT_BYTES = 100_000
WRITE_LIMIT_BYTES = 10 * 1024 * 1024
"""The most one ``write_file`` call may write (its content, UTF-8 encoded)."""
LIST_LIMIT = 200
_WORKSPACE_DIRS = (("uploads",), ("outputs",))

_Operation = Callable[[], str]
Parts = tuple[str, ...]


class ToolRefusal(Exception):
    """A request the tool turns into an ``Error: …`` answer for the model."""


def workspace_for(state_dir: Path, config: RunnableConfig) -> ThreadWorkspace:
    """The calling thread's workspace, created on first use."""
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if thread_id is None:
        raise ToolRefusal("no conversation thread is attached to this run")
    try:
        workspace = ThreadWorkspace.for_thread(state_dir, str(thread_id))
    except PathEscape as exc:
        raise ToolRefusal(str(exc)) from exc
    workspace.create()
    return workspace


def resolve_path(workspace: ThreadWorkspace, path: str) -> Parts:
    """Place a model-supplied path: ``uploads/…`` and ``outputs/…`` from the workspace root,
    anything else relative to ``outputs/``; the folder names below the root. Escapes
    (``..``, outside absolutes) and NUL bytes raise ``ToolRefusal``."""
    text = path.strip()
    if not text:
        raise ToolRefusal("the path is empty")
    candidate = Path(text)
    from_root = not candidate.is_absolute() and candidate.parts[:1] in _WORKSPACE_DIRS
    try:
        return workspace.locate(text, base=workspace.root if from_root else None)
    except PathEscape as exc:
        raise ToolRefusal(str(exc)) from exc


# --------------------------------------------------------------------------- operations


def write_text(workspace: ThreadWorkspace, path: str, content: str) -> str:
    parts = resolve_path(workspace, path)
    if parts[:1] != ("outputs",) or len(parts) < 2:
        raise ToolRefusal(f"{shown(path)} is not inside outputs/; files can only be written there")
    data = content.encode("utf-8")
    if len(data) > WRITE_LIMIT_BYTES:
        raise ToolRefusal(f"the content is {len(data)} bytes; at most {WRITE_LIMIT_BYTES} fit")
    try:
        write_beneath(workspace.root, parts, data)
    except FileRefused as exc:
        raise ToolRefusal(f"{shown(path)} {exc.reason}") from None
    return f"Wrote {'/'.join(parts)} ({len(data)} bytes)."


def read_text(workspace: ThreadWorkspace, path: str) -> str:
    parts = resolve_path(workspace, path)
    if parts[:1] not in (("uploads",), ("outputs",)) or len(parts) < 2:
        raise ToolRefusal(f"{shown(path)} is not inside uploads/ or outputs/")
    data, size = _read_head(workspace, path, parts)
    if b"\x00" in data:
        return f"{'/'.join(parts)} is a binary file ({size} bytes); not shown."
    text = data.decode("utf-8", errors="replace")
    if size > READ_LIMIT_BYTES:
        text += f"\n\n[read_file: truncated, showing the first {READ_LIMIT_BYTES} of {size} bytes]"
    return text


def _read_head(workspace: ThreadWorkspace, path: str, parts: Parts) -> tuple[bytes, int]:
    try:
        return read_head(workspace.root, parts, READ_LIMIT_BYTES)
    except FileRefused as exc:
        raise ToolRefusal(f"{shown(path)} {exc.reason}") from None


def list_workspace(workspace: ThreadWorkspace) -> str:
    """Regular files only: links (in or out) and special files are not listed."""
    entries: list[str] = []
    for top in (workspace.uploads, workspace.outputs):
        for folder, dirs, files in os.walk(top, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                try:
                    info = Path(folder, name).lstat()
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    relative = Path(folder, name).relative_to(workspace.root).as_posix()
                    entries.append(f"{relative} ({info.st_size} bytes)")
    if not entries:
        return "The workspace is empty: no uploads and no outputs yet."
    shown_entries = entries[:LIST_LIMIT]
    if len(entries) > LIST_LIMIT:
        shown_entries.append(f"… and {len(entries) - LIST_LIMIT} more")
    return "\n".join(shown_entries)


def _presentable(workspace: ThreadWorkspace, path: str) -> str:
    parts = resolve_path(workspace, path)
    if parts[:1] != ("outputs",) or len(parts) < 2:
        raise ToolRefusal("only files inside outputs/ can be presented")
    try:
        size_beneath(workspace.root, parts)
    except FileRefused as exc:
        raise ToolRefusal(exc.reason) from None
    return "/".join(parts)


def present(workspace: ThreadWorkspace, paths: list[str]) -> tuple[str, list[str]]:
    """Accept existing regular files under ``outputs/``; say why the others were refused."""
    accepted: list[str] = []
    refused: list[str] = []
    for path in paths:
        try:
            name = _presentable(workspace, path)
        except ToolRefusal as exc:
            refused.append(f"{shown(path)}: {exc}")
            continue
        if name not in accepted:
            accepted.append(name)
    lines = []
    if accepted:
        lines.append("Presented to the user: " + ", ".join(accepted) + ".")
    if refused:
        lines.append("Error: not presented: " + "; ".join(refused) + ".")
    return "\n".join(lines) or "Error: no paths were given.", accepted


# --------------------------------------------------------------------------- tools


def build_tools(state_dir: Path) -> list[BaseTool]:
    """The built-in tools for threads whose workspaces live under ``state_dir``."""

    def ask_clarification(question: str, options: list[str] | None = None) -> str:
        answer = interrupt({"question": question, "options": [str(o) for o in options or []]})
        return f"The user answered: {answer}"

    def write_file(path: str, content: str, config: RunnableConfig) -> str:
        return _guarded(lambda: write_text(workspace_for(state_dir, config), path, content))

    def read_file(path: str, config: RunnableConfig) -> str:
        return _guarded(lambda: read_text(workspace_for(state_dir, config), path))

    def list_files(config: RunnableConfig) -> str:
        return _guarded(lambda: list_workspace(workspace_for(state_dir, config)))

    def present_files(paths: list[str], config: RunnableConfig) -> tuple[str, list[str]]:
        try:
            return present(workspace_for(state_dir, config), paths)
        except ToolRefusal as exc:
            return f"Error: {exc}", []
        except OSError as exc:
            return f"Error: {refusal(exc).reason}", []

    return [
        StructuredTool.from_function(ask_clarification, name=CLARIFY_TOOL, description=_ASK),
        StructuredTool.from_function(write_file, name=WRITE_TOOL, description=_WRITE),
        StructuredTool.from_function(read_file, name=READ_TOOL, description=_READ),
        StructuredTool.from_function(list_files, name=LIST_TOOL, description=_LIST),
        StructuredTool.from_function(
            present_files,
            name=PRESENT_TOOL,
            description=_PRESENT,
            response_format="content_and_artifact",
        ),
        *build_schedule_tools(),
        *build_handoff_tools(),
    ]


def _guarded(operation: _Operation) -> str:
    """The operation's answer, or ``Error: …`` (an ``OSError`` by its reason: no host path)."""
    try:
        return operation()
    except ToolRefusal as exc:
        return f"Error: {exc}"
    except OSError as exc:
        return f"Error: {refusal(exc).reason}"


_ASK = (
    "Ask the user a question when you cannot proceed without their input. The run pauses "
    "until they answer; give short `options` when the answer is one of a few choices."
)
_WRITE = (
    "Write a UTF-8 text file into this conversation's outputs/ folder (relative paths are "
    "inside outputs/; subfolders are created). Overwrites an existing file."
)
_READ = (
    f"Read a text file from uploads/ (files the user sent) or outputs/. Returns at most "
    f"{READ_LIMIT_BYTES} bytes and says when the file was truncated."
)
_LIST = "List the files in this conversation's uploads/ and outputs/ folders with their sizes."
_PRESENT = (
    "Send files from outputs/ to the user in the chat, after your reply. Only existing files "
    "inside outputs/ can be presented."
)
