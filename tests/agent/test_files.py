"""File tools through the whole graph: what the model writes is what gets presented (design §8)."""

from __future__ import annotations

from pathlib import Path

from agent.embedded import EmbeddedBackend
from bot.ports import PresentedFile
from bot.workspace import ThreadWorkspace
from tests.agent.support import collect, final, tool_results, turn
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall

CONTENT = "# Report\n\nNumbers: 1, 2, 3 — ünïcödé\n"


def _write(path: str, content: str = CONTENT, call_id: str = "") -> ToolCall:
    return ToolCall(name="write_file", arguments={"path": path, "content": content}, id=call_id)


def _present(*paths: str, call_id: str = "call_present") -> ToolCall:
    return ToolCall(name="present_files", arguments={"paths": list(paths)}, id=call_id)


async def test_written_and_presented_file_is_in_the_final_answer(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    fake_model.script(
        Reply(tool_calls=(_write("report.md"),)),
        Reply(tool_calls=(_present("report.md"),)),
        Reply(text="Here is your report."),
    )
    thread = await backend.create_thread()

    answer = final(await collect(backend.run(thread, turn("write a report"))))

    outputs = ThreadWorkspace.for_thread(state_dir, thread).outputs
    assert answer.text == "Here is your report."
    assert answer.files == (PresentedFile(path=outputs / "report.md", name="report.md"),)
    assert answer.files[0].path.read_bytes() == CONTENT.encode()


async def test_files_are_deduplicated_in_presentation_order(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer
) -> None:
    fake_model.script(
        Reply(tool_calls=(_write("b.txt", call_id="w1"), _write("sub/a.txt", call_id="w2"))),
        Reply(tool_calls=(_present("b.txt", "outputs/sub/a.txt", "b.txt"),)),
        Reply(tool_calls=(_present("sub/a.txt", call_id="again"),)),
        Reply(text="Done."),
    )
    thread = await backend.create_thread()

    answer = final(await collect(backend.run(thread, turn("two files"))))

    assert [f.name for f in answer.files] == ["b.txt", "a.txt"]
    assert [f.path.parent.name for f in answer.files] == ["outputs", "sub"]


async def test_presenting_missing_or_outside_files_is_refused(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    thread = await backend.create_thread()
    workspace = ThreadWorkspace.for_thread(state_dir, thread)
    workspace.create()
    (workspace.uploads / "in.txt").write_text("uploaded")
    fake_model.script(
        Reply(tool_calls=(_present("missing.txt", "uploads/in.txt", "../../agent.db"),)),
        Reply(text="Sorry."),
    )

    answer = final(await collect(backend.run(thread, turn("send files"))))

    assert answer.files == ()
    result = tool_results(fake_model.requests[1])["call_present"]
    assert result.startswith("Error: not presented:")
    assert "'missing.txt': does not exist" in result
    assert "'uploads/in.txt': only files inside outputs/ can be presented" in result
    assert "'../../agent.db'" in result
    assert "outside this conversation's workspace" in result


async def test_path_escapes_are_refused_with_a_readable_error(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    thread = await backend.create_thread()
    outputs = ThreadWorkspace.for_thread(state_dir, thread).outputs
    outputs.mkdir(parents=True)
    (outputs / "link.txt").symlink_to(secret)
    fake_model.script(
        Reply(
            tool_calls=(
                _write("../../escape.txt", call_id="c1"),
                ToolCall(name="read_file", arguments={"path": "/etc/passwd"}, id="c2"),
                ToolCall(name="read_file", arguments={"path": "link.txt"}, id="c3"),
                _write("link.txt", "overwritten", call_id="c4"),
                _present("link.txt", call_id="c5"),
            )
        ),
        Reply(text="Refused."),
    )

    answer = final(await collect(backend.run(thread, turn("try to escape"))))

    results = tool_results(fake_model.requests[1])
    assert all(text.startswith("Error:") for text in results.values()), results
    escapes = [results[call_id] for call_id in ("c1", "c2")]
    assert all("outside this conversation's workspace" in text for text in escapes), results
    links = [results[call_id] for call_id in ("c3", "c4", "c5")]
    assert all("is a symbolic link" in text for text in links), results
    assert "TOP SECRET" not in str(fake_model.requests[1].messages)
    assert secret.read_text() == "TOP SECRET"
    assert not (outputs.parent.parent / "escape.txt").exists()
    assert answer.files == ()


async def test_read_file_returns_an_upload_to_the_model(
    backend: EmbeddedBackend, fake_model: FakeOpenAIServer, state_dir: Path
) -> None:
    thread = await backend.create_thread()
    workspace = ThreadWorkspace.for_thread(state_dir, thread)
    workspace.create()
    (workspace.uploads / "notes.txt").write_text("meeting at noon")
    read = ToolCall(name="read_file", arguments={"path": "uploads/notes.txt"}, id="c_read")
    fake_model.script(Reply(tool_calls=(read,)), Reply(text="Noon."))

    await collect(backend.run(thread, turn("when is the meeting?")))

    assert tool_results(fake_model.requests[1]) == {"c_read": "meeting at noon"}
