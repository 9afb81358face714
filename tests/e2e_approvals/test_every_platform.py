"""Approvals end to end on every platform (design §24): the real adapter in the real daemon
against the platform's fake, the embedded agent on the fake model with ``write_file`` waiting
for a decision; the file it writes in the thread's workspace shows whether, and with what
arguments, it ran."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bot.ports.approvals import ApprovalState
from tests.e2e_approvals.chats import GROUPS, GroupChat, slack_group
from tests.e2e_approvals.support import model_requests, stored, tool_results, write, written
from tests.fakes.openai_server import FakeOpenAIServer, Reply

REASON = "not into the shared folder"


async def _refused(chat: GroupChat) -> None:
    """Bob's refusal: to him alone where the platform can, else in the group."""
    if chat.private_replies:
        await chat.told_privately(chat.bob, "not allowed")
        assert not any("not allowed" in text for text in chat.texts())
    else:
        await chat.shows("not allowed")


@pytest.mark.parametrize("platform", list(GROUPS))
async def test_approve_reject_and_a_press_by_someone_not_allowed(
    tmp_path: Path, platform: str
) -> None:
    """One group conversation: nothing runs before a decision; a press by a member who may
    not decide changes nothing; the asker's Approve runs the call once with its own arguments;
    a typed ``/reject ID reason`` never runs it and the model reads the reason."""
    with FakeOpenAIServer() as model:
        async with GROUPS[platform](tmp_path, model) as chat:
            model.script(Reply(tool_calls=(write("a.txt", "alpha", "call_a"),)))
            await chat.say("please write a.txt", chat.alice)
            asked = await chat.request("a.txt")
            assert "write_file" in asked.text
            assert "alpha" in asked.text
            if chat.has_buttons:
                assert set(asked.buttons) == {"approve", "edit", "reject"}
            else:
                assert f"/approve {asked.id}" in asked.text
            assert written(chat.workspace_root, "a.txt") == []

            await chat.press(asked, "approve", chat.bob)
            await _refused(chat)
            assert (await stored(chat.kernel, asked.id)).state is ApprovalState.PENDING
            assert [request.id for request in chat.requests()] == [asked.id]  # still asks
            assert written(chat.workspace_root, "a.txt") == []
            assert len(model.requests) == 1

            model.script(Reply(text="Saved a.txt for you."))
            await chat.press(asked, "approve", chat.alice)
            await chat.shows("Saved a.txt for you.")
            assert written(chat.workspace_root, "a.txt") == ["alpha"]
            after_approve = (await model_requests(model, 2))[1]

            model.script(Reply(tool_calls=(write("b.txt", "beta", "call_b"),)))
            await chat.say("now write b.txt", chat.alice)
            second = await chat.request("b.txt")
            model.script(Reply(text="Fine, b.txt stays unwritten."))
            await chat.say(f"/reject {second.id} {REASON}", chat.alice)
            await chat.shows("Fine, b.txt stays unwritten.")
            after_reject = (await model_requests(model, 4))[3]
            shown = chat.texts()
    assert "Wrote outputs/a.txt" in tool_results(after_approve)["call_a"]
    assert REASON in tool_results(after_reject)["call_b"]
    assert written(chat.workspace_root, "b.txt") == []
    assert written(chat.workspace_root, "a.txt") == ["alpha"]
    assert len(model.requests) == 4
    assert sum("Saved a.txt for you." in text for text in shown) == 1


async def test_two_requests_each_decided_by_their_own_id_and_an_edit(tmp_path: Path) -> None:
    """On Slack: one reply with two gated calls shows two requests; the second's Reject
    button decides the second only, a typed ``/approve`` with the first's id the first only;
    then Edit's button offers the command filled in, and the edited arguments are what runs."""
    calls = (write("one.txt", "first", "call_1"), write("two.txt", "second", "call_2"))
    with FakeOpenAIServer() as model:
        async with slack_group(tmp_path, model) as chat:
            model.script(Reply(tool_calls=calls))
            await chat.say("write both files", chat.alice)
            first = await chat.request("(1 of 2)")
            second = await chat.request("(2 of 2)")
            await chat.press(second, "reject", chat.alice)
            await chat.shows(f"Rejected · `write_file` · ID `{second.id}`")
            assert (await stored(chat.kernel, first.id)).state is ApprovalState.PENDING
            assert len(model.requests) == 1

            model.script(Reply(text="Wrote one of the two."))
            await chat.say(f"/approve {first.id}", chat.alice)
            await chat.shows("Wrote one of the two.")
            after_both = (await model_requests(model, 2))[1]

            model.script(Reply(tool_calls=(write("three.txt", "as asked", "call_3"),)))
            await chat.say("write three.txt", chat.alice)
            third = await chat.request("three.txt")
            await chat.press(third, "edit", chat.alice)
            await chat.shows("with other arguments")
            (template,) = [text for text in chat.texts() if "with other arguments" in text]
            args = json.loads(re.findall(rf"/edit {third.id} (\{{.*\}})", template)[0])
            model.script(Reply(text="Wrote your version."))
            edited = json.dumps({**args, "content": "as edited"})
            await chat.say(f"/edit {third.id} {edited}", chat.alice)
            await chat.shows("Wrote your version.")
            after_edit = (await model_requests(model, 4))[3]
    assert args == {"path": "three.txt", "content": "as asked"}
    assert (written(chat.workspace_root, "one.txt"), written(chat.workspace_root, "two.txt")) == (
        ["first"],
        [],
    )
    results = tool_results(after_both)
    assert "Wrote outputs/one.txt" in results["call_1"]
    assert "rejected" in results["call_2"]
    assert written(chat.workspace_root, "three.txt") == ["as edited"]
    assert "three.txt" in tool_results(after_edit)["call_3"]
