"""Which tools wait for decisions: ``SWITCHBOARD_APPROVAL_TOOLS`` for ``make_graph`` (what
``langgraph dev`` serves), and a gated name the agent has no tool of."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agent.approval_tools import APPROVAL_TOOLS_ENV, approval_tools_from_env
from agent.embedded import EmbeddedBackend
from agent.graph import make_graph
from bot.approvals.config import ToolApproval
from tests.agent.support import model_settings

GATE_NODE = "HumanInTheLoopMiddleware.after_model"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", {}),
        ("write_file", {"write_file": ("approve", "edit", "reject")}),
        (
            " write_file , send_email,",
            {
                "write_file": ("approve", "edit", "reject"),
                "send_email": ("approve", "edit", "reject"),
            },
        ),
        ('{"write_file": ["reject", "approve", "reject"]}', {"write_file": ("reject", "approve")}),
    ],
)
def test_the_environment_names_the_gated_tools(value: str, expected: dict[str, object]) -> None:
    assert dict(approval_tools_from_env({APPROVAL_TOOLS_ENV: value})) == expected


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{write_file", "is not valid JSON"),
        ('{"write_file": []}', "'write_file' needs a non-empty list of decisions"),
        ('{"write_file": ["respond"]}', "'write_file' has unknown decisions ['respond']"),
        ('{"write_file": "approve"}', "'write_file' needs a non-empty list of decisions"),
    ],
)
def test_a_malformed_value_is_refused_naming_the_problem(value: str, problem: str) -> None:
    with pytest.raises(ValueError, match="SWITCHBOARD_APPROVAL_TOOLS") as caught:
        approval_tools_from_env({APPROVAL_TOOLS_ENV: value})

    assert problem in str(caught.value)


def test_a_value_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(TypeError, match="must be a JSON object"):
        approval_tools_from_env({APPROVAL_TOOLS_ENV: '["write_file"]'})


def test_make_graph_puts_the_middleware_in_front_of_the_tools_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SWITCHBOARD_STATE_DIR", str(tmp_path))
    monkeypatch.delenv(APPROVAL_TOOLS_ENV, raising=False)
    plain = make_graph()
    monkeypatch.setenv(APPROVAL_TOOLS_ENV, "write_file")
    gated = make_graph()

    assert GATE_NODE not in plain.nodes
    assert GATE_NODE in gated.nodes


async def test_gating_a_tool_the_agent_does_not_have_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gated = {"write_fiel": ToolApproval()}
    settings = model_settings(tmp_path, "http://127.0.0.1:9/v1", gated=gated)

    with caplog.at_level(logging.WARNING, logger="agent.graph"):
        async with EmbeddedBackend(settings):
            pass

    assert "tools the agent does not have: ['write_fiel']" in caplog.text
