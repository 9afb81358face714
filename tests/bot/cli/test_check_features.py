"""``switchboard check`` names approvals and usage settings that would not do what they say."""

from __future__ import annotations

from pathlib import Path

from tests.bot.cli.test_check_findings import MODEL, _summary


def test_approvals_only_admins_may_decide_with_no_admins_is_a_warning(tmp_path: Path) -> None:
    body = MODEL.replace("}}\n", "}, approvals: {tools: {write_file: {deciders: admins}}}}\n")
    status, summary = _summary(tmp_path, body)
    assert status == 0
    assert any(w.startswith("agent.approvals.deciders: ") for w in summary["warnings"])


def test_approvals_with_the_echo_backend_is_a_warning(tmp_path: Path) -> None:
    body = "agent: {backend: echo, approvals: {tools: {write_file: {}}}}\n"
    _, summary = _summary(tmp_path, body)
    assert any("nothing ever waits" in w for w in summary["warnings"])


def test_a_cost_budget_without_prices_and_a_budget_on_a_disabled_channel(tmp_path: Path) -> None:
    body = MODEL + (
        "usage: {budgets: [{scope: user, per: day, cost: 5}, "
        "{scope: chat, per: month, tokens: 1000, channel: slack}]}\n"
    )
    _, summary = _summary(tmp_path, body)
    budgets = [w for w in summary["warnings"] if w.startswith("usage.budgets: ")]
    assert len(budgets) == 2
    assert "usage.prices is empty" in budgets[0]
    assert "'slack'" in budgets[1]


def test_prices_and_admins_make_those_warnings_go_away(tmp_path: Path) -> None:
    body = (
        "agent: {model: {base_url: 'https://llm.example.com/v1', api_key: sk-test-1234},"
        " approvals: {tools: {write_file: {deciders: admins}}}}\n"
        "access: {admins: ['telegram:42']}\n"
        "usage: {prices: {m: {input: 1, output: 2}}, budgets: [{scope: user, per: day, cost: 5}]}\n"
    )
    _, summary = _summary(tmp_path, body)
    assert not [w for w in summary["warnings"] if w.startswith(("usage.", "agent.approvals"))]
