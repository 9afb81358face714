"""The built-in file tools on their own: confinement, limits and error strings (design §6)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from agent.tools import READ_LIMIT_BYTES, WRITE_LIMIT_BYTES, build_tools
from bot.workspace import ThreadWorkspace

THREAD = "thread-1"


@pytest.fixture
def tools(state_dir: Path) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in build_tools(state_dir)}


@pytest.fixture
def workspace(state_dir: Path) -> ThreadWorkspace:
    workspace = ThreadWorkspace.for_thread(state_dir, THREAD)
    workspace.create()
    return workspace


def _config(thread_id: str = THREAD) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def call(
    tools: dict[str, BaseTool], name: str, config: RunnableConfig | None = None, **args: object
) -> str:
    result = tools[name].invoke(args, config=config or _config())
    assert isinstance(result, str)
    return result


def present(tools: dict[str, BaseTool], *paths: str) -> ToolMessage:
    tool_call = {
        "name": "present_files",
        "args": {"paths": list(paths)},
        "id": "c1",
        "type": "tool_call",
    }
    message = tools["present_files"].invoke(tool_call, config=_config())
    assert isinstance(message, ToolMessage)
    return message


def test_tool_schemas_hide_the_injected_config(tools: dict[str, BaseTool]) -> None:
    assert sorted(tools) == [
        "ask_clarification",
        "cancel_schedule",
        "handoff",
        "list_files",
        "list_schedules",
        "present_files",
        "read_file",
        "schedule_message",
        "write_file",
    ]
    assert set(tools["schedule_message"].args) == {"text", "at", "cron", "timezone", "kind"}
    assert set(tools["cancel_schedule"].args) == {"schedule_id"}
    assert set(tools["handoff"].args) == {"reason"}
    assert set(tools["write_file"].args) == {"path", "content"}
    assert set(tools["present_files"].args) == {"paths"}
    assert set(tools["list_files"].args) == set()
    assert set(tools["ask_clarification"].args) == {"question", "options"}


def test_write_file_lands_in_outputs(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace
) -> None:
    result = call(tools, "write_file", path="deep/er/note.md", content="héllo")

    assert result == "Wrote outputs/deep/er/note.md (6 bytes)."
    assert (workspace.outputs / "deep/er/note.md").read_text() == "héllo"


@pytest.mark.parametrize("path", ["outputs/x.txt", "./x.txt", "sub/../x.txt"])
def test_write_file_path_forms_inside_outputs(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace, path: str
) -> None:
    assert call(tools, "write_file", path=path, content="x") == "Wrote outputs/x.txt (1 bytes)."


def test_write_file_accepts_an_absolute_path_inside_outputs(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace
) -> None:
    target = workspace.outputs / "abs.txt"

    call(tools, "write_file", path=str(target), content="abs")

    assert target.read_text() == "abs"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../../../../x.txt", "outside this conversation's workspace"),
        ("/etc/passwd", "outside this conversation's workspace"),
        ("/var/x.txt", "outside this conversation's workspace"),
        ("uploads/x.txt", "not inside outputs/"),
        ("../x.txt", "not inside outputs/"),
        ("", "the path is empty"),
        (".", "not inside outputs/"),
        ("outputs/sub", "is a directory"),
    ],
)
def test_write_file_refusals(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace, path: str, reason: str
) -> None:
    (workspace.outputs / "sub").mkdir()

    result = call(tools, "write_file", path=path, content="x")

    assert result.startswith("Error: ")
    assert reason in result


def test_write_file_refuses_a_symlink_leading_out(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace.outputs / "escape").symlink_to(outside)

    result = call(tools, "write_file", path="escape/x.txt", content="x")

    assert result == "Error: 'escape/x.txt' is a symbolic link (links are not followed)"
    assert list(outside.iterdir()) == []


def test_read_file_reads_uploads_and_outputs(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace
) -> None:
    (workspace.uploads / "in.txt").write_text("from the user")
    (workspace.outputs / "out.txt").write_text("from the agent")

    assert call(tools, "read_file", path="uploads/in.txt") == "from the user"
    assert call(tools, "read_file", path="out.txt") == "from the agent"
    assert call(tools, "read_file", path="outputs/out.txt") == "from the agent"


def test_read_file_caps_what_it_returns(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace
) -> None:
    (workspace.outputs / "big.txt").write_text("a" * (READ_LIMIT_BYTES + 500))

    result = call(tools, "read_file", path="big.txt")

    assert result.startswith("a" * READ_LIMIT_BYTES + "\n\n")
    assert f"truncated, showing the first {READ_LIMIT_BYTES} of {READ_LIMIT_BYTES + 500}" in result


def test_read_file_does_not_dump_binary(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace
) -> None:
    (workspace.uploads / "img.png").write_bytes(b"\x89PNG\x00\x00\x01")

    assert call(tools, "read_file", path="uploads/img.png") == (
        "uploads/img.png is a binary file (7 bytes); not shown."
    )


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("missing.txt", "does not exist"),
        ("/etc/passwd", "outside this conversation's workspace"),
        ("../../../../../etc/passwd", "outside this conversation's workspace"),
        ("outputs/..", "not inside uploads/ or outputs/"),
    ],
)
def test_read_file_refusals(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace, path: str, reason: str
) -> None:
    result = call(tools, "read_file", path=path)

    assert result.startswith("Error: ")
    assert reason in result


def test_read_file_refuses_a_symlink_leading_out(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    (workspace.uploads / "link.txt").symlink_to(secret)

    result = call(tools, "read_file", path="uploads/link.txt")

    assert result == "Error: 'uploads/link.txt' is a symbolic link (links are not followed)"
    assert "TOP SECRET" not in result


def test_list_files_shows_both_folders_and_skips_links_out(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace, tmp_path: Path
) -> None:
    assert "empty" in call(tools, "list_files")
    (workspace.uploads / "in.csv").write_text("1,2")
    (workspace.outputs / "sub").mkdir()
    (workspace.outputs / "sub" / "out.md").write_text("# hi")
    (tmp_path / "secret.txt").write_text("x")
    (workspace.outputs / "link.txt").symlink_to(tmp_path / "secret.txt")

    assert call(tools, "list_files") == "uploads/in.csv (3 bytes)\noutputs/sub/out.md (4 bytes)"


def test_present_files_returns_accepted_paths_as_the_artifact(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace
) -> None:
    (workspace.outputs / "a.txt").write_text("a")
    (workspace.uploads / "u.txt").write_text("u")

    message = present(tools, "a.txt", "outputs/a.txt", "u.txt", "uploads/u.txt", "/etc/passwd")

    assert message.artifact == ["outputs/a.txt"]
    assert message.content == (
        "Presented to the user: outputs/a.txt.\n"
        "Error: not presented: 'u.txt': does not exist; "
        "'uploads/u.txt': only files inside outputs/ can be presented; "
        "'/etc/passwd': '/etc/passwd' is outside this conversation's workspace."
    )


def test_present_files_refuses_directories_and_empty_lists(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace
) -> None:
    (workspace.outputs / "dir").mkdir()

    assert present(tools, "dir").artifact == []
    assert present(tools).content == "Error: no paths were given."


def test_tools_without_a_thread_answer_with_an_error(tools: dict[str, BaseTool]) -> None:
    assert call(tools, "list_files", config={"configurable": {}}) == (
        "Error: no conversation thread is attached to this run"
    )
    result = call(tools, "list_files", config=_config("../other"))
    assert result.startswith("Error: thread id '../other' is not usable")


def test_threads_have_separate_workspaces(tools: dict[str, BaseTool], state_dir: Path) -> None:
    call(tools, "write_file", config=_config("t-a"), path="x.txt", content="A")

    assert call(tools, "read_file", config=_config("t-b"), path="x.txt").startswith("Error:")
    assert (state_dir.resolve() / "threads" / "t-a" / "outputs" / "x.txt").read_text() == "A"


async def test_schedule_tools_without_a_scheduler_say_schedules_are_off(
    tools: dict[str, BaseTool],
) -> None:
    result = await tools["schedule_message"].ainvoke(
        {"text": "hi", "at": "2030-01-01T09:00"}, config=_config()
    )
    assert result == "Error: schedules are not available in this conversation."


# --------------------------------------------------------------------------- hostile paths


def test_a_fifo_planted_in_outputs_is_refused_not_waited_on(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace
) -> None:
    os.mkfifo(workspace.outputs / "pipe")
    os.mkfifo(workspace.uploads / "pipe")

    written = call(tools, "write_file", path="pipe", content="x")
    read = call(tools, "read_file", path="uploads/pipe")
    presented = present(tools, "pipe")

    assert written == "Error: 'pipe' is not a regular file"
    assert read == "Error: 'uploads/pipe' is not a regular file"
    assert presented.artifact == []
    assert stat.S_ISFIFO((workspace.outputs / "pipe").lstat().st_mode)


def test_nul_bytes_loops_and_long_names_are_plain_errors_without_host_paths(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace, state_dir: Path
) -> None:
    (workspace.outputs / "loop").symlink_to(workspace.outputs / "loop")
    long_name = "n" * 300 + ".txt"
    answers = {
        "nul write": call(tools, "write_file", path="a\x00b.txt", content="x"),
        "nul read": call(tools, "read_file", path="uploads/a\x00b"),
        "loop write": call(tools, "write_file", path="loop/x.txt", content="x"),
        "loop read": call(tools, "read_file", path="loop"),
        "long write": call(tools, "write_file", path=long_name, content="x"),
        "long read": call(tools, "read_file", path=long_name),
    }

    assert all(text.startswith("Error: ") for text in answers.values()), answers
    assert "contains a NUL byte" in answers["nul write"]
    assert "is a symbolic link" in answers["loop read"]
    assert "name that is too long" in answers["long write"]
    host = str(state_dir.resolve())
    assert not any(host in text for text in answers.values()), answers


def test_one_bad_entry_does_not_fail_the_other_presented_files(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace
) -> None:
    (workspace.outputs / "good.txt").write_text("ok")
    (workspace.outputs / "loop").symlink_to(workspace.outputs / "loop")

    message = present(tools, "bad\x00name", "loop", "n" * 300, "good.txt")

    assert message.artifact == ["outputs/good.txt"]
    assert "Presented to the user: outputs/good.txt." in str(message.content)
    assert str(message.content).count("'") >= 6  # each refused path is named


def test_links_inside_the_workspace_are_not_followed_even_when_they_stay_in(
    tools: dict[str, BaseTool], workspace: ThreadWorkspace, tmp_path: Path
) -> None:
    (workspace.outputs / "real.txt").write_text("inside")
    (workspace.outputs / "alias.txt").symlink_to(workspace.outputs / "real.txt")
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace.outputs / "dir").symlink_to(outside)

    read = call(tools, "read_file", path="alias.txt")
    written = call(tools, "write_file", path="dir/new.txt", content="x")
    absolute = call(tools, "read_file", path=str(outside / "x"))

    assert read == "Error: 'alias.txt' is a symbolic link (links are not followed)"
    assert written.startswith("Error: 'dir/new.txt' ")
    assert "outside this conversation's workspace" in absolute
    assert list(outside.iterdir()) == []


def test_write_file_is_bounded(tools: dict[str, BaseTool], workspace: ThreadWorkspace) -> None:
    result = call(tools, "write_file", path="big.txt", content="x" * (WRITE_LIMIT_BYTES + 1))

    assert result.startswith("Error: the content is")
    assert str(WRITE_LIMIT_BYTES) in result
    assert not (workspace.outputs / "big.txt").exists()
