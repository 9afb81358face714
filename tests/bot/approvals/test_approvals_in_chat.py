"""Approvals in chat through the whole kernel (design §24): a paused run's requests, each decided
once by someone allowed, by its own id, resuming the run once with the decisions in order."""

from __future__ import annotations

import re
from pathlib import Path

from bot.messages import ButtonPress, InboundMessage, OutboundText, TextEdit, utc_now
from bot.ports.approvals import ApprovalState, Decided, approvals_of
from tests.bot.harness import make_settings, routed, running
from tests.fakes.agent import FakeAgent
from tests.fakes.channel import FakeChannel, Sent, dm, group

WRITE = 'approve: write_file {"path": "a.txt", "content": "hello"}'
TWO = 'approve: write_file {"path": "a.txt"}; send_email {"to": "bob@example.com"}'


def _request(sent: Sent) -> tuple[str, dict[str, str]]:
    """The approval id on a request message, and its buttons' payloads by decision."""
    assert isinstance(sent.delivery, OutboundText)
    match = re.search(r"ID `([0-9a-f]+)`", sent.delivery.text)
    assert match is not None, sent.delivery.text
    payloads = {b.payload.rsplit("/", 1)[1]: b.payload for b in sent.delivery.buttons}
    return match.group(1), payloads


def _press(
    payload: str, message_id: str, user: str = "alice", *, in_group: bool = False
) -> InboundMessage:
    press = ButtonPress(payload=payload, message_id=None)
    if in_group:
        return group("", message_id=message_id, user=user, button=press)
    return dm("", message_id=message_id, user=user, button=press)


async def test_approve_resumes_the_run_once_and_the_request_shows_who_decided(
    tmp_path: Path,
) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm(WRITE, message_id="1"))
        request = await channel.wait_text("Approval needed")
        assert "write_file" in request.text
        assert "a.txt" in request.text
        approval_id, payloads = _request(request)
        assert set(payloads) == {"approve", "edit", "reject"}
        await channel.inject(_press(payloads["approve"], "p1"))
        await channel.wait_text("decided: approve")
        edited = await channel.wait_for(
            lambda s: isinstance(s.delivery, TextEdit) and "Approved" in s.text
        )
        assert "Alice" in edited.text
        assert approval_id in edited.text
        await channel.inject(_press(payloads["approve"], "p2"))
        await channel.wait_text("already approved")
    resumed = [run for run in agent.runs if run.turn.resume_decisions is not None]
    assert len(resumed) == 1
    assert resumed[0].thread_id == agent.runs[0].thread_id


async def test_a_press_by_someone_not_allowed_changes_nothing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await channel.inject(group(WRITE, message_id="1", mentions_bot=True))
        _, payloads = _request(await channel.wait_text("Approval needed"))
        press = _press(payloads["approve"], "p1", user="mallory", in_group=True)
        await channel.inject(press)
        refusal = await channel.wait_text("not allowed")
        assert isinstance(refusal.delivery, OutboundText)
        assert refusal.delivery.private_to == "mallory"  # shown to the presser alone
        await routed(daemon.kernel, 2)
        assert not [run for run in agent.runs if run.turn.resume_decisions is not None]
        await channel.inject(_press(payloads["reject"], "p2", in_group=True))
        await channel.wait_text("decided: reject")


async def test_two_requests_each_decided_by_their_own_id(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm(TWO, message_id="1"))
        first_id, _ = _request(await channel.wait_text("(1 of 2)"))
        second_id, second = _request(await channel.wait_text("(2 of 2)"))
        await channel.inject(_press(second["reject"], "p1"))
        await channel.wait_for(lambda s: isinstance(s.delivery, TextEdit) and second_id in s.text)
        assert not [run for run in agent.runs if run.turn.resume_decisions is not None]
        await channel.inject(dm(f"/approve {first_id}", message_id="2"))
        resumed = await channel.wait_text("decided: ")
    assert resumed.text.endswith("decided: approve, reject")


async def test_typed_reject_and_edit_carry_the_reason_and_the_arguments(tmp_path: Path) -> None:
    channel, agent = FakeChannel(), FakeAgent()
    async with running(make_settings(tmp_path), [channel], agent):
        await channel.inject(dm(WRITE, message_id="1"))
        first, payloads = _request(await channel.wait_text("Approval needed"))
        await channel.inject(_press(payloads["edit"], "p1"))
        template = await channel.wait_text("To run")
        assert '"path": "a.txt"' in template.text
        await channel.inject(dm(f"/edit {first} not json", message_id="2"))
        await channel.wait_text("not valid JSON")
        await channel.inject(dm(f'/edit {first} {{"path": "b.txt"}}', message_id="3"))
        await channel.wait_text('decided: edit({"path": "b.txt"})')
        await channel.inject(dm(WRITE.replace("a.txt", "c.txt"), message_id="4"))
        second, _ = _request(await channel.wait_text("c.txt"))
        await channel.inject(dm(f"/reject {second} wrong file", message_id="5"))
        await channel.wait_text("decided: reject(wrong file)")


async def test_a_request_waits_across_a_restart(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()):
        await channel.inject(dm(WRITE, message_id="1"))
        _, payloads = _request(await channel.wait_text("Approval needed"))
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent):
        await channel.inject(_press(payloads["approve"], "p1"))
        await channel.wait_text("decided: approve")
    assert len(agent.runs) == 1


async def test_an_expired_request_is_rejected_and_the_chat_told(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, agent={"approvals": {"ttl_s": 0.2}})
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent):
        await channel.inject(dm(WRITE, message_id="1"))
        await channel.wait_text("Approval needed")
        await channel.wait_text("in time", within=10.0)
        resumed = await channel.wait_text("decided: reject(", within=10.0)
    assert "not run" in resumed.text


async def test_a_run_claimed_by_a_process_that_died_is_resumed_once_after_a_restart(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path)
    channel = FakeChannel()
    async with running(settings, [channel], FakeAgent()) as daemon:
        await channel.inject(dm(WRITE, message_id="1"))
        approval_id, _ = _request(await channel.wait_text("Approval needed"))
        store = approvals_of(daemon.kernel.store)
        assert store is not None
        decided = Decided(state=ApprovalState.APPROVED, by="cli:root", by_name="root", at=utc_now())
        assert await store.decide(approval_id, decided)
        found = await store.get(approval_id)
        assert found is not None
        # A process claims the run, then dies before its resumed turn ends.
        assert await store.claim_run(found.run_id, utc_now())  # after this process started
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent):
        await channel.wait_text("decided: approve", within=10.0)
    channel, agent = FakeChannel(), FakeAgent()
    async with running(settings, [channel], agent) as daemon:
        await routed(daemon.kernel, 0)
        store = approvals_of(daemon.kernel.store)
        assert store is not None
        run = await store.run(found.run_id)
        assert run is not None
        assert run[0].finished_at is not None  # ended: never resumed again
    assert agent.runs == []
