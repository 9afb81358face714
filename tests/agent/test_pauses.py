"""Reading interrupts as pauses and decisions as LangChain's resume values, for the shapes a
graph built with LangChain's human-in-the-loop middleware raises (batched and per call)."""

from __future__ import annotations

import json

import pytest

from agent.pauses import pause_from, pending_approval, resume_value
from bot.ports import ClarificationRequest
from bot.ports.agent import ActionRequest, ApprovalRequest, Decision

BATCHED = {
    "action_requests": [
        {
            "name": "send_email",
            "args": {"to": "ada@example.org", "body": "ünï"},
            "description": "d",
        },
        {"name": "delete_file", "args": {"path": "report.md"}},
    ],
    "review_configs": [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]},
        {"action_name": "delete_file", "allowed_decisions": ["approve", "respond", "reject"]},
    ],
}
PER_CALL = {
    "type": "tool_approval",
    "tool_call_id": "call_1",
    "name": "delete_file",
    "args": {"path": "report.md"},
    "description": "Delete?",
}


def test_a_batched_request_lists_each_action_with_its_chat_decisions() -> None:
    assert pause_from(BATCHED) == ApprovalRequest(
        actions=(
            ActionRequest(
                name="send_email",
                args='{"body": "ünï", "to": "ada@example.org"}',
                description="d",
                allowed=("approve", "edit", "reject"),
            ),
            ActionRequest(
                name="delete_file", args='{"path": "report.md"}', allowed=("approve", "reject")
            ),
        )
    )


def test_a_per_call_request_is_one_action() -> None:
    assert pause_from(PER_CALL) == ApprovalRequest(
        actions=(
            ActionRequest(name="delete_file", args='{"path": "report.md"}', description="Delete?"),
        )
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"question": "Which?", "options": ["a", "b"]},
            ClarificationRequest(question="Which?", options=("a", "b")),
        ),
        ("plain text", ClarificationRequest(question="plain text")),
        ({"action_requests": []}, ClarificationRequest(question="")),
        ({"type": "tool_approval"}, ClarificationRequest(question="")),
    ],
)
def test_any_other_interrupt_is_a_question(value: object, expected: ClarificationRequest) -> None:
    assert pause_from(value) == expected


def test_decisions_become_langchains_in_order_with_the_tool_name_on_edits() -> None:
    pending = pending_approval([("i1", BATCHED)])
    assert pending is not None
    edited = json.dumps({"to": "bob@example.org", "body": "hi"})

    value = resume_value(
        pending, (Decision(type="edit", args=edited), Decision(type="reject", message="keep it"))
    )

    assert value == {
        "decisions": [
            {
                "type": "edit",
                "edited_action": {
                    "name": "send_email",
                    "args": {"to": "bob@example.org", "body": "hi"},
                },
            },
            {"type": "reject", "message": "keep it"},
        ]
    }


def test_a_reject_without_a_reason_sends_none() -> None:
    pending = pending_approval([("i1", PER_CALL)])
    assert pending is not None

    assert resume_value(pending, (Decision(type="reject"),)) == {"i1": {"type": "reject"}}


def test_a_request_among_other_interrupts_is_resumed_by_its_id() -> None:
    delete_only = {
        "action_requests": [{"name": "delete_file", "args": {"path": "report.md"}}],
        "review_configs": [{"action_name": "delete_file", "allowed_decisions": ["approve"]}],
    }
    pending = pending_approval([("q1", {"question": "Which?"}), ("a1", delete_only)])
    assert pending is not None

    value = resume_value(pending, (Decision(type="approve"),))

    assert value == {"a1": {"decisions": [{"type": "approve"}]}}


def test_no_request_pending_when_only_questions_are() -> None:
    assert pending_approval([("q1", {"question": "Which?"})]) is None
    assert pending_approval([]) is None
